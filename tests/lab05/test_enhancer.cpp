// Lab 05 -- the suffix automaton as an enhancer of another drafter.
// Chapter: book/lab05_suffix_automaton.md, "The automaton as an enhancer".
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "automaton_test_util.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "oracle.h"
#include "prompt_lookup.h"
#include "suffix_automaton.h"

using namespace speclab;
using namespace speclab::lab05_testing;

namespace {

// Always proposes 99 98 97 (cut to k) and counts how often it was asked.
class FixedDrafter final : public Drafter {
 public:
  std::string name() const override { return "fixed"; }
  std::vector<Token> propose(std::span<const Token> /*context*/, int k) override {
    ++calls;
    V d = {99, 98, 97};
    d.resize(std::min<std::size_t>(d.size(), static_cast<std::size_t>(k)));
    return d;
  }
  int calls = 0;
};

// Remembers every prompt begin() accepted and every context propose() and observe() got, and
// refuses (std::domain_error, before it changes anything) a prompt holding the token 99: an inner
// drafter with a rule of its own. Proposes nothing.
class Recorder final : public Drafter {
 public:
  std::string name() const override { return "recorder"; }
  void begin(std::span<const Token> prompt) override {
    if (std::find(prompt.begin(), prompt.end(), 99) != prompt.end()) {
      throw std::domain_error("recorder: refuses the token 99");
    }
    prompts.emplace_back(prompt.begin(), prompt.end());
  }
  std::vector<Token> propose(std::span<const Token> context, int /*k*/) override {
    contexts.emplace_back(context.begin(), context.end());
    return {};
  }
  void observe(std::span<const Token> context, const RoundRecord& /*round*/) override {
    contexts.emplace_back(context.begin(), context.end());
  }
  std::vector<V> prompts;
  std::vector<V> contexts;
};

// Passes every call on to `drafter` and counts the propose() calls: wrapped around the enhancer
// and around its inner drafter, the difference is the rounds the automaton drafted.
class CountingDrafter final : public Drafter {
 public:
  explicit CountingDrafter(std::shared_ptr<Drafter> drafter) : drafter_(std::move(drafter)) {}
  std::string name() const override { return drafter_->name(); }
  void begin(std::span<const Token> prompt) override { drafter_->begin(prompt); }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    ++asked;
    return drafter_->propose(context, k);
  }
  void observe(std::span<const Token> context, const RoundRecord& round) override {
    drafter_->observe(context, round);
  }
  int asked = 0;

 private:
  std::shared_ptr<Drafter> drafter_;
};

SuffixAutomaton build(const V& s) {
  SuffixAutomaton sa;
  for (Token t : s) sa.extend(t);
  return sa;
}

}  // namespace

TEST_SUITE("lab05 / The automaton as an enhancer") {
  TEST_CASE("a match of exactly threshold tokens switches to the automaton's draft") {
    const V ctx = {1, 2, 3, 4, 8, 1, 2, 3};  // longest earlier match: "1 2 3", length 3
    const SuffixAutomaton sa = build(ctx);
    REQUIRE(sa.longest_match().length == 3);
    FixedDrafter inner;
    INFO("see the chapter: the rule is match length >= threshold");
    CHECK(enhanced_propose(sa, inner, ctx, 3, 3) == V{4, 8, 1});
    const std::string not_asked =  // a std::string: doctest prints a `const char*` as an address
        "the automaton won, so the inner drafter must not be asked at all (its draft would be "
        "thrown away): call inner.propose only when the match is shorter than the threshold";
    CHECK_MESSAGE(inner.calls == 0, not_asked);
    CHECK(enhanced_propose(sa, inner, ctx, 3, 2) == V{4, 8, 1});
    CHECK_MESSAGE(inner.calls == 0, not_asked);
  }

  TEST_CASE("a match shorter than the threshold keeps the inner drafter's draft") {
    const V ctx = {1, 2, 3, 4, 8, 1, 2, 3};
    const SuffixAutomaton sa = build(ctx);
    FixedDrafter inner;
    CHECK(enhanced_propose(sa, inner, ctx, 3, 4) == V{99, 98, 97});
    CHECK(enhanced_propose(sa, inner, ctx, 2, 4) == V{99, 98});
    CHECK(inner.calls == 2);
    const SuffixAutomaton none = build(V{1, 2, 3});  // no match at all
    CHECK(enhanced_propose(none, inner, V{1, 2, 3}, 3, 1) == V{99, 98, 97});
  }

  TEST_CASE("the switch follows the match length token by token") {
    // Stream: the pattern 5 6 7 8 once, then again. As the second copy grows, the match grows
    // 1, 2, 3, 4: with threshold 3 the inner drafter drafts for the first two and the automaton
    // from the third on.
    const V s = {9, 5, 6, 7, 8, 0, 5, 6, 7, 8};
    FixedDrafter inner;
    SuffixAutomaton sa;
    std::vector<bool> automaton_won;
    std::vector<int> match_lengths;  // what this automaton's longest_match() says after token i
    for (std::size_t i = 0; i < s.size(); ++i) {
      sa.extend(s[i]);
      match_lengths.push_back(sa.longest_match().length);
      const int before = inner.calls;
      enhanced_propose(sa, inner, std::span<const Token>(s).first(i + 1), 2, 3);
      automaton_won.push_back(inner.calls == before);
    }
    INFO(
        "entry i: the automaton drafted after token i (the inner drafter was not asked); the"
        " threshold is 3, and the matches after tokens 6 to 9 should be 1, 2, 3, 4 long");
    INFO("longest_match().length after each token: ", match_lengths,
         " (should be {0, 0, 0, 0, 0, 0, 1, 2, 3, 4}: if not, look at extend or longest_match"
         " first)");
    CHECK(automaton_won ==
          std::vector<bool>{false, false, false, false, false, false, false, false, true, true});
  }

  TEST_CASE("a bad threshold or k is rejected with std::invalid_argument") {
    const SuffixAutomaton sa = build(V{1, 1});
    FixedDrafter inner;
    CHECK_THROWS_AS(enhanced_propose(sa, inner, V{1, 1}, 3, 0), std::invalid_argument);
    CHECK_THROWS_AS(enhanced_propose(sa, inner, V{1, 1}, 0, 2), std::invalid_argument);
    INFO("'1' repeats, a match of 1: with threshold 1 the automaton would win, k = 0 still throws");
    CHECK_THROWS_AS(enhanced_propose(sa, inner, V{1, 1}, 0, 1), std::invalid_argument);
    INFO("no match at all: the inner drafter would answer, the arguments are still checked first");
    const SuffixAutomaton none = build(V{1, 2, 3});
    CHECK_THROWS_AS(enhanced_propose(none, inner, V{1, 2, 3}, 3, 0), std::invalid_argument);
    CHECK_THROWS_AS(enhanced_propose(none, inner, V{1, 2, 3}, 0, 2), std::invalid_argument);
  }

  TEST_CASE(
      "the enhancer's begin refuses a prompt with a negative token id and keeps its generation") {
    // Both enhancers get the same calls; `d` also gets the ones that must throw.
    auto inner = std::make_shared<Recorder>();
    SuffixEnhancerDrafter d(inner, 2), twin(std::make_shared<Recorder>(), 2);
    const TwinGeneration gen;
    gen.start(d, twin);
    {
      INFO(
          "a negative id: SuffixEnhancerDrafter::begin (the header's glue) checks every id before "
          "the automaton or the inner drafter sees the prompt");
      for (const V& bad : {V{4, 5, 6, -7}, V{-7, 4, 5, 6}, V{1, 2, 3, -7}}) {
        CAPTURE(bad);
        CHECK_THROWS_WITH_AS(d.begin(bad), doctest::Contains("-7"), std::invalid_argument);
        CHECK(state_text(d.automaton()) == state_text(twin.automaton()));
        CHECK(inner->prompts == std::vector<V>{gen.prompt});
      }
    }
    {
      INFO(
          "a prompt the inner drafter refuses: the inner drafter begins first, so the automaton is "
          "rebuilt only once the inner drafter took the prompt");
      CHECK_THROWS_AS(d.begin(V{4, 5, 99}), std::domain_error);
      CHECK(state_text(d.automaton()) == state_text(twin.automaton()));
    }
    const V draft = d.propose(gen.context, 3);
    CHECK(draft == twin.propose(gen.context, 3));
    INFO(
        "the kept generation answers from its automaton: 1 2 3 1 (a match of 4, threshold 2) first "
        "ended at 3, then 2 3 1");
    CHECK(draft == gen.draft);
  }

  TEST_CASE(
      "the enhancer's propose and observe refuse a context with a negative token id and keep its "
      "automaton") {
    // Both enhancers get the same calls; `d` also gets the ones that must throw.
    auto inner = std::make_shared<Recorder>();
    SuffixEnhancerDrafter d(inner, 2), twin(std::make_shared<Recorder>(), 2);
    const TwinGeneration gen;
    gen.start(d, twin);
    const std::vector<V> seen = inner->contexts;  // the round TwinGeneration observed
    INFO(
        "a refused context leaves the automaton as it was and never reaches the inner drafter: "
        "the enhancer's propose and observe (the header's glue, sync_automaton) check the ids "
        "they are about to feed before they clear or extend the automaton");
    check_refused_contexts(d, twin, "SuffixEnhancerDrafter",
                           [&] { CHECK(inner->contexts == seen); });
  }

  TEST_CASE("the enhanced prompt-lookup drafter is lossless on the toy target") {
    for (ToyRegime regime : {ToyRegime::periodic, ToyRegime::markov}) {
      for (std::uint64_t seed = 0; seed < 4; ++seed) {
        ToyTargetConfig cfg;
        cfg.regime = regime;
        cfg.seed = seed;
        cfg.vocab_size = 64;
        cfg.period = 10;
        cfg.noise = 0.1;
        ToyTarget target(cfg);
        const V prompt = target.make_prompt(12);
        DecodeConfig dc;
        dc.max_new_tokens = 150;
        dc.k = 5;
        const auto base = run_baseline(target, prompt, dc);
        auto inner = std::make_shared<CountingDrafter>(std::make_shared<PromptLookupDrafter>(2));
        CountingDrafter enhanced(std::make_shared<SuffixEnhancerDrafter>(inner, 4));
        const auto spec = run_speculative(target, enhanced, greedy_verify_rule(), prompt, dc);
        INFO("regime=", to_string(regime), " seed=", seed);
        REQUIRE(spec.tokens == base.tokens);
        // Lossless is free for a drafter that never drafts: the enhancer must also draft, from
        // the automaton in some rounds and from prompt lookup in the others, and be right at
        // times. (The reference: the automaton drafts in 12 to 31 of 56 to 79 rounds, and 70 to
        // 94 draft tokens are accepted.)
        INFO("rounds: ", enhanced.asked,
             ", of which prompt lookup (the inner drafter) was asked in ", inner->asked,
             "; draft tokens accepted: ", spec.stats.accepted);
        CHECK_MESSAGE(inner->asked < enhanced.asked,
                      "the automaton never drafted: a repeat of 4 tokens or more (the threshold) "
                      "must get the automaton's draft, without asking the inner drafter");
        CHECK_MESSAGE(inner->asked > 0,
                      "the inner drafter was never asked: a match shorter than the threshold "
                      "must get prompt lookup's draft");
        CHECK_MESSAGE(spec.stats.accepted > 0,
                      "no draft token was accepted: the drafts should often be right on this "
                      "repetitive text");
      }
    }
  }
}
