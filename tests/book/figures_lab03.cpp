// The figures book/lab03_nasd.md quotes from lab 03's verify rule and NASD drafter, built against
// the implementation FIGURES_IMPL names (tests/book/CMakeLists.txt builds it twice):
//   solution                 the statistical test's outcomes, exact fresh-draw TV and the
//                            solution's row of "Checking it two ways", and the test table's
//                            storage sizes and tokens per run ("What the tests pin")
//   resample_after_mismatch  the mutant's row of "Checking it two ways"
// on the tests' own workloads (tests/lab03/statistical_workload.h, enrichment_workload.h). The
// filler_top_k table has its own check (check_lab03_table.py). Checked by
// tests/book/check_quoted.py (ctest label `book`).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "enrichment_workload.h"
#include "exact_distribution.h"
#include "quote.h"
#include "statistical_workload.h"

using namespace speclab;
using speclab::book::fmt;
using speclab::book::quote;
namespace lt = speclab::lab03_testing;

namespace {

constexpr const char* kChapter = "book/lab03_nasd.md";

// "p = 0.21", or "p ≈ 0" once it is too small to print with two digits.
std::string p_value(double p) { return p < 0.005 ? "p ≈ 0" : fmt("p = %.2f", p); }

// The statistical test's first case, with the oracle drafter: the table row that
// FIGURES_IMPL's rule gives, and (for the solution) the exact figures around it.
void statistical(bool solution) {
  ToyTarget target = lt::stat_target();
  const testing::Seq prompt = target.make_prompt(8);
  const testing::Dist plain = testing::plain_distribution(target, prompt, lt::kM, lt::kTemperature);
  const testing::ProposeFn oracle = [&](const testing::Seq& ctx, int k) {
    return testing::greedy_chain(target, ctx, k);
  };
  const testing::Dist biased = testing::speculative_distribution(target, prompt, lt::kM, lt::kK,
                                                                 lt::kTemperature, oracle, true);
  const auto counts = lt::sample_first_tokens(
      target, prompt, lt::kM, lt::kK, lt::kTemperature, lt::kRuns,
      [&] { return std::make_unique<testing::GreedyOracleDrafter>(target); });
  const testing::Dist seen = testing::empirical(counts, lt::kRuns);
  const testing::ChiSquare chi = testing::chi_square(counts, plain, lt::kRuns);
  const double tv = testing::total_variation(seen, plain);
  if (solution) {
    quote(kChapter, "the outcomes the statistical test enumerates",
          fmt("%zu outcomes on the markov workload", plain.size()));
    quote(kChapter, "the fresh-draw rule's exact TV, in 'Why a fresh draw after a mismatch'",
          fmt("the first three tokens under the fresh-draw rule are $%.3f$ away in total "
              "variation",
              testing::total_variation(biased, plain)));
    quote(kChapter, "the chi-square's degrees of freedom",
          fmt("| | empirical TV to the target | chi-square (dof %d) |", chi.dof));
    quote(kChapter, "the solution's row",
          fmt("| emit the draw (solution) | %.4f | %.1f, %s |", tv, chi.statistic,
              p_value(chi.p_value).c_str()));
  } else {
    quote(kChapter, "the fresh-draw mutant's row",
          fmt("| fresh draw (mutant) | %.4f (%.3f from its own predicted distribution) | "
              "%.0f, %s |",
              tv, testing::total_variation(seen, biased), chi.statistic,
              p_value(chi.p_value).c_str()));
  }
}

// The test table's figures from the two enrichment cases.
void enrichment() {
  ToyTarget target = lt::memory_target();
  std::vector<std::int64_t> entries;
  for (int k = 1; k <= 6; ++k) entries.push_back(lt::memory_run(target, k).entries);
  // Where growth stops: the first filler_top_k whose storage is no larger than the one before.
  int stops = 0;
  for (int k = 2; k <= 6 && stops == 0; ++k) {
    if (entries[static_cast<std::size_t>(k - 1)] <= entries[static_cast<std::size_t>(k - 2)]) {
      stops = k - 1;
    }
  }
  bool flat = stops > 0;
  for (int k = stops + 1; flat && k <= 6; ++k) {
    flat = entries[static_cast<std::size_t>(k - 1)] == entries[static_cast<std::size_t>(stops - 1)];
  }
  quote(kChapter, "storage entries for filler_top_k 1..6 in the memory case",
        fmt("(%lld, %lld, %lld, %lld, %lld, %lld entries on the markov workload in the test) and "
            "%s",
            static_cast<long long>(entries[0]), static_cast<long long>(entries[1]),
            static_cast<long long>(entries[2]), static_cast<long long>(entries[3]),
            static_cast<long long>(entries[4]), static_cast<long long>(entries[5]),
            flat ? fmt("stops growing at %d possible tokens", stops).c_str()
                 : "does not stop growing by filler_top_k 6"));
  quote(kChapter, "tokens per run at filler_top_k 1 and 3 in the noisy periodic case",
        fmt("enrichment raises tokens per run on noisy periodic text (%.3f at top-k 1 to %.3f at "
            "top-k 3;",
            lt::periodic_enrichment(1).tokens_per_run(),
            lt::periodic_enrichment(3).tokens_per_run()));
}

}  // namespace

int main() {
  const std::string impl = FIGURES_IMPL;
  if (impl == "solution") {
    statistical(true);
    enrichment();
  }
  if (impl == "resample_after_mismatch") statistical(false);
  return 0;
}
