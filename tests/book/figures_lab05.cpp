// The figures book/lab05_suffix_automaton.md quotes from lab 05's automaton, built against the
// implementation FIGURES_IMPL names (tests/book/CMakeLists.txt builds it three times):
//   solution          transitions read per token, the `1 2 2` clone, and the bench's workload
//                     table and automaton sizes (bench/scaling_workload.h: counts, not timings)
//   redirect_to_root  the mutant's transitions read per token ("Why extend is amortized O(1)")
//   missing_clone     the mutant's `1 2 2` ("Extending by one token")
// Checked by tests/book/check_quoted.py (ctest label `book`).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "oracle.h"
#include "quote.h"
#include "scaling_workload.h"
#include "suffix_automaton.h"

using namespace speclab;
using speclab::book::fmt;
using speclab::book::quote;
using speclab::lab05_testing::V;

namespace {

constexpr const char* kChapter = "book/lab05_suffix_automaton.md";

// Transitions read (next() calls) per token over the test's three streams
// (tests/lab05/test_automaton.cpp): the runs, random over 2 tokens, periodic with period 7.
std::vector<double> reads_per_token() {
  std::vector<double> out;
  for (const V& stream :
       {lab05_testing::runs_stream(20000), lab05_testing::random_stream(5, 20000, 2),
        lab05_testing::periodic_stream(6, 20000, 7)}) {
    SuffixAutomaton sa;
    for (Token t : stream) sa.extend(t);
    out.push_back(static_cast<double>(sa.transition_reads()) / static_cast<double>(stream.size()));
  }
  return out;
}

SuffixAutomaton one_two_two() {
  SuffixAutomaton sa;
  for (Token t : {1, 2, 2}) sa.extend(t);
  return sa;
}

void solution() {
  const std::vector<double> reads = reads_per_token();
  quote(kChapter, "the reference's transitions read per token",
        fmt("(the reference reads %.0f to %.0f per token)",
            *std::min_element(reads.begin(), reads.end()),
            *std::max_element(reads.begin(), reads.end())));
  const SuffixAutomaton sa = one_two_two();
  quote(kChapter, "states of 1 2 2", fmt("That makes %d states", sa.num_states()));
  quote(kChapter, "the clone's first_end",
        fmt("The clone's `first_end` is %lld", static_cast<long long>(sa.longest_match().end)));

  // bench_drafter_scaling's full run: 1k, 8k, 32k and 128k.
  const bench::Sizes z = bench::scaling_sizes(false);
  const double mib = 1024.0 * 1024.0;
  const double small =
      static_cast<double>(bench::automaton_bytes(z.lengths.front(), bench::kScalingVocab)) / mib;
  const double large =
      static_cast<double>(bench::automaton_bytes(z.lengths.back(), bench::kScalingVocab)) / mib;
  quote(
      kChapter, "the automaton's size at 1k and 128k",
      fmt("At 1k the automaton is %s and lives in the L2 cache; at 128k it is about %.0f MB",
          small < 0.1 ? "less than a tenth of a megabyte" : fmt("%.2f MB", small).c_str(), large));
  const bench::AutomatonWorkload w = bench::automaton_workload(z, bench::kScalingVocab);
  quote(kChapter, "steps with a 1-token match at 1k and 128k (main stream)",
        fmt("steps with a 1-token match go from about %.0f%% at 1k to about %.0f%% at 128k",
            100 * w.single.front(), 10 * std::round(10 * w.single.back())));
}

void redirect_to_root() {
  const std::vector<double> reads = reads_per_token();
  quote(kChapter, "the redirect_to_root mutant's transitions read per token",
        fmt("reads %.0f transitions per token on runs of one token and %.0f on a periodic stream",
            reads[0], reads[2]));
}

void missing_clone() {
  const SuffixAutomaton sa = one_two_two();
  quote(kChapter, "states of 1 2 2 without the clone",
        fmt("(link `cur` straight to `q`) and there are %d,", sa.num_states()));
  quote(kChapter, "the longest match of 1 2 2 without the clone",
        fmt("the longest match comes out as %d tokens", sa.longest_match().length));
}

}  // namespace

int main() {
  const std::string impl = FIGURES_IMPL;
  if (impl == "solution") solution();
  if (impl == "redirect_to_root") redirect_to_root();
  if (impl == "missing_clone") missing_clone();
  return 0;
}
