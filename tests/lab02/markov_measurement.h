#pragma once
// The workload of book/lab02_ngram_storage.md, "One level or many: a measurement": run by the
// lab 02 test (test_spec_loop.cpp) and by the figures the chapter quotes from it
// (tests/book/figures_lab02.cpp), so that both measure the same thing.
#include <cstdint>
#include <vector>

#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "ngram_storage.h"
#include "prompt_lookup.h"  // verify_greedy (lab 01's reference solution)

namespace speclab::lab02_testing {

// Totals over the workload's seeds.
struct MarkovMeasurement {
  std::int64_t drafted = 0;            // draft tokens proposed
  std::int64_t target_runs = 0;        // rounds, each one target run
  std::int64_t rounds_with_draft = 0;  // rounds whose draft was not empty
  std::int64_t emitted = 0;            // tokens emitted (10 * 200 when every decode completes)
  double tokens_per_run() const {
    return static_cast<double>(emitted) / static_cast<double>(target_runs);
  }
  double share_with_draft() const {
    return static_cast<double>(rounds_with_draft) / static_cast<double>(target_runs);
  }
};

// The stated workload: ToyTarget markov (vocabulary 64, 3 successors per token, noise 0.3),
// seeds 0..9, a 16-token prompt of the target's own, 200 greedy tokens, k = 4, decoded by an
// NGramDrafter with `config`.
inline MarkovMeasurement measure_on_markov(const NGramDrafterConfig& config) {
  MarkovMeasurement m;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    ToyTargetConfig cfg;
    cfg.regime = ToyRegime::markov;
    cfg.seed = seed;
    cfg.vocab_size = 64;
    cfg.branching = 3;  // set here so that a new default cannot move the workload
    cfg.noise = 0.3;
    ToyTarget target(cfg);
    const std::vector<Token> prompt = target.make_prompt(16);
    DecodeConfig dc;
    dc.max_new_tokens = 200;
    dc.k = 4;
    dc.on_round = [&](const RoundRecord& r) { m.rounds_with_draft += r.drafts.empty() ? 0 : 1; };
    NGramDrafter drafter(config);
    const auto res = run_speculative(target, drafter, greedy_verify_rule(), prompt, dc);
    m.drafted += res.stats.drafted;
    m.target_runs += res.stats.target_runs;
    m.emitted += res.stats.emitted;
  }
  return m;
}

}  // namespace speclab::lab02_testing
