// Lab 02 -- drafting from a storage and learning from verified rounds.
// Chapter: book/lab02_ngram_storage.md
#include <doctest/doctest.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "ngram_storage.h"
#include "storage_test_util.h"

using speclab::draft;
using speclab::NGramDrafter;
using speclab::NGramDrafterConfig;
using speclab::NGramStorage;
using speclab::OneLevelNGramStorage;
using speclab::RoundRecord;
using speclab::Token;
using speclab::lab02_testing::state_text;
using V = std::vector<Token>;

TEST_SUITE("lab02 / Drafting: chaining predictions") {
  TEST_CASE("each draft token is predicted from the context plus the draft so far") {
    OneLevelNGramStorage s(2);
    s.seed(V{1, 2, 3, 4});
    {
      INFO(
          "2 -> 3, then 3 -> 4: a draft that keeps predicting from the context alone "
          "gives 3 3");
      CHECK(draft(s, V{9, 1, 2}, 2, true) == V{3, 4});
    }
    NGramStorage m(3);
    m.seed(V{1, 2, 3, 4, 1, 2, 3, 4});
    {
      INFO(
          "(7 2) was never seen, so (2) -> 3 answers; then (2 3) -> 4, (3 4) -> 1, "
          "(4 1) -> 2, (1 2) -> 3, five tokens for gamma 5");
      CHECK(draft(m, V{7, 2}, 5, true) == V{3, 4, 1, 2, 3});
    }
  }

  TEST_CASE("a chained draft can use a longer context than the original one had") {
    // The context (9 1) is unknown at length 2; the multi-level storage backs off to (1) -> 2,
    // and the next prediction already has the 2-token context (1 2) -> 5, which beats (2) -> 6.
    NGramStorage m(3);
    m.seed(V{1, 2, 5, 0, 2, 6, 0, 2, 6});
    {
      INFO("the storage itself first: (2) was followed by 5 once and 6 twice");
      CHECK(m.next_token(V{2}).token == 6);
    }
    {
      INFO(
          "(9 1) is unknown, so (1) -> 2; then the context ends 1 2, and the longest "
          "level, (1 2) -> 5, answers before (2) -> 6");
      CHECK(draft(m, V{9, 1}, 2, true) == V{2, 5});
    }
  }

  TEST_CASE("stop_if_unknown ends the draft at the first miss") {
    OneLevelNGramStorage s(2);
    s.seed(V{1, 2, 3});  // 1->2, 2->3, and nothing ever followed 3
    INFO(
        "after 2 3 the storage has nothing for 3: stop there (each prediction reads the draft "
        "so far: (1) -> 2, then (2) -> 3; a draft that repeats 2 2 ... is still reading (1))");
    CHECK(draft(s, V{1}, 5, true) == V{2, 3});
    CHECK(draft(s, V{3}, 5, true) == V{});
    INFO(
        "any gamma >= 0 is allowed, and it is a limit, not a length: gamma = INT_MAX still stops "
        "at the first miss (room reserved for gamma tokens is 8 GB)");
    CHECK(draft(s, V{1}, std::numeric_limits<int>::max(), true) == V{2, 3});
  }

  TEST_CASE(
      "without stop_if_unknown a miss is padded with the previous token and chaining goes on") {
    OneLevelNGramStorage s(2);
    s.seed(V{1, 2, 3});
    CHECK(draft(s, V{1}, 5, false) == V{2, 3, 3, 3, 3});
    // With a 2-token context the pad can lead back to known text: (4 2) is unknown, so pad 2;
    // then (2 2) -> 8 was seen.
    OneLevelNGramStorage t(3);
    t.seed(V{2, 2, 8});
    CHECK(draft(t, V{4, 2}, 3, false) == V{2, 8, 8});
  }

  TEST_CASE("gamma 0 or a storage with nothing to say gives an empty draft") {
    NGramStorage empty(3);
    CHECK(draft(empty, V{1, 2}, 4, true) == V{});
    CHECK(draft(empty, V{1, 2}, 0, false) == V{});
    {
      INFO("padding without a single known token repeats the last context token");
      CHECK(draft(empty, V{1, 2}, 3, false) == V{2, 2, 2});
    }
    INFO("an empty context has no token to pad with: the draft ends, as with stop_if_unknown");
    CHECK(draft(empty, V{}, 3, false) == V{});
  }
}

TEST_SUITE("lab02 / Learning from verified text") {
  TEST_CASE("updates after a round change later drafts") {
    NGramDrafter d({.n = 2});
    const V prompt = {1, 2, 3};
    d.begin(prompt);
    CHECK(d.propose(prompt, 3) == V{});  // nothing ever followed 3
    // The target emitted 9 after 3 (a correction, say): the drafter must learn 3 -> 9.
    V context = {1, 2, 3, 9};
    RoundRecord r;
    r.position = 3;
    r.emitted = {9};
    d.observe(context, r);
    context.insert(context.end(), {1, 2, 3});
    INFO("see the chapter, 'Learning from verified text'");
    {
      INFO("3 -> 9 was observed, and nothing ever followed 9: the draft is 9, then a miss");
      CHECK(d.propose(context, 3) == V{9});
    }
    // Two more rounds say 3 -> 5: the majority changes the draft.
    for (int i = 0; i < 2; ++i) {
      RoundRecord again;
      again.position = static_cast<std::int64_t>(context.size());
      again.emitted = {5};
      context.push_back(5);
      d.observe(context, again);
      context.push_back(3);
    }
    CHECK(d.storage().next_token(V{3}).token == 5);
    CHECK(d.propose(V{3}, 1) == V{5});
  }

  TEST_CASE("every emitted token of a round is recorded after the text before it") {
    NGramDrafter d({.n = 3});
    d.begin(V{4, 5});
    const V context = {4, 5, 6, 7, 8};
    RoundRecord r;
    r.position = 2;
    r.drafts = {6, 7, 1};
    r.accepted = 2;
    r.emitted = {6, 7, 8};
    d.observe(context, r);
    const auto& s = dynamic_cast<const NGramStorage&>(d.storage());
    CHECK(s.level(2).count(V{4, 5}, 6) == 1);
    CHECK(s.level(2).count(V{5, 6}, 7) == 1);
    CHECK(s.level(2).count(V{6, 7}, 8) == 1);
    CHECK(s.level(2).count(V{6, 7}, 1) == 0);  // the rejected draft is not text
    CHECK(s.size() == 1 + 3 + 3);              // seed (4->5) + 3 pairs at each level
  }

  TEST_CASE("begin forgets the previous generation and seeds the new prompt") {
    NGramDrafter d({.n = 2});
    d.begin(V{1, 2});
    INFO(
        "(1) -> 2, and nothing followed 2: a draft of one token (your draft() with "
        "stop_if_unknown), whatever begin did");
    CHECK(d.propose(V{1}, 2) == V{2});
    d.begin(V{7, 8});
    CHECK(d.propose(V{1}, 2) == V{});
    CHECK(d.propose(V{7}, 2) == V{8});
    CHECK(d.storage().size() == 1);
  }

  TEST_CASE("begin refuses a prompt with a negative token id and keeps its generation") {
    for (const NGramDrafterConfig& c :
         {NGramDrafterConfig{.n = 3, .one_level = true}, NGramDrafterConfig{.n = 3}}) {
      // Both drafters get the same calls; `d` also gets the ones that must throw.
      NGramDrafter d(c), twin(c);
      INFO(d.name());
      const V prompt = {1, 2, 3, 1, 2};
      d.begin(prompt);
      twin.begin(prompt);
      RoundRecord r;
      r.position = 5;
      r.emitted = {4, 1};
      const V context = {1, 2, 3, 1, 2, 4, 1};
      d.observe(context, r);
      twin.observe(context, r);
      INFO(
          "a refused begin() keeps the generation that was running, its storage as it was: "
          "your seed() must throw naming the id before it records anything");
      CHECK_THROWS_WITH_AS(d.begin(V{4, 5, 6, -7}), doctest::Contains("-7"), std::invalid_argument);
      CHECK_THROWS_WITH_AS(d.begin(V{-7, 4, 5, 6}), doctest::Contains("-7"), std::invalid_argument);
      CHECK(state_text(d.storage()) == state_text(twin.storage()));
      CHECK(d.propose(context, 4) == twin.propose(context, 4));
    }
  }

  TEST_CASE("observe refuses a round with a negative token id and records none of it") {
    for (const NGramDrafterConfig& c :
         {NGramDrafterConfig{.n = 3, .one_level = true}, NGramDrafterConfig{.n = 3}}) {
      // Both drafters get the same calls; `d` also gets the ones that must throw.
      NGramDrafter d(c), twin(c);
      INFO(d.name());
      d.begin(V{1, 2, 3, 1, 2});
      twin.begin(V{1, 2, 3, 1, 2});
      struct Refused {
        V context;
        int position;  // round.position: where the emitted tokens start
        int bad;       // where the -7 is
      };
      const Refused refused[] = {
          {{1, 2, 3, 1, 2, 5, -7}, 5, 6},  // the second emitted token: 5 would be recorded first
          {{1, 2, 3, 1, -7, 5, 6}, 5, 4},  // in the first emitted token's key
          {{1, 2, 3, 1, 2, -7}, 5, 5},     // the only emitted token
      };
      INFO(
          "the drafter's observe (the header's glue) checks the round's tokens and the key before "
          "the first, and records nothing when one is negative");
      for (const auto& [context, position, bad] : refused) {
        CAPTURE(context);
        RoundRecord r;
        r.position = position;
        r.emitted.assign(context.begin() + position, context.end());
        const std::string want = "NGramDrafter::observe: token id -7 at position " +
                                 std::to_string(bad) + " is negative";
        CHECK_THROWS_WITH_AS(d.observe(context, r), want.c_str(), std::invalid_argument);
        CHECK(state_text(d.storage()) == state_text(twin.storage()));
      }
      const V good = {1, 2, 3, 1, 2, 3};
      CHECK(d.propose(good, 4) == twin.propose(good, 4));
      // A valid round after the refused ones is recorded as usual: 5 after (1 2), 6 after (2 5).
      const V valid = {1, 2, 3, 1, 2, 5, 6};
      RoundRecord ok;
      ok.position = 5;
      ok.emitted = {5, 6};
      d.observe(valid, ok);
      INFO(
          "after the refusals, a valid round is recorded like any other: (2 5) -> 6 is known, "
          "from the longest context (your update() records what observe() hands it)");
      CHECK(d.storage().next_token(V{2, 5}) == speclab::Prediction{6, true, 2});
      CHECK(d.propose(V{1, 2, 5}, 1) == V{6});
    }
  }
}
