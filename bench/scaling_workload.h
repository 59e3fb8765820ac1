#pragma once
// bench_drafter_scaling's streams and the deterministic part of its report: what lab 05's
// automaton does per token at each context length, and its size. Shared with
// tests/book/figures_lab05.cpp, which checks the figures book/lab05_suffix_automaton.md quotes
// from the bench's workload table (they are counts, not timings).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench_stream.h"
#include "suffix_automaton.h"

namespace speclab::bench {

// The bench's sizes: context lengths, steps drafted per length, steps per timed batch, rounds.
struct Sizes {
  std::vector<std::size_t> lengths;
  std::size_t steps;
  std::size_t batch;
  int rounds;
};

inline Sizes scaling_sizes(bool smoke) {
  return smoke ? Sizes{{256, 1024}, 64, 16, 1} : Sizes{{1024, 8192, 32768, 131072}, 256, 32, 8};
}

constexpr int kScalingVocab = 32000;   // the main stream's fresh tokens
constexpr int kUniqueVocab = 1 << 30;  // the control stream's: practically never repeat

// The stream of round `round`: the ingested context and the tokens drafted for, L + steps in all.
inline std::vector<Token> round_stream(const Sizes& z, int round, std::size_t length, int vocab) {
  return mixed_stream(42 + static_cast<std::uint64_t>(round), length + z.steps, vocab);
}

// Per length, over every round's drafted steps: the share of steps that propose (a match of at
// least one token), the share whose match is a single token (a chance repeat), and the states
// added per token.
struct AutomatonWorkload {
  std::vector<double> proposing, single, states;
};

inline AutomatonWorkload automaton_workload(const Sizes& z, int vocab) {
  AutomatonWorkload w;
  for (std::size_t length : z.lengths) {
    std::size_t p = 0, one = 0, added = 0;
    for (int r = 0; r < z.rounds; ++r) {
      const std::vector<Token> s = round_stream(z, r, length, vocab);
      SuffixAutomaton sa;
      for (std::size_t i = 0; i < length; ++i) sa.extend(s[i]);
      const int before = sa.num_states();
      for (std::size_t i = length; i < s.size(); ++i) {
        const SuffixMatch m = sa.longest_match();
        p += m.length >= 1 ? 1 : 0;
        one += m.length == 1 ? 1 : 0;
        sa.extend(s[i]);
      }
      added += static_cast<std::size_t>(sa.num_states() - before);
    }
    const auto n = static_cast<double>(z.steps) * z.rounds;
    w.proposing.push_back(static_cast<double>(p) / n);
    w.single.push_back(static_cast<double>(one) / n);
    w.states.push_back(static_cast<double>(added) / n);
  }
  return w;
}

// The automaton's memory_bytes() after `length` tokens of the main stream (round 0's seed).
inline std::size_t automaton_bytes(std::size_t length, int vocab) {
  SuffixAutomaton sa;
  for (Token t : mixed_stream(42, length, vocab)) sa.extend(t);
  return sa.memory_bytes();
}

}  // namespace speclab::bench
