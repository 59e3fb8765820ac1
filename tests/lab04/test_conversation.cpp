// Lab 04 -- what a public pool buys in a two-turn conversation, on the toy target.
// Chapter: book/lab04_ngram_pool.md, "Conversations: when a public pool pays".
#include <doctest/doctest.h>

#include <vector>

#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "ngram_pool.h"
#include "prompt_lookup.h"

using namespace speclab;
using V = std::vector<Token>;

namespace {

// The stated workload. A ToyTarget (vocab 64, seeds 0..9) answers a 16-token prompt with 120
// tokens (turn 1); then the user adds 6 new tokens and the target answers with 120 more (turn 2).
// One NGramPoolDrafter (k = 3, v = 5, keep all, oldest first) drafts both turns with k = 5, so
// turn 2 is a new request of the same pool manager. `kept_output` says how much of turn 1's output
// the chat template puts back into turn 2's prompt: all of it, or only its tail (templates of
// reasoning models drop earlier turns' reasoning and keep the final answer).
struct TwoTurns {
  double al_turn1 = 0, al_turn2 = 0;
};

TwoTurns two_turn_conversation(ToyRegime regime, double noise, std::uint64_t seed, bool is_public,
                               int kept_output) {
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

}  // namespace

TEST_SUITE("lab04 / Conversations: when a public pool pays") {
  TEST_CASE("turn 2 drafts better than turn 1 and a private pool already sees the full history") {
    // Turn 2's prompt = turn 1's prompt + turn 1's whole output + new tokens. The initial scan of
    // turn 2 puts all of turn 1 into even a private pool, so the two pools end up holding the
    // same values; only their age order can differ.
    for (ToyRegime regime : {ToyRegime::markov, ToyRegime::periodic}) {
      double t1 = 0, pub = 0, priv = 0;
      for (std::uint64_t seed = 0; seed < 10; ++seed) {
        const TwoTurns p = two_turn_conversation(regime, 0.2, seed, true, 120);
        const TwoTurns q = two_turn_conversation(regime, 0.2, seed, false, 120);
        t1 += p.al_turn1;
        pub += p.al_turn2;
        priv += q.al_turn2;
      }
      INFO("regime=", to_string(regime), " mean AL: turn 1 ", t1 / 10, ", turn 2 public ", pub / 10,
           ", turn 2 private ", priv / 10);
      CHECK(pub > 1.1 * t1);
      CHECK(priv > 1.1 * t1);
      CHECK(pub == doctest::Approx(priv).epsilon(0.03));
    }
  }

  TEST_CASE("when the template drops turn 1's reasoning a public pool raises turn 2's AL") {
    // Turn 2's prompt keeps only the last 8 tokens of turn 1's output (the "answer"); the 112
    // before them (the "reasoning") reach only the public pool, which learned them in turn 1.
    // Periodic text without noise: turn 2 repeats the pattern turn 1 produced.
    double pub = 0, priv = 0;
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
      const TwoTurns p = two_turn_conversation(ToyRegime::periodic, 0.0, seed, true, 8);
      const TwoTurns q = two_turn_conversation(ToyRegime::periodic, 0.0, seed, false, 8);
      INFO("seed=", seed, " turn 2 AL public ", p.al_turn2, " private ", q.al_turn2);
      CHECK(p.al_turn2 > q.al_turn2);
      pub += p.al_turn2;
      priv += q.al_turn2;
    }
    INFO("mean turn 2 AL public ", pub / 10, " private ", priv / 10);
    CHECK(pub > 1.15 * priv);
  }
}
