#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <vector>

#include "mini_engine/core/logits.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"

using namespace speclab;

TEST_SUITE("engine / ToyTarget") {
  TEST_CASE("extend returns one row per appended token and logits depend only on the tokens") {
    ToyTarget a(ToyTargetConfig{.regime = ToyRegime::markov, .seed = 5});
    ToyTarget b(ToyTargetConfig{.regime = ToyRegime::markov, .seed = 5});
    const std::vector<Token> toks = {1, 2, 3, 4, 5};
    const Logits all = a.extend(toks);
    CHECK(all.rows() == 5);
    for (int i = 0; i < 5; ++i) {
      const Logits one = b.extend(std::span<const Token>(&toks[i], 1));
      CHECK(std::vector<float>(one.row(0).begin(), one.row(0).end()) ==
            std::vector<float>(all.row(i).begin(), all.row(i).end()));
    }
  }

  TEST_CASE("truncate then re-extend reproduces the same logits") {
    ToyTarget t(ToyTargetConfig{.regime = ToyRegime::periodic, .seed = 1, .noise = 0.3});
    const std::vector<Token> toks = {9, 8, 7, 6, 5, 4};
    const Logits first = t.extend(toks);
    t.truncate(2);
    CHECK(t.length() == 2);
    const Logits again = t.extend(std::span<const Token>(toks).subspan(2));
    for (int i = 0; i < 4; ++i) {
      CHECK(std::vector<float>(again.row(i).begin(), again.row(i).end()) ==
            std::vector<float>(first.row(i + 2).begin(), first.row(i + 2).end()));
    }
  }

  TEST_CASE("periodic regime without noise repeats its pattern under greedy decoding") {
    ToyTarget t(ToyTargetConfig{.regime = ToyRegime::periodic, .seed = 2, .period = 8});
    DecodeConfig dc;
    dc.max_new_tokens = 40;
    const auto out = run_baseline(t, t.make_prompt(5), dc).tokens;
    for (size_t i = 8; i < out.size(); ++i) CHECK(out[i] == out[i - 8]);
  }

  TEST_CASE("random regime never repeats a token starting from make_prompt") {
    ToyTarget t(ToyTargetConfig{.regime = ToyRegime::random, .vocab_size = 1000, .seed = 4});
    DecodeConfig dc;
    dc.max_new_tokens = 500;
    const auto prompt = t.make_prompt(100);
    auto out = run_baseline(t, prompt, dc).tokens;
    out.insert(out.end(), prompt.begin(), prompt.end());
    CHECK(std::set<Token>(out.begin(), out.end()).size() == out.size());
  }

  TEST_CASE("each position has a proper sparse distribution") {
    ToyTarget t(ToyTargetConfig{.regime = ToyRegime::markov});
    const auto row = t.logits_after(std::vector<Token>{1, 2, 3});
    int finite = 0;
    for (float x : row) finite += std::isfinite(x) ? 1 : 0;
    CHECK(finite == 3);  // branching = 3 successors
    const auto p = softmax(row, 1.0);
    double sum = 0;
    for (double x : p) sum += x;
    CHECK(sum == doctest::Approx(1.0));
  }

  TEST_CASE("logits_after rejects a context whose last token is outside the vocabulary") {
    // The periodic regime indexed its token table with the last id: an out-of-bounds read.
    ToyTarget t(ToyTargetConfig{.regime = ToyRegime::periodic});
    CHECK_THROWS_WITH_AS(t.logits_after(std::vector<Token>{1, 512}),
                         doctest::Contains("outside the vocabulary"), std::invalid_argument);
    CHECK_THROWS_AS(t.logits_after(std::vector<Token>{-1}), std::invalid_argument);
    CHECK(t.logits_after(std::vector<Token>{}).size() == 512);
  }

  TEST_CASE("a NaN noise is rejected") {
    CHECK_THROWS_WITH_AS(ToyTarget(ToyTargetConfig{.noise = NAN}), doctest::Contains("noise"),
                         std::invalid_argument);
  }

  TEST_CASE("a negative noise other than -1 is rejected, not taken as the default") {
    // -1 is the documented "default"; -0.5 is a mistake (speclab --noise -0.5 reached here).
    for (double bad : {-0.5, -2.0}) {
      CAPTURE(bad);
      CHECK_THROWS_WITH_AS(ToyTarget(ToyTargetConfig{.noise = bad}),
                           "ToyTarget: noise must be in [0, 1] (or -1 for the default)",
                           std::invalid_argument);
    }
    CHECK(ToyTarget(ToyTargetConfig{.regime = ToyRegime::markov, .noise = -1.0}).config().noise ==
          0.3);
  }

  TEST_CASE("bad configuration and bad calls give clear errors") {
    CHECK_THROWS_WITH_AS(ToyTarget(ToyTargetConfig{.vocab_size = 2}),
                         doctest::Contains("vocab_size"), std::invalid_argument);
    CHECK_THROWS_AS(ToyTarget(ToyTargetConfig{.period = 1}), std::invalid_argument);
    CHECK_THROWS_WITH_AS(ToyTarget(ToyTargetConfig{.max_length = 0}),
                         doctest::Contains("max_length must be >= 1"), std::invalid_argument);
    // Each regime checks the fields it reads, and only those (period was already so).
    CHECK_THROWS_WITH_AS(ToyTarget(ToyTargetConfig{.regime = ToyRegime::markov, .branching = 1}),
                         doctest::Contains("branching must be in [2, 8]"), std::invalid_argument);
    CHECK_THROWS_AS(ToyTarget(ToyTargetConfig{.regime = ToyRegime::markov, .branching = 9}),
                    std::invalid_argument);
    CHECK_NOTHROW(ToyTarget(ToyTargetConfig{.regime = ToyRegime::periodic, .branching = 1}));
    CHECK_NOTHROW(ToyTarget(ToyTargetConfig{.regime = ToyRegime::random, .branching = 0}));
    // The periodic pattern was built from `period` in every regime: a markov or random target
    // given a period outside [2, vocab_size] read past its token list (or threw length_error).
    for (int period : {-3, 1, 100000}) {
      for (ToyRegime regime : {ToyRegime::markov, ToyRegime::random}) {
        CAPTURE(period);
        ToyTarget other(ToyTargetConfig{.regime = regime, .period = period});
        CHECK(other.extend(other.make_prompt(5)).rows() == 5);
      }
    }
    CHECK_THROWS_AS(parse_toy_regime("weird"), std::invalid_argument);
    ToyTarget t(ToyTargetConfig{.vocab_size = 16, .period = 4, .max_length = 4});
    CHECK_THROWS_AS(t.extend(std::vector<Token>{}), std::invalid_argument);
    CHECK_THROWS_AS(t.extend(std::vector<Token>{16}), std::invalid_argument);
    t.extend(std::vector<Token>{1, 2, 3});
    CHECK_THROWS_AS(t.extend(std::vector<Token>{1, 2}), ContextOverflow);
    CHECK(t.length() == 3);  // unchanged after the failed call
    CHECK_THROWS_AS(t.truncate(4), std::out_of_range);
    CHECK_THROWS_AS(t.make_prompt(0), std::invalid_argument);
  }
}
