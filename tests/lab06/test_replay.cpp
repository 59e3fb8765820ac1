// Lab 06 -- replay_reach: expected acceptance from recorded target probabilities.
// Chapter: book/lab06_economics.md, "Replaying acceptance from probabilities".
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "lab06_util.h"
#include "nasd.h"

using namespace speclab;
using D = std::vector<double>;
using V = std::vector<Token>;

namespace {

// Logits whose softmax at temperature 1 gives row r the probabilities probs[r] over tokens 0..n.
Logits logits_from_probs(const std::vector<D>& probs, int vocab = 8) {
  Logits l(static_cast<int>(probs.size()), vocab);
  for (size_t r = 0; r < probs.size(); ++r) {
    auto row = l.row(static_cast<int>(r));
    for (int v = 0; v < vocab; ++v) row[v] = -INFINITY;
    for (size_t v = 0; v < probs[r].size(); ++v) row[v] = static_cast<float>(std::log(probs[r][v]));
  }
  return l;
}

}  // namespace

TEST_SUITE("lab06 / Replaying acceptance from probabilities") {
  TEST_CASE("hand-computed: p = 0.5 then 0.8 then 1 gives reach 0.5 then 0.4 then 0.4") {
    // Row i gives the draft d_i (token 1, 2, 3) probability 0.5, 0.8, 1.0.
    const Logits l =
        logits_from_probs({{0.5, 0.5}, {0.2, 0.0001, 0.7999}, {0.0, 0, 0, 1.0}, {1.0}});
    const D reach = replay_reach(V{1, 2, 3}, l, 1.0);
    REQUIRE(reach.size() == 3);
    INFO(
        "reach is a running product: the chance that drafts 1..i would ALL be accepted; draft "
        "d_j's probability is read in row j - 1 (rows from 0: row 0 scores the first draft)");
    CHECK(reach[0] == doctest::Approx(0.5));
    CHECK(reach[1] == doctest::Approx(0.4).epsilon(1e-3));
    CHECK(reach[2] == doctest::Approx(0.4).epsilon(1e-3));
  }

  TEST_CASE("temperature 0 replays greedy matching: 1 until the first mismatch then 0") {
    const Logits l = speclab::testing::logits_with_argmax({4, 5, 9, 7, 2});
    INFO(
        "rows' argmax 4 5 9 7 (2 is the bonus row's): drafts 4 5 match rows 0 and 1, draft 6 "
        "misses row 2's 9, and nothing after a miss survives");
    CHECK(replay_reach(V{4, 5, 6, 7}, l, 0.0) == D{1.0, 1.0, 0.0, 0.0});
    CHECK(replay_reach(V{}, speclab::testing::logits_with_argmax({3}), 0.0).empty());
    // A tie: greedy verification takes argmax, whose ties go to the lowest id (logits.h).
    Logits tied(2, 4);
    for (int r = 0; r < 2; ++r) {
      for (int v = 0; v < 4; ++v) tied.row(r)[v] = v == 1 || v == 3 ? 1.0f : 0.0f;
    }
    INFO("row scores 0 1 0 1: greedy verification accepts token 1 (lowest tied id), not 3");
    CHECK(replay_reach(V{1}, tied, 0.0) == D{1.0});
    CHECK(replay_reach(V{3}, tied, 0.0) == D{0.0});
  }

  TEST_CASE("temperature reshapes the probabilities before the product") {
    // Scores 2 and 0 for tokens 0 and 1: p(0) = 1/(1+e^-2) at T=1 and 1/(1+e^-4) at T=0.5.
    Logits l(3, 4);
    for (int r = 0; r < 3; ++r) {
      for (int v = 0; v < 4; ++v) l.row(r)[v] = -INFINITY;
      l.row(r)[0] = 2.0f;
      l.row(r)[1] = 0.0f;
    }
    const double p1 = 1.0 / (1.0 + std::exp(-2.0)), p05 = 1.0 / (1.0 + std::exp(-4.0));
    const D at1 = replay_reach(V{0, 0}, l, 1.0), at05 = replay_reach(V{0, 0}, l, 0.5);
    const D other = replay_reach(V{1, 0}, l, 1.0);
    INFO("replay_reach returns one reach per draft: two here");
    REQUIRE(at1.size() == 2);
    REQUIRE(at05.size() == 2);
    REQUIRE(other.size() == 2);
    CHECK(at1[1] == doctest::Approx(p1 * p1));
    CHECK(at05[1] == doctest::Approx(p05 * p05));
    CHECK(other[1] == doctest::Approx((1 - p1) * p1));
    INFO(
        "a low temperature makes the scores large: 40 / 0.05 = 800, and e^800 overflows a double. "
        "softmax() subtracts the row's maximum first; a softmax of your own must too");
    Logits sharp(2, 4);
    for (int v = 0; v < 4; ++v) sharp.row(0)[v] = 0.0f;
    sharp.row(0)[2] = 40.0f;
    const D reach = replay_reach(V{2}, sharp, 0.05);
    REQUIRE(reach.size() == 1);
    CHECK(reach[0] == doctest::Approx(1.0));
  }

  TEST_CASE("replaying a greedy run at temperature 0 reproduces its measured acceptance") {
    const ToyTargetConfig cfg = lab06::workload(true);
    ToyTarget target(cfg);
    PromptLookupDrafter drafter(2);
    ReplayAccumulator greedy(0.0), sampled(1.0);
    DecodeConfig dc;
    dc.k = 5;
    dc.max_new_tokens = 200;
    dc.on_round = [&](const RoundRecord& r) {
      greedy.add(r.drafts, *r.logits);
      sampled.add(r.drafts, *r.logits);
    };
    const auto res =
        run_speculative(target, drafter, greedy_verify_rule(), lab06::prompt_for(cfg, 0), dc);
    CHECK(greedy.rounds() == res.stats.target_runs);
    CHECK(greedy.expected_tokens_per_run() == doctest::Approx(res.stats.tokens_per_run()));
    const D measured = acceptance_profile(res.stats, 5);
    const D replayed = greedy.profile(5);
    REQUIRE_MESSAGE(measured.size() == 5, "acceptance_profile(stats, 5) returns 5 rates");
    REQUIRE(replayed.size() == 5);
    for (int i = 0; i < 5; ++i) {
      INFO("alpha_", i + 1,
           ": the replay's rate (your replay_reach, summed by ReplayAccumulator) against "
           "acceptance_profile(stats, 5); if acceptance_profile fails its own tests, fix it first");
      CHECK(replayed[i] == doctest::Approx(measured[i]));
    }
    INFO("the toy gives its top token about 0.8: a sampled verifier would accept less often");
    CHECK(sampled.expected_tokens_per_run() > 1.0);
    CHECK(sampled.expected_tokens_per_run() < greedy.expected_tokens_per_run() - 0.5);
  }

  TEST_CASE("replaying a sampled run predicts its measured tokens per run within 4 sigma") {
    // Lab 03's sampled rule accepts draft d with probability p(d), independently per position,
    // so given each round's drafts and logits, P(accepted >= i) is exactly reach_i. The realized
    // total therefore differs from the replayed total only by sampling noise, whose variance the
    // replay also gives: Var(A) = sum_i (2i - 1) reach_i - (sum_i reach_i)^2 per round.
    for (double temperature : {0.6, 1.0}) {
      ReplayAccumulator replay(temperature);
      double expected_accepted = 0.0, variance = 0.0;
      std::int64_t accepted = 0, runs = 0;
      for (std::uint64_t seed = 0; seed < 6; ++seed) {
        const ToyTargetConfig cfg = lab06::workload(true, seed);
        ToyTarget target(cfg);
        PromptLookupDrafter drafter(1);
        DecodeConfig dc;
        dc.k = 4;
        dc.max_new_tokens = 250;
        dc.sampling.temperature = temperature;
        dc.sampling.seed = 1000 + seed;
        dc.on_round = [&](const RoundRecord& r) {
          replay.add(r.drafts, *r.logits);
          const D reach = replay_reach(r.drafts, *r.logits, temperature);
          double mean = 0.0, second = 0.0;
          for (size_t i = 0; i < reach.size(); ++i) {
            mean += reach[i];
            second += static_cast<double>(2 * i + 1) * reach[i];
          }
          expected_accepted += mean;
          variance += second - mean * mean;
        };
        const auto res =
            run_speculative(target, drafter, sampled_verify_rule(), lab06::prompt_for(cfg, 0), dc);
        accepted += res.stats.accepted;
        runs += res.stats.target_runs;
      }
      const double sigma = std::sqrt(variance);
      INFO("temperature=", temperature, ": ", runs, " rounds accepted ", accepted,
           " drafts; the replay expects ", expected_accepted, " +- ", sigma);
      CHECK(replay.rounds() == runs);
      CHECK(sigma > 1.0);  // the test has noise to measure against
      CHECK(std::abs(static_cast<double>(accepted) - expected_accepted) <= 4.0 * sigma);
      CHECK(replay.expected_tokens_per_run() ==
            doctest::Approx(1.0 + expected_accepted / static_cast<double>(runs)));
    }
  }

  TEST_CASE("ReplayAccumulator refuses what acceptance_profile refuses: no round, or k < 0") {
    // It used to answer zeros (and an acceptance length of 0) where acceptance_profile throws,
    // so a replay fed by a callback that was never wired up looked like "nothing is accepted".
    ReplayAccumulator replay(0.0);
    CHECK_THROWS_WITH_AS(replay.profile(3), doctest::Contains("no round"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(replay.expected_tokens_per_run(), doctest::Contains("no round"),
                         std::invalid_argument);
    replay.add(V{4, 5}, speclab::testing::logits_with_argmax({4, 9, 1}));
    INFO(
        "after one greedy round whose drafts 4 5 meet argmaxes 4 9: replay_reach gives 1 0, so "
        "the profile is 1 0 0 and the round's expected tokens 2 (if replay_reach fails its own "
        "cases, fix it first)");
    CHECK_THROWS_AS(replay.profile(-1), std::invalid_argument);
    CHECK(replay.profile(0).empty());
    CHECK(replay.profile(3) == D{1.0, 0.0, 0.0});
    CHECK(replay.expected_tokens_per_run() == doctest::Approx(2.0));
  }

  TEST_CASE("wrong row count or a temperature that is negative or not finite is rejected") {
    const Logits l = speclab::testing::logits_with_argmax({1, 2});
    CHECK_THROWS_AS(replay_reach(V{1, 2}, l, 0.0), std::invalid_argument);  // too few rows
    CHECK_THROWS_AS(replay_reach(V{}, l, 0.0), std::invalid_argument);      // too many
    CHECK_THROWS_AS(replay_reach(V{1}, l, -1.0), std::invalid_argument);
    INFO("a negative temperature with no drafts: nothing to compute, still an error");
    CHECK_THROWS_AS(replay_reach(V{}, speclab::testing::logits_with_argmax({1}), -1.0),
                    std::invalid_argument);
    // NaN fails every comparison, so a check written as `temperature < 0` lets it through, and
    // softmax at an infinite temperature is no distribution: neither is a temperature, with
    // drafts or without.
    for (const double bad : {std::nan(""), static_cast<double>(INFINITY)}) {
      INFO("temperature ", bad);
      CHECK_THROWS_AS(replay_reach(V{1}, l, bad), std::invalid_argument);
      CHECK_THROWS_AS(replay_reach(V{}, speclab::testing::logits_with_argmax({1}), bad),
                      std::invalid_argument);
    }
  }

  TEST_CASE("a draft id outside the vocabulary is rejected") {
    // Indexing softmax(row)[d] with an unchecked id would read past the row.
    const Logits l = speclab::testing::logits_with_argmax({1, 2}, 8);
    for (const double temperature : {0.0, 1.0}) {
      INFO("temperature ", temperature);
      CHECK_THROWS_AS(replay_reach(V{8}, l, temperature), std::invalid_argument);
      CHECK_THROWS_AS(replay_reach(V{-1}, l, temperature), std::invalid_argument);
      CHECK(replay_reach(V{7}, l, temperature).size() == 1);
    }
    // Row 0 gives token 0 probability 0 at every temperature (and its argmax is 1): draft 0 is
    // a sure miss, so the reach is 0 from there on, but the next draft's id is still checked.
    Logits missed = speclab::testing::logits_with_argmax({1, 2, 3}, 8);
    missed.row(0)[0] = -INFINITY;
    for (const double temperature : {0.0, 1.0}) {
      INFO("temperature ", temperature,
           ": a draft of probability 0 ends the product, not the checks; the id after it is "
           "outside the vocabulary all the same");
      CHECK_THROWS_AS(replay_reach(V{0, 8}, missed, temperature), std::invalid_argument);
      CHECK(replay_reach(V{0, 7}, missed, temperature) == D{0.0, 0.0});
    }
  }
}
