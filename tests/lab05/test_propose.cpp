// Lab 05 -- proposing from the match, and the longest match against a fixed n.
// Chapter: book/lab05_suffix_automaton.md
#include <doctest/doctest.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
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
SuffixAutomaton build(const V& s) {
  SuffixAutomaton sa;
  for (Token t : s) sa.extend(t);
  return sa;
}
}  // namespace

TEST_SUITE("lab05 / Proposing from the match") {
  TEST_CASE("proposes the tokens that followed the first occurrence of the longest match") {
    // "1 2 3" first ends at index 2 (followed by 7 8), again at index 7 (followed by 9).
    const V s = {1, 2, 3, 7, 8, 1, 2, 3, 9, 4, 1, 2, 3};
    const SuffixAutomaton sa = build(s);
    CHECK(sa.longest_match() == SuffixMatch{3, 2});
    CHECK(sa.propose(3, 1) == V{7, 8, 1});
    CHECK(sa.propose(1, 1) == V{7});
  }

  TEST_CASE("proposals match the brute-force oracle on every prefix") {
    const std::pair<const char*, V> streams[] = {
        {"random (seed 7, alphabet 3)", random_stream(7, 250, 3)},
        {"periodic (seed 8, period 5)", periodic_stream(8, 200, 5)},
        {"mixed (seed 9)", mixed_stream(9, 300)}};
    for (const auto& [name, s] : streams) {
      const std::string stream_name = name;  // a std::string: doctest prints a char* as an address
      INFO("stream: ", stream_name);
      SuffixAutomaton sa;
      V prefix;
      for (Token t : s) {
        sa.extend(t);
        prefix.push_back(t);
        for (int k : {1, 4}) {
          for (int min_match : {1, 3}) {
            INFO("prefix length ", prefix.size(), " k=", k, " min_match=", min_match);
            INFO("oracle's match: ", brute_longest_match(prefix),
                 "; longest_match(): ", sa.longest_match());
            REQUIRE(sa.propose(k, min_match) == brute_propose(prefix, k, min_match));
          }
        }
      }
    }
  }

  TEST_CASE("a match of exactly min_match tokens proposes and a shorter one does not") {
    const SuffixAutomaton sa = build(V{4, 5, 6, 9, 4, 5});  // longest match "4 5", length 2
    CHECK(sa.longest_match().length == 2);
    INFO("min_match is inclusive: a match of min_match tokens is long enough");
    CHECK(sa.propose(2, 1) == V{6, 9});
    CHECK(sa.propose(2, 2) == V{6, 9});
    CHECK(sa.propose(2, 3) == V{});
  }

  TEST_CASE("a proposal near the end of the stream is cut there") {
    const SuffixAutomaton sa = build(V{3, 3, 3});  // "3 3" first ends at 1: only one token follows
    CHECK(sa.propose(5, 1) == V{3});
    INFO("any k >= 0 is allowed: INT_MAX is cut at the end too (end + 1 + k overflows an int)");
    CHECK(sa.propose(std::numeric_limits<int>::max(), 1) == V{3});
  }

  TEST_CASE("the drafter follows its context and rebuilds when the context does not extend it") {
    SuffixAutomatonDrafter drafter(2);
    drafter.begin(V{1, 2, 3, 1, 2});
    CHECK(drafter.propose(V{1, 2, 3, 1, 2}, 3) == V{3, 1, 2});
    CHECK(drafter.propose(V{1, 2, 3, 1, 2, 3}, 2) == V{1, 2});  // one more token: extended
    CHECK(drafter.automaton().size() == 6);
    CHECK(drafter.propose(V{7, 8, 7}, 3) == V{});  // a different context: rebuilt, match of 1
    CHECK(drafter.automaton().size() == 3);
    drafter.begin(V{4, 4, 4});  // a new generation starts from its own prompt
    CHECK(drafter.propose(V{4, 4, 4}, 3) == V{4});
  }

  TEST_CASE(
      "the drafter's begin refuses a prompt with a negative token id and keeps its generation") {
    // Both drafters get the same calls; `d` also gets the ones that must throw.
    SuffixAutomatonDrafter d(2), twin(2);
    const TwinGeneration gen;
    gen.start(d, twin);
    INFO(
        "a refused begin() keeps the generation that was running, its automaton as it was: "
        "SuffixAutomatonDrafter::begin (the header's glue) checks every id before it clears the "
        "automaton");
    for (const V& bad : {V{4, 5, 6, -7}, V{-7, 4, 5, 6}, V{1, 2, 3, -7}, V{-7}}) {
      CAPTURE(bad);
      CHECK_THROWS_WITH_AS(d.begin(bad), doctest::Contains("-7"), std::invalid_argument);
      CHECK(state_text(d.automaton()) == state_text(twin.automaton()));
    }
    const V draft = d.propose(gen.context, 3);
    CHECK(draft == twin.propose(gen.context, 3));
    INFO("the kept generation answers from its automaton: 1 2 3 1 first ended at 3, then 2 3 1");
    CHECK(draft == gen.draft);
  }

  TEST_CASE(
      "the drafter's propose and observe refuse a context with a negative token id and keep its "
      "automaton") {
    // Both drafters get the same calls; `d` also gets the ones that must throw.
    SuffixAutomatonDrafter d(2), twin(2);
    const TwinGeneration gen;
    gen.start(d, twin);
    INFO(
        "a refused context leaves the automaton as it was: the drafter's propose and observe (the "
        "header's glue, sync_automaton) check the ids they are about to feed before they clear or "
        "extend it");
    check_refused_contexts(d, twin, "SuffixAutomatonDrafter", [] {});
  }

  TEST_CASE("with a draft ratio the drafter proposes at most ratio x match length tokens") {
    // "1 2" first ends at index 1; nine tokens follow it there.
    const V two{1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2};
    const V three{1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3};  // "1 2 3": a match of 3
    SuffixAutomatonDrafter plain(2);
    plain.begin(two);
    CHECK(plain.propose(two, 8) == V{3, 4, 5, 6, 7, 8, 9, 1});
    SuffixAutomatonDrafter one(2, 1), twice(2, 2);
    one.begin(two);
    twice.begin(two);
    INFO("a 2-token match: at most 2 (ratio 1) or 4 (ratio 2) tokens");
    CHECK(one.propose(two, 8) == V{3, 4});
    CHECK(twice.propose(two, 8) == V{3, 4, 5, 6});
    CHECK(twice.propose(two, 3) == V{3, 4, 5});  // k still caps it
    INFO("a 3-token match: at most 6 with ratio 2");
    CHECK(twice.propose(three, 8) == V{4, 5, 6, 7, 8, 9});
    INFO("min_match still comes first");
    SuffixAutomatonDrafter strict(3, 2);
    strict.begin(two);
    CHECK(strict.propose(two, 8) == V{});
    CHECK(strict.propose(three, 8) == V{4, 5, 6, 7, 8, 9});
    CHECK(plain.name() == "sa(min_match=2)");
    CHECK(twice.name() == "sa(min_match=2, draft_ratio=2)");
    CHECK_THROWS_AS(SuffixAutomatonDrafter(2, -1), std::invalid_argument);
  }

  TEST_CASE("k = 0 proposes nothing and a bad k or min_match throws") {
    const SuffixAutomaton sa = build(V{1, 2, 1, 2});
    CHECK(sa.propose(0, 1) == V{});
    CHECK_THROWS_AS(sa.propose(-1, 1), std::invalid_argument);
    CHECK_THROWS_AS(sa.propose(2, 0), std::invalid_argument);
    INFO("the arguments are checked before the k = 0 shortcut");
    CHECK_THROWS_AS(sa.propose(0, 0), std::invalid_argument);
    for (const V& stream : {V{}, V{1, 2, 3}}) {
      CAPTURE(stream);
      INFO("and before the no-match shortcut: a stream with no repeat has no match at all");
      const SuffixAutomaton none = build(stream);
      CHECK_THROWS_AS(none.propose(-1, 1), std::invalid_argument);
      CHECK_THROWS_AS(none.propose(2, 0), std::invalid_argument);
    }
  }
}

TEST_SUITE("lab05 / Longest match versus a fixed n") {
  TEST_CASE(
      "prompt lookup follows the latest short match where the automaton follows the long one") {
    // "1 2 3 4 5 6" was followed by 10 11 12. Later "5 6" alone was followed by 20 21 22.
    const V ctx = {1, 2, 3, 4, 5, 6, 10, 11, 12, 7, 5, 6, 20, 21, 22, 8, 1, 2, 3, 4, 5, 6};
    INFO("fixed n = 2 sees only '5 6' and copies its latest continuation");
    CHECK(ngram_propose(ctx, 2, 3) == V{20, 21, 22});
    const SuffixAutomaton sa = build(ctx);
    INFO("the automaton matches all six tokens and copies what followed them");
    CHECK(sa.longest_match().length == 6);
    CHECK(sa.propose(3, 1) == V{10, 11, 12});
  }

  TEST_CASE("a fixed n longer than the repeat finds nothing where the automaton finds it") {
    const V ctx = {1, 2, 9, 5, 7, 1, 2};
    CHECK(ngram_propose(ctx, 3, 3) == V{});  // "7 1 2" never occurred before
    const SuffixAutomaton sa = build(ctx);
    CHECK(sa.longest_match() == SuffixMatch{2, 1});
    CHECK(sa.propose(3, 1) == V{9, 5, 7});
  }

  TEST_CASE("the automaton drafter is lossless on the toy target") {
    for (ToyRegime regime : {ToyRegime::periodic, ToyRegime::markov, ToyRegime::random}) {
      for (std::uint64_t seed = 0; seed < 4; ++seed) {
        ToyTargetConfig cfg;
        cfg.regime = regime;
        cfg.seed = seed;
        cfg.period = 9;
        cfg.vocab_size = regime == ToyRegime::random ? 4096 : 64;
        ToyTarget target(cfg);
        const V prompt = target.make_prompt(12);
        DecodeConfig dc;
        dc.max_new_tokens = 150;
        dc.k = 6;
        const auto base = run_baseline(target, prompt, dc);
        SuffixAutomatonDrafter drafter(1);
        const auto spec = run_speculative(target, drafter, greedy_verify_rule(), prompt, dc);
        INFO("regime=", to_string(regime), " seed=", seed);
        REQUIRE(spec.tokens == base.tokens);
        if (regime == ToyRegime::periodic) CHECK(spec.stats.tokens_per_run() > 4.0);
        if (regime == ToyRegime::random) CHECK(spec.stats.accepted == 0);
      }
    }
  }
}
