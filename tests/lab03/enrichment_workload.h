#pragma once
// The two filler_top_k workloads of book/lab03_nasd.md, "Learning more per round: filler_top_k",
// that its test table quotes figures from: run by the lab 03 tests (test_enrichment.cpp) and by
// the figures the chapter quotes (tests/book/figures_lab03.cpp), so that both measure the same.
#include <cstdint>
#include <vector>

#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "nasd.h"
#include "prompt_lookup.h"  // greedy_verify_rule (lab 01's reference solution)

namespace speclab::lab03_testing {

// Memory: ToyTarget markov (vocab 64, branching 4, seed 3), a 12-token prompt, 150 greedy tokens,
// k = 4, NASD n = 3, min_context 1. Greedy output is the same for every filler_top_k.
inline ToyTarget memory_target() {
  ToyTargetConfig cfg;
  cfg.regime = ToyRegime::markov;
  cfg.seed = 3;
  cfg.vocab_size = 64;
  cfg.branching = 4;
  return ToyTarget(cfg);
}

struct MemoryRun {
  std::vector<Token> prompt;  // the 12-token prompt
  std::vector<Token> tokens;  // the emitted tokens
  std::int64_t entries = 0;   // NasdDrafter::storage().size() after the decode
};

// Decodes memory_target()'s workload (`target` is one) with the given filler_top_k. Verified
// with lab 01's greedy rule, so that the run tests record_round alone.
inline MemoryRun memory_run(ToyTarget& target, int filler_top_k) {
  MemoryRun run;
  run.prompt = target.make_prompt(12);
  DecodeConfig dc;
  dc.max_new_tokens = 150;
  dc.k = 4;
  NasdDrafter drafter({.n = 3, .min_context = 1, .filler_top_k = filler_top_k});
  run.tokens = run_speculative(target, drafter, greedy_verify_rule(), run.prompt, dc).tokens;
  run.entries = drafter.storage().size();
  return run;
}

// Totals over a workload's seeds.
struct Totals {
  double emitted = 0, target_runs = 0;
  double tokens_per_run() const { return emitted / target_runs; }
};

// Tokens per run: ToyTarget periodic (vocab 64, period 16, noise 0.2), seeds 0..19, a 16-token
// prompt, 300 tokens sampled at temperature 1.0 (sampling seed = the target's), k = 4, NASD
// n = 3, min_context 1, with the given filler_top_k. The output is the same for every
// filler_top_k (sampled verification is lossless, same seeds); only the drafts differ.
inline Totals periodic_enrichment(int filler_top_k) {
  Totals t;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    ToyTargetConfig cfg;
    cfg.regime = ToyRegime::periodic;
    cfg.seed = seed;
    cfg.vocab_size = 64;
    cfg.noise = 0.2;
    ToyTarget target(cfg);
    const std::vector<Token> prompt = target.make_prompt(16);
    DecodeConfig dc;
    dc.max_new_tokens = 300;
    dc.k = 4;
    dc.sampling = SamplingParams{1.0, seed, 0};
    NasdDrafter drafter({.n = 3, .min_context = 1, .filler_top_k = filler_top_k});
    const auto res = run_speculative(target, drafter, sampled_verify_rule(), prompt, dc);
    t.emitted += static_cast<double>(res.stats.emitted);
    t.target_runs += static_cast<double>(res.stats.target_runs);
  }
  return t;
}

}  // namespace speclab::lab03_testing
