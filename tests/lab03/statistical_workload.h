#pragma once
// The workload of book/lab03_nasd.md, "Checking it two ways": sampled speculative decoding on a
// ToyTarget whose first tokens' exact distribution exact_distribution.h computes. Run by the
// lab 03 statistical tests (test_lossless.cpp) and by the figures the chapter quotes from them
// (tests/book/figures_lab03.cpp), so that both measure the same thing.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "exact_distribution.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "nasd.h"

namespace speclab::lab03_testing {

// ToyTarget markov (vocab 64, branching 3, noise 0.3, seed 11), temperature 1.0, k = 4, the
// first M = 3 emitted tokens, N = 10000 runs with sampling seeds 0..9999. Fixed seeds: the
// outcome is deterministic.
inline constexpr int kM = 3;
inline constexpr int kK = 4;
inline constexpr int kRuns = 10000;
inline constexpr double kTemperature = 1.0;

inline ToyTarget stat_target() {
  ToyTargetConfig cfg;
  cfg.regime = ToyRegime::markov;
  cfg.seed = 11;
  cfg.vocab_size = 64;
  return ToyTarget(cfg);
}

// Runs speculative decoding with sampled verification `runs` times (sampling seeds
// first_seed .. first_seed + runs - 1), each with a fresh drafter from `make`, and counts the
// first m tokens.
inline std::map<testing::Seq, std::int64_t> sample_first_tokens(
    ToyTarget& target, const testing::Seq& prompt, int m, int k, double temperature, int runs,
    const std::function<std::unique_ptr<Drafter>()>& make, std::uint64_t first_seed = 0) {
  std::map<testing::Seq, std::int64_t> counts;
  DecodeConfig dc;
  dc.max_new_tokens = m;
  dc.k = k;
  dc.sampling.temperature = temperature;
  for (int s = 0; s < runs; ++s) {
    dc.sampling.seed = first_seed + static_cast<std::uint64_t>(s);
    const auto drafter = make();
    const auto res = run_speculative(target, *drafter, sampled_verify_rule(), prompt, dc);
    ++counts[res.tokens];
  }
  return counts;
}

}  // namespace speclab::lab03_testing
