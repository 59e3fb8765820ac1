#pragma once
// The two-turn conversation of book/lab04_ngram_pool.md, "Conversations: when a public pool
// pays": run by the lab 04 tests (test_conversation.cpp) and by the figures the chapter quotes
// from it (tests/book/figures_lab04.cpp), so that both measure the same workload.
#include <cstdint>
#include <vector>

#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "ngram_pool.h"
#include "prompt_lookup.h"

namespace speclab::lab04_testing {

// Turn 1's and turn 2's acceptance lengths (tokens per target run).
struct TwoTurns {
  double al_turn1 = 0, al_turn2 = 0;
};

// The stated workload. A ToyTarget (vocab 64, the given seed) answers a 16-token prompt with 120
// tokens (turn 1); then the user adds 6 new tokens and the target answers with 120 more (turn 2).
// One NGramPoolDrafter (k = 3, v = 5, keep all, oldest first) drafts both turns with k = 5, so
// turn 2 is a new request of the same pool manager. `kept_output` says how much of turn 1's output
// the chat template puts back into turn 2's prompt: all of it (120), or only its tail (templates
// of reasoning models drop earlier turns' reasoning and keep the final answer).
inline TwoTurns two_turn_conversation(ToyRegime regime, double noise, std::uint64_t seed,
                                      bool is_public, int kept_output) {
  using V = std::vector<Token>;
  ToyTargetConfig cfg;
  cfg.regime = regime;
  cfg.vocab_size = 64;
  cfg.period = 12;
  cfg.noise = noise;
  cfg.seed = seed;
  ToyTarget target(cfg);
  DecodeConfig dc;
  dc.max_new_tokens = 120;
  dc.k = 5;
  NGramPoolConfig pc;
  pc.is_public_pool = is_public;
  NGramPoolDrafter drafter(pc);

  const V turn1_prompt = target.make_prompt(16);
  const GenerationResult turn1 =
      run_speculative(target, drafter, greedy_verify_rule(), turn1_prompt, dc);
  V turn2_prompt = turn1_prompt;
  turn2_prompt.insert(turn2_prompt.end(), turn1.tokens.end() - kept_output, turn1.tokens.end());
  for (int i = 0; i < 6; ++i) {
    turn2_prompt.push_back(static_cast<Token>((seed * 31 + i * 7 + 3) % 64));
  }
  const GenerationResult turn2 =
      run_speculative(target, drafter, greedy_verify_rule(), turn2_prompt, dc);
  return {turn1.stats.tokens_per_run(), turn2.stats.tokens_per_run()};
}

}  // namespace speclab::lab04_testing
