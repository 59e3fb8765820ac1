// `--drafter auto`: the policy speculates when measured acceptance pays for the measured cost
// of wider verify passes, and falls back to plain decoding when it does not.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "auto_drafter.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "prompt_lookup.h"

using namespace speclab;
using namespace speclab::cli;

namespace {

// Proposes whatever the test says the next tokens are, or a fixed wrong guess. Like a lab
// drafter that keeps state, it refuses a negative id in what it would take in (the prompt, the
// context, the round's emitted tokens) with std::invalid_argument naming the call.
class ScriptedDrafter final : public Drafter {
 public:
  std::string name() const override { return "scripted"; }
  void begin(std::span<const Token> prompt) override { refuse_negative(prompt, "begin"); }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    refuse_negative(context, "propose");
    ++calls;
    std::vector<Token> out;
    for (int i = 0; i < k; ++i) out.push_back(right ? truth(context.size() + i) : 999);
    return out;
  }
  void observe(std::span<const Token> /*context*/, const RoundRecord& round) override {
    refuse_negative(round.emitted, "observe");
  }
  static Token truth(size_t position) { return static_cast<Token>(position % 7); }
  bool right = true;
  int calls = 0;

 private:
  static void refuse_negative(std::span<const Token> ids, const std::string& call) {
    for (const Token id : ids) {
      if (id < 0) {
        throw std::invalid_argument("scripted::" + call + ": token id " + std::to_string(id));
      }
    }
  }
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
  // Runs after the verify pass, before observe() (a test's extra calls, its extra clock time).
  std::function<void()> before_observe;

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
    if (before_observe) before_observe();
    drafter->observe(context, r);
    return static_cast<int>(r.drafts.size());
  }
};

// What the policy shows: a_1..a_5, the relative cost of widths 2..6, its choice for 5 drafts
// and its round counts.
std::vector<double> policy_state(const AutoDrafter& d) {
  std::vector<double> state = d.alpha(5);
  for (int w = 2; w <= 6; ++w) state.push_back(d.relative_cost(w));
  state.push_back(d.choose_k(5));
  state.push_back(static_cast<double>(d.speculated_rounds()));
  state.push_back(static_cast<double>(d.plain_rounds()));
  return state;
}

// Twin harnesses run the same rounds on the same clock. In round 21, between its verify pass
// and observe(), `a` also gets `refused` (its context with a negative id appended), which must
// throw std::invalid_argument naming `call`, and both clocks move 0.5 s. Auto must be as it was
// right after the refusal, and the next 80 rounds (they include a plain round that re-times t(1))
// must go as they go for `b`, which never saw the call.
void check_refusal_changes_nothing(
    const std::string& call,
    const std::function<void(AutoDrafter&, std::span<const Token>)>& refused) {
  Harness a;
  Harness b;
  for (int i = 0; i < 20; ++i) REQUIRE(a.round() == b.round());
  a.before_observe = [&] {
    const std::vector<double> before = policy_state(*a.drafter);
    std::vector<Token> bad = a.context;
    bad.push_back(-3);
    CHECK_THROWS_WITH_AS(refused(*a.drafter, bad), doctest::Contains(("scripted::" + call).c_str()),
                         std::invalid_argument);
    CHECK(policy_state(*a.drafter) == before);
    a.clock += 0.5;
  };
  b.before_observe = [&] { b.clock += 0.5; };
  std::vector<int> sent_a{a.round()};
  std::vector<int> sent_b{b.round()};
  a.before_observe = nullptr;
  b.before_observe = nullptr;
  for (int i = 0; i < 80; ++i) {
    sent_a.push_back(a.round());
    sent_b.push_back(b.round());
  }
  CHECK(sent_a == sent_b);
  CHECK(policy_state(*a.drafter) == policy_state(*b.drafter));
}

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

  // The Drafter contract: a call the inner drafter refuses leaves auto as it was, and the
  // generation goes on (after a refused begin(), too).
  TEST_CASE("a begin() refused mid-generation -> the evidence, costs and later rounds are kept") {
    check_refusal_changes_nothing("begin",
                                  [](AutoDrafter& d, std::span<const Token> bad) { d.begin(bad); });
  }

  TEST_CASE("a refused propose() -> the evidence, costs and later rounds are kept") {
    check_refusal_changes_nothing(
        "propose", [](AutoDrafter& d, std::span<const Token> bad) { d.propose(bad, 5); });
  }

  TEST_CASE("a refused observe() -> the round's cost is not counted and later rounds are kept") {
    check_refusal_changes_nothing("observe", [](AutoDrafter& d, std::span<const Token> bad) {
      // A speculating round whose text holds a negative id.
      RoundRecord r;
      r.position = static_cast<std::int64_t>(bad.size()) - 1;
      r.drafts = {0};
      r.emitted = {bad.back()};
      d.observe(bad, r);
    });
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
