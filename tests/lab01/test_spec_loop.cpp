// Lab 01 -- your drafter and verify rule inside the engine's speculative loop, on the ToyTarget.
// Chapter: book/lab01_prompt_lookup.md, "What the tests pin".
#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "prompt_lookup.h"
#include "test_util.h"

using namespace speclab;
using speclab::testing::first_difference;

namespace {

struct Run {
  GenerationResult base, spec;
};

Run run_both(ToyRegime regime, std::uint64_t seed, int n, int k, int max_new = 120) {
  ToyTargetConfig cfg;
  cfg.regime = regime;
  cfg.seed = seed;
  cfg.period = 8;
  cfg.vocab_size = regime == ToyRegime::random ? 4096 : 64;
  ToyTarget target(cfg);
  const std::vector<Token> prompt = target.make_prompt(12);
  DecodeConfig dc;
  dc.max_new_tokens = max_new;
  dc.k = k;
  Run r;
  r.base = run_baseline(target, prompt, dc);
  PromptLookupDrafter drafter(n);
  r.spec = run_speculative(target, drafter, greedy_verify_rule(), prompt, dc);
  return r;
}

}  // namespace

TEST_SUITE("lab01 / Why greedy speculation is lossless") {
  TEST_CASE("speculative output == plain greedy output over seeds x (n, k) x regimes") {
    int cases = 0;
    for (ToyRegime regime : {ToyRegime::periodic, ToyRegime::markov, ToyRegime::random}) {
      for (std::uint64_t seed = 0; seed < 6; ++seed) {
        for (int n : {1, 2, 3}) {
          for (int k : {1, 3, 5, 8}) {
            const Run r = run_both(regime, seed, n, k);
            INFO("regime=", to_string(regime), " seed=", seed, " n=", n, " k=", k);
            INFO("first difference ", first_difference(r.spec.tokens, r.base.tokens));
            REQUIRE(r.spec.tokens == r.base.tokens);
            ++cases;
          }
        }
      }
    }
    CHECK(cases == 3 * 6 * 3 * 4);
  }

  TEST_CASE("identity holds with periodic noise too, where drafts are often wrong") {
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
      ToyTargetConfig cfg;
      cfg.regime = ToyRegime::periodic;
      cfg.seed = seed;
      cfg.noise = 0.2;
      ToyTarget target(cfg);
      const auto prompt = target.make_prompt(10);
      DecodeConfig dc;
      dc.max_new_tokens = 150;
      dc.k = 6;
      const auto base = run_baseline(target, prompt, dc);
      PromptLookupDrafter drafter(1);
      const auto spec = run_speculative(target, drafter, greedy_verify_rule(), prompt, dc);
      INFO("seed=", seed);
      {
        INFO("first difference ", first_difference(spec.tokens, base.tokens));
        REQUIRE(spec.tokens == base.tokens);
      }
      INFO(spec.stats.drafted, " drafted, ", spec.stats.accepted,
           " accepted: some drafts must be rejected on noisy text (0 drafted: the drafter never "
           "proposed anything)");
      CHECK(spec.stats.accepted < spec.stats.drafted);
    }
  }
}

TEST_SUITE("lab01 / Tokens per run: the metric") {
  TEST_CASE("periodic text: k = 5 gives more than 4 tokens per run") {
    const Run r = run_both(ToyRegime::periodic, 3, 2, 5, 200);
    INFO("after one period (8 tokens) every draft of 5 should be accepted, plus the bonus");
    CHECK(r.spec.stats.emitted == 200);
    CHECK(r.spec.stats.target_runs * 4 < r.spec.stats.emitted);
    CHECK(r.spec.stats.tokens_per_run() > 4.0);
  }

  TEST_CASE("random text: target runs == emitted tokens exactly") {
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      const Run r = run_both(ToyRegime::random, seed, 1, 5, 150);
      INFO("nothing repeats in the random regime, so no draft can ever be accepted; seed=", seed);
      CHECK(r.spec.stats.accepted == 0);
      CHECK(r.spec.stats.target_runs == r.spec.stats.emitted);
      CHECK(r.spec.stats.target_runs == r.base.stats.target_runs);
    }
  }

  TEST_CASE("every run emits at least one token and the total never exceeds max_new_tokens") {
    for (int max_new : {1, 2, 7, 33}) {
      ToyTarget target(ToyTargetConfig{});
      const auto prompt = target.make_prompt(20);
      DecodeConfig dc;
      dc.max_new_tokens = max_new;
      dc.k = 8;
      PromptLookupDrafter drafter(1);
      std::vector<RoundRecord> rounds;
      dc.on_round = [&](const RoundRecord& rr) { rounds.push_back(rr); };
      const auto spec = run_speculative(target, drafter, greedy_verify_rule(), prompt, dc);
      INFO("max_new_tokens=", max_new);
      CHECK(static_cast<int>(spec.tokens.size()) == max_new);
      for (const auto& rr : rounds) CHECK(rr.emitted.size() >= 1);
      CHECK(static_cast<int>(rounds.size()) == spec.stats.target_runs);
    }
  }

  TEST_CASE("the acceptance-length histogram and per-position counts add up") {
    const Run r = run_both(ToyRegime::markov, 1, 1, 4, 150);
    const auto& s = r.spec.stats;
    const auto runs =
        std::accumulate(s.accept_length_hist.begin(), s.accept_length_hist.end(), std::int64_t{0});
    CHECK(runs == s.target_runs);
    std::int64_t weighted = 0;
    for (size_t a = 0; a < s.accept_length_hist.size(); ++a) {
      weighted += static_cast<std::int64_t>(a) * s.accept_length_hist[a];
    }
    CHECK(weighted == s.accepted);
    CHECK(std::accumulate(s.accepted_at.begin(), s.accepted_at.end(), std::int64_t{0}) ==
          s.accepted);
    CHECK(s.emitted == s.accepted + s.target_runs);
  }
}
