// `--drafter auto`: the policy speculates when measured acceptance pays for the measured cost
// of wider verify passes, and falls back to plain decoding when it does not.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "auto_drafter.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "prompt_lookup.h"

using namespace speclab;
using namespace speclab::cli;

namespace {

// Proposes whatever the test says the next tokens are, or a fixed wrong guess.
class ScriptedDrafter final : public Drafter {
 public:
  std::string name() const override { return "scripted"; }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    ++calls;
    std::vector<Token> out;
    for (int i = 0; i < k; ++i) out.push_back(right ? truth(context.size() + i) : 999);
    return out;
  }
  static Token truth(size_t position) { return static_cast<Token>(position % 7); }
  bool right = true;
  int calls = 0;
};

// Drives an AutoDrafter through synthetic rounds on the text truth(0), truth(1), ...: the
// verify rule keeps drafts while they equal the truth, and a round whose verify pass covers w
// tokens takes cost(w) seconds on the injected clock.
struct Harness {
  double clock = 0.0;
  ScriptedDrafter* inner = nullptr;
  std::unique_ptr<AutoDrafter> drafter;
  std::vector<Token> context;
  std::function<double(int)> cost = [](int w) { return 1.0 + 0.1 * (w - 1); };

  explicit Harness(double prior_cost_slope = 0.15) {
    auto s = std::make_unique<ScriptedDrafter>();
    inner = s.get();
    AutoPolicyConfig config;
    config.prior_cost_slope = prior_cost_slope;
    config.clock = [this] { return clock; };
    drafter = std::make_unique<AutoDrafter>(std::move(s), config);
    for (size_t i = 0; i < 8; ++i) context.push_back(ScriptedDrafter::truth(i));
    drafter->begin(context);
  }

  // One round with up to k drafts; returns how many drafts the policy sent.
  int round(int k = 5) {
    RoundRecord r;
    r.position = static_cast<std::int64_t>(context.size());
    r.drafts = drafter->propose(context, k);
    while (r.accepted < static_cast<int>(r.drafts.size()) &&
           r.drafts[r.accepted] == ScriptedDrafter::truth(context.size() + r.accepted)) {
      ++r.accepted;
    }
    for (int i = 0; i <= r.accepted; ++i)
      r.emitted.push_back(ScriptedDrafter::truth(context.size() + i));
    r.bonus = r.accepted == static_cast<int>(r.drafts.size()) && !r.drafts.empty();
    clock += cost(static_cast<int>(r.drafts.size()) + 1);
    context.insert(context.end(), r.emitted.begin(), r.emitted.end());
    drafter->observe(context, r);
    return static_cast<int>(r.drafts.size());
  }
};

}  // namespace

TEST_SUITE("cli / auto policy") {
  TEST_CASE("before any evidence the prior gives E(k) and the cost of wider passes") {
    Harness h;
    CHECK(h.drafter->acceptance(1) == doctest::Approx(0.5));
    CHECK(h.drafter->expected_tokens(0) == doctest::Approx(1.0));
    CHECK(h.drafter->expected_tokens(2) == doctest::Approx(1.75));
    CHECK(h.drafter->relative_cost(1) == doctest::Approx(1.0));
    CHECK(h.drafter->relative_cost(3) == doctest::Approx(1.3));
  }

  TEST_CASE("drafts that always land and cheap verify passes -> it speculates the full k") {
    Harness h;
    for (int i = 0; i < 40; ++i) h.round();
    CHECK(h.drafter->choose_k(5) == 5);
    CHECK(h.round() == 5);
    CHECK(h.drafter->acceptance(1) > 0.9);
    CHECK(h.drafter->relative_cost(6) == doctest::Approx(1.5).epsilon(0.01));
  }

  TEST_CASE("deep drafts are scored even when only a prefix is sent -> it grows to the full k") {
    // With the prior a_i = 0.5 and this cost slope, one draft looks best at first. Only the
    // scoring of the unsent tail can show that deeper drafts land too.
    Harness h(0.25);
    h.cost = [](int w) { return 1.0 + 0.25 * (w - 1); };
    CHECK(h.round() == 1);
    for (int i = 0; i < 30; ++i) h.round();
    CHECK(h.drafter->acceptance(5) > 0.9);
    CHECK(h.round() == 5);
  }

  TEST_CASE("one round slowed by another process does not switch speculation off") {
    Harness h;
    for (int i = 0; i < 40; ++i) h.round();
    REQUIRE(h.drafter->choose_k(5) == 5);
    h.cost = [](int w) { return 50.0 * w; };
    h.round();
    h.cost = [](int w) { return 1.0 + 0.1 * (w - 1); };
    CHECK(h.drafter->choose_k(5) == 5);
  }

  TEST_CASE("drafts that never land -> it settles on plain decoding") {
    Harness h;
    h.inner->right = false;
    int drafted_late = 0;
    for (int i = 0; i < 60; ++i) {
      const int sent = h.round();
      if (i >= 20) drafted_late += sent;
    }
    CHECK(drafted_late == 0);
    CHECK(h.drafter->choose_k(5) == 0);
    CHECK(h.drafter->acceptance(1) < 0.1);
  }

  TEST_CASE(
      "verify passes that cost as much as plain steps -> no speculation even if drafts land") {
    Harness h;
    h.cost = [](int w) { return 1.0 * w; };
    for (int i = 0; i < 30; ++i) h.round();
    // E(k) <= k + 1, so k + 1 plain steps are never slower.
    CHECK(h.drafter->acceptance(1) > 0.9);
    CHECK(h.drafter->choose_k(5) == 0);
  }

  TEST_CASE("shadow drafts keep scoring while it decodes plainly -> speculation comes back") {
    Harness h;
    h.inner->right = false;
    for (int i = 0; i < 40; ++i) h.round();
    REQUIRE(h.drafter->choose_k(5) == 0);
    // The text becomes guessable: the drafts it now declines to send would have landed.
    h.inner->right = true;
    int sent = 0;
    for (int i = 0; i < 80; ++i) sent += h.round();
    CHECK(sent > 0);
    CHECK(h.drafter->choose_k(5) > 0);
  }

  TEST_CASE("a plain round now and then re-times t(1) even when speculation always wins") {
    Harness h;
    int plain_rounds = 0;
    for (int i = 0; i < 200; ++i) plain_rounds += h.round() == 0 ? 1 : 0;
    CHECK(plain_rounds >= 2);
    CHECK(plain_rounds <= 8);
  }

  TEST_CASE("speculation under the policy is lossless on the toy target") {
    for (ToyRegime regime : {ToyRegime::periodic, ToyRegime::markov, ToyRegime::random}) {
      CAPTURE(to_string(regime));
      ToyTargetConfig cfg;
      cfg.regime = regime;
      cfg.vocab_size = 4096;
      ToyTarget target(cfg);
      const std::vector<Token> prompt = target.make_prompt(16);
      DecodeConfig dc;
      dc.max_new_tokens = 300;
      dc.k = 5;
      const GenerationResult base = run_baseline(target, prompt, dc);
      AutoDrafter drafter(std::make_unique<PromptLookupDrafter>(2));
      const GenerationResult spec =
          run_speculative(target, drafter, greedy_verify_rule(), prompt, dc);
      CHECK(spec.tokens == base.tokens);
    }
  }

  TEST_CASE("bad configuration is refused with the field's name") {
    CHECK_THROWS_WITH_AS(AutoDrafter(nullptr), doctest::Contains("no inner drafter"),
                         std::invalid_argument);
    AutoPolicyConfig c;
    c.margin = 0;
    CHECK_THROWS_WITH_AS(AutoDrafter(std::make_unique<PromptLookupDrafter>(2), c),
                         doctest::Contains("margin"), std::invalid_argument);
  }
}
