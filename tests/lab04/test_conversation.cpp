// Lab 04 -- what a public pool buys in a two-turn conversation, on the toy target.
// Chapter: book/lab04_ngram_pool.md, "Conversations: when a public pool pays".
#include <doctest/doctest.h>

#include "conversation.h"

using namespace speclab;
using namespace speclab::lab04_testing;

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
