// Lab 02 -- the storages: counts, argmax, misses, back-off, seeding.
// Chapter: book/lab02_ngram_storage.md
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "mini_engine/sampling/rng.h"
#include "ngram_storage.h"
#include "storage_test_util.h"

using speclab::NGramStorage;
using speclab::OneLevelNGramStorage;
using speclab::Prediction;
using speclab::Token;
using speclab::lab02_testing::state_text;
using V = std::vector<Token>;

namespace {
// Records `next` after `context` once: the one-token form of update().
template <class S>
void see(S& s, const V& context, Token next) {
  s.update(context, V{next});
}
// Levels disagree on purpose. After these updates:
//   context length 3: (1 2 3) -> 7
//   context length 2: (2 3) -> 7 once, 8 twice            => 8
//   context length 1: (3) -> 7 once, 8 twice, 9 three times => 9
template <class S>
void feed_disagreeing_levels(S& s) {
  see(s, {1, 2, 3}, 7);
  see(s, {5, 2, 3}, 8);
  see(s, {5, 2, 3}, 8);
  for (int i = 0; i < 3; ++i) see(s, {0, 0, 3}, 9);
}
// Sends each refused update(context, next_tokens) to `s` alone: each must throw
// std::invalid_argument naming the -7 and leave `s` as its twin, which never got them.
template <class S>
void check_refused_updates(S& s, const S& twin, std::initializer_list<std::pair<V, V>> refused) {
  for (const auto& [context, next_tokens] : refused) {
    INFO("update(", context, ", ", next_tokens, ")");
    CHECK_THROWS_WITH_AS(s.update(context, next_tokens), doctest::Contains("-7"),
                         std::invalid_argument);
    CHECK(state_text(s) == state_text(twin));
  }
}
}  // namespace

TEST_SUITE("lab02 / Counting: one level") {
  TEST_CASE("counts every observed pair and predicts the most frequent next token") {
    OneLevelNGramStorage s(2);  // context: the last 1 token
    see(s, {5}, 2);
    see(s, {5}, 2);
    see(s, {5}, 1);
    INFO(
        "a context of exactly n - 1 = 1 token is long enough to count: context '5' saw 2 twice "
        "and 1 once");
    CHECK(s.count(V{5}, 1) == 1);
    CHECK(s.count(V{5}, 2) == 2);
    CHECK(s.count(V{5}, 3) == 0);
    INFO(
        "token 2 followed context '5' twice and token 1 once (most recently): the prediction is 2");
    CHECK(s.next_token(V{9, 5}) == Prediction{2, true, 1});
    CHECK(s.contexts() == 1);
    CHECK(s.size() == 2);
  }

  TEST_CASE("the argmax follows the counts as they change") {
    OneLevelNGramStorage s(2);
    see(s, {4}, 7);
    CHECK(s.next_token(V{4}) == Prediction{7, true, 1});
    see(s, {4}, 8);
    see(s, {4}, 8);
    {
      INFO("8 now has 2 counts against 7's one: the argmax must move to 8");
      CHECK(s.next_token(V{4}) == Prediction{8, true, 1});
    }
    see(s, {4}, 7);
    {
      INFO("7 and 8 are tied at 2: 8 got there first and keeps the top spot");
      CHECK(s.next_token(V{4}) == Prediction{8, true, 1});
    }
    see(s, {4}, 7);
    {
      INFO("7 now has 3 counts against 8's 2: the argmax must move to 7");
      CHECK(s.next_token(V{4}) == Prediction{7, true, 1});
    }
    OneLevelNGramStorage t(2);
    for (Token x : {7, 7, 8, 8}) see(t, {4}, x);
    {
      INFO(
          "7 7 8 8: 7 leads with 2 before 8 ties it at 2, so 7 keeps the top spot. Recording the "
          "leader itself must raise best_count too: left at 1, 8's second count looks like a lead");
      CHECK(t.next_token(V{4}) == Prediction{7, true, 1});
    }
  }

  TEST_CASE("equal counts: the token that reached the top count first keeps it") {
    // Sequence A B B A: counts go A=1 (A leads), B=1 (tie, A stays), B=2 (B leads), A=2 (tie,
    // B stays). The documented rule picks B -- not the first token seen, not the lower id, not
    // the latest one.
    OneLevelNGramStorage s(2);
    const Token a = 3, b = 9;
    for (Token t : {a, b, b, a}) see(s, {1}, t);
    INFO("see the chapter, 'Counting: one level': ties keep the earlier leader");
    CHECK(s.count(V{1}, a) == 2);
    CHECK(s.count(V{1}, b) == 2);
    CHECK(s.next_token(V{1}) == Prediction{b, true, 1});
    // A fresh tie at count 1: the first recorded token leads, even with the larger id.
    OneLevelNGramStorage t(2);
    see(t, {1}, 9);
    see(t, {1}, 3);
    CHECK(t.next_token(V{1}) == Prediction{9, true, 1});
  }

  TEST_CASE("one update with several tokens records them in order") {
    OneLevelNGramStorage s(2);
    s.update(V{2}, V{4, 6, 6});
    {
      INFO(
          "update(2, {4 6 6}) counts 4 once and 6 twice, all after the same context (2): the "
          "key does not slide along next_tokens");
      CHECK(s.count(V{2}, 4) == 1);
      CHECK(s.count(V{2}, 6) == 2);
      CHECK(s.next_token(V{2}) == Prediction{6, true, 1});
    }
    s.update(V{3}, V{8, 7});
    {
      INFO("8 and 7 both reach count 1; 8 got there first");
      CHECK(s.next_token(V{3}) == Prediction{8, true, 1});
    }
    s.update(V{5}, V{3, 9, 9, 3});
    {
      INFO("update(5, {3 9 9 3}) counts 3 twice and 9 twice, all after (5)");
      CHECK(s.count(V{5}, 3) == 2);
    }
    {
      INFO(
          "the tie-break holds within one update: A B B A gives B, which reached 2 first; "
          "move best as each token is counted, not after the whole update");
      CHECK(s.next_token(V{5}) == Prediction{9, true, 1});
    }
  }

  TEST_CASE("only the last n-1 tokens of the context are the key") {
    OneLevelNGramStorage s(3);
    see(s, {9, 9, 1, 2}, 7);
    CHECK(s.count(V{1, 2}, 7) == 1);
    CHECK(s.next_token(V{3, 1, 2}) == Prediction{7, true, 2});
    CHECK(s.next_token(V{1, 2}) == Prediction{7, true, 2});
    CHECK(s.next_token(V{2, 1}) == Prediction{});
    CHECK(s.contexts() == 1);
  }

  TEST_CASE("an update whose context is shorter than n-1 records nothing") {
    OneLevelNGramStorage s(3);
    {
      INFO("see the chapter, 'Counting: one level': a context shorter than n-1 has no key");
      s.update(V{1}, V{5});
      CHECK(s.size() == 0);
      CHECK(s.contexts() == 0);
      s.update(V{}, V{6});
      CHECK(s.size() == 0);
    }
    {
      INFO("a context of exactly n-1 = 2 tokens is long enough: (1 2) is recorded");
      s.update(V{1, 2}, V{5});
      CHECK(s.size() == 1);
    }
    INFO("NGramStorage records at the levels the context fits, and only those");
    NGramStorage m(4);
    m.update(V{7}, V{8});
    CHECK(m.size() == 1);
    CHECK(m.level(1).count(V{7}, 8) == 1);
    CHECK(m.level(2).size() == 0);
    CHECK(m.level(3).size() == 0);
  }

  TEST_CASE("a negative token id is rejected and nothing is recorded") {
    OneLevelNGramStorage s(2);
    CHECK_THROWS_AS(s.update(V{1}, V{5, -3}), std::invalid_argument);
    CHECK(s.size() == 0);
    {
      INFO(
          "no entry for the context either: a context is known only once a token was recorded "
          "after it (an empty entry made before the throw answers known with token -1)");
      CHECK(s.contexts() == 0);
      CHECK(s.next_token(V{1}) == Prediction{});
    }
    NGramStorage m(3);
    CHECK_THROWS_AS(m.update(V{1, 2}, V{5, -1}), std::invalid_argument);
    CHECK(m.size() == 0);

    INFO(
        "the ids are checked first, whatever the context: a context too short to record still "
        "throws (the header's contract for update)");
    OneLevelNGramStorage trigram(3);
    CHECK_THROWS_AS(trigram.update(V{1}, V{-5}), std::invalid_argument);
    CHECK_THROWS_AS(trigram.update(V{}, V{-5}), std::invalid_argument);
    CHECK_THROWS_AS(m.update(V{}, V{-5}), std::invalid_argument);
    CHECK(trigram.size() == 0);
    CHECK(m.size() == 0);
  }

  TEST_CASE("a negative token id in the context's key is rejected and nothing is recorded") {
    // A storage and its twin get the same updates; `s` also gets the ones that must throw.
    OneLevelNGramStorage s(3), twin(3);
    for (OneLevelNGramStorage* t : {&s, &twin}) {
      see(*t, {1, 2}, 3);
      see(*t, {2, 3}, 4);
    }
    INFO(
        "the context's last n-1 tokens are the key: a negative id among them throws "
        "std::invalid_argument naming it, before anything is recorded, whatever the lengths of "
        "the context and next_tokens (the header's contract for update)");
    check_refused_updates(s, twin,
                          {
                              {{1, -7}, {5}},     // the key's last token
                              {{4, -7, 2}, {5}},  // its first token, after one not in the key
                              {{-7}, {5}},  // a context shorter than n-1: nothing would be recorded
                              {{1, -7}, {}},  // no next tokens: nothing would be recorded either
                          });
    see(s, {1, 2}, 3);
    see(twin, {1, 2}, 3);
    CHECK(state_text(s) == state_text(twin));
  }

  TEST_CASE("a negative token id before the key is not read and the update records as usual") {
    // n = 3: the key is the context's last 2 tokens. `twin` gets the same updates with the
    // tokens before the key left out.
    OneLevelNGramStorage s(3), twin(3);
    INFO(
        "update reads the key and next_tokens only: the context's earlier tokens are not read, "
        "nor checked (the header's contract). Checking the whole context costs O(context) per "
        "update, so recording a long reply token by token becomes quadratic");
    CHECK_NOTHROW(s.update(V{-7, 1, 2}, V{3, 4}));
    twin.update(V{1, 2}, V{3, 4});
    CHECK_NOTHROW(s.update(V{-7, 5, 6, 1, 2}, V{3}));
    twin.update(V{1, 2}, V{3});
    CHECK(state_text(s) == state_text(twin));
    CHECK(s.next_token(V{-7, 1, 2}) == Prediction{3, true, 2});
  }
}

TEST_SUITE("lab02 / A miss is not a guess") {
  TEST_CASE("an empty storage knows nothing: known is false and no token is invented") {
    OneLevelNGramStorage one(3);
    NGramStorage multi(4);
    {
      INFO("a miss is exactly Prediction{} = {kNoToken, false, 0}; see 'A miss is not a guess'");
      for (const V& ctx : {V{}, V{1}, V{1, 2}, V{1, 2, 3}}) {
        INFO("context ", ctx);  // logged before the calls: a crash shows which context it was
        CHECK(one.next_token(ctx) == Prediction{});
        CHECK(multi.next_token(ctx) == Prediction{});
      }
    }
    INFO(
        "the same storages once seeded with 1 2 3 4 know (1 2) and (1 2 3): a miss must come from "
        "an empty table, not from a next_token that never answers");
    one.seed(V{1, 2, 3, 4});
    multi.seed(V{1, 2, 3, 4});
    CHECK(one.next_token(V{1, 2}) == Prediction{3, true, 2});
    CHECK(multi.next_token(V{1, 2, 3}) == Prediction{4, true, 3});
  }

  TEST_CASE("an unseen context and a context shorter than n-1 are misses") {
    OneLevelNGramStorage s(3);
    s.seed(V{1, 2, 3, 4});
    CHECK(s.next_token(V{1, 2}) == Prediction{3, true, 2});
    CHECK(s.next_token(V{4, 1}) == Prediction{});  // never seen
    CHECK(s.next_token(V{2}) == Prediction{});     // too short for a 2-token context
    CHECK(s.next_token(V{3, 4}) == Prediction{});  // the prompt ends there: nothing followed
    INFO("an update with no tokens records nothing: its context stays unknown");
    s.update(V{4, 1}, V{});
    CHECK(s.next_token(V{4, 1}) == Prediction{});
    {
      INFO(
          "seed(1 2 3 4) stores the contexts (1 2) and (2 3), each of n-1 = 2 tokens; the empty "
          "update adds none");
      CHECK(s.contexts() == 2);
    }
    NGramStorage m(3);
    m.update(V{4, 1}, V{});
    CHECK(m.next_token(V{4, 1}) == Prediction{});
    CHECK(m.size() == 0);
  }
}

TEST_SUITE("lab02 / Backing off: many levels") {
  TEST_CASE("the longest level that knows the context answers") {
    NGramStorage s(4);  // context lengths 1..3
    feed_disagreeing_levels(s);
    INFO("back off from the longest context to the shortest, and stop at the first hit");
    CHECK(s.next_token(V{1, 2, 3}) == Prediction{7, true, 3});
    CHECK(s.next_token(V{4, 2, 3}) == Prediction{8, true, 2});
    CHECK(s.next_token(V{4, 4, 3}) == Prediction{9, true, 1});
    CHECK(s.next_token(V{4, 4, 4}) == Prediction{});
  }

  TEST_CASE("every level records the observation with its own context length") {
    NGramStorage s(4);
    feed_disagreeing_levels(s);
    CHECK(s.level(3).count(V{1, 2, 3}, 7) == 1);
    CHECK(s.level(2).count(V{2, 3}, 8) == 2);
    CHECK(s.level(1).count(V{3}, 9) == 3);
    CHECK(s.level(1).count(V{3}, 7) == 1);
    CHECK(s.size() ==
          3 + 3 +
              3);  // pairs per level: (123)7 (523)8 (003)9 / (23)7 (23)8 (03)9 / 3 pairs after (3)
  }

  TEST_CASE("a short context is answered by the levels it fits") {
    NGramStorage s(4);
    feed_disagreeing_levels(s);
    CHECK(s.next_token(V{3}) == Prediction{9, true, 1});
    CHECK(s.next_token(V{2, 3}) == Prediction{8, true, 2});
  }

  TEST_CASE("min_context 2 stops back-off before one-token contexts (the seed code's floor)") {
    NGramStorage s(4, 2);
    feed_disagreeing_levels(s);
    CHECK(s.next_token(V{1, 2, 3}) == Prediction{7, true, 3});
    CHECK(s.next_token(V{4, 2, 3}) == Prediction{8, true, 2});
    {
      INFO("with min_context = 2 no level looks at a single token: (4 4 3) is a miss");
      CHECK(s.next_token(V{4, 4, 3}) == Prediction{});
      CHECK(s.next_token(V{3}) == Prediction{});
    }
    INFO("three pairs at each of the levels n = 3 and 4: a context of exactly n - 1 tokens counts");
    CHECK(s.size() == 3 + 3);
  }

  TEST_CASE("min_context 1 backs off to a single token (the default)") {
    NGramStorage s(3);
    CHECK(s.min_context() == 1);
    s.seed(V{6, 7});
    INFO(
        "min_context is inclusive: the one-token level is asked too, after (5 6) misses "
        "('Backing off: where to stop')");
    CHECK(s.next_token(V{5, 6}) == Prediction{7, true, 1});
    CHECK(s.next_token(V{6}) == Prediction{7, true, 1});
  }

  TEST_CASE("min_context n-1 behaves exactly like the one-level storage") {
    OneLevelNGramStorage one(3);
    NGramStorage multi(3, 2);
    std::vector<Token> text;
    for (std::uint64_t i = 0; i < 400; ++i) {
      text.push_back(static_cast<Token>(speclab::counter_hash(7, 0, i) % 6));
    }
    one.seed(std::span<const Token>(text).first(100));
    multi.seed(std::span<const Token>(text).first(100));
    // What both must know, besides agreeing: the 2-token contexts and the (context, next) pairs
    // the text so far holds.
    std::set<V> contexts_seen;
    std::set<V> triples_seen;
    const auto record = [&](std::size_t i) {  // text[i] after text[i-2] text[i-1]
      contexts_seen.insert(V{text[i - 2], text[i - 1]});
      triples_seen.insert(V{text[i - 2], text[i - 1], text[i]});
    };
    for (std::size_t i = 2; i < 100; ++i) record(i);
    for (std::size_t i = 100; i < text.size(); ++i) {
      const std::span<const Token> before = std::span<const Token>(text).first(i);
      INFO("after ", i, " tokens, the last two ", text[i - 2], " ", text[i - 1]);
      const Prediction p = multi.next_token(before);
      REQUIRE(p == one.next_token(before));
      {
        INFO(
            "the text so far holds this context, followed by something, exactly when it is known "
            "(the seed and every update must be recorded)");
        REQUIRE(p.known == contexts_seen.contains(V{text[i - 2], text[i - 1]}));
      }
      one.update(before, V{text[i]});
      multi.update(before, V{text[i]});
      record(i);
    }
    CHECK(multi.size() == one.size());
    INFO("size() is the number of distinct (2-token context, next token) pairs in the text");
    CHECK(one.size() == static_cast<std::int64_t>(triples_seen.size()));
  }

  TEST_CASE("invalid arguments are rejected with std::invalid_argument") {
    NGramStorage s(3);
    CHECK_THROWS_AS(speclab::draft(s, V{1}, -1, true), std::invalid_argument);
    CHECK_THROWS_AS(s.update(V{1}, V{-2}), std::invalid_argument);
    CHECK_THROWS_AS(OneLevelNGramStorage(1), std::invalid_argument);
    CHECK_THROWS_AS(NGramStorage(1), std::invalid_argument);
    CHECK_THROWS_AS(NGramStorage(3, 0), std::invalid_argument);
    CHECK_THROWS_AS(NGramStorage(3, 3), std::invalid_argument);
    CHECK_THROWS_AS(s.level(3), std::out_of_range);
  }

  TEST_CASE("a negative token id in a key the update reads throws before any level records") {
    // n = 4: the levels' keys are the last 1, 2 and 3 tokens of the context. In -7 1 2 only the
    // longest key holds the -7, and levels_ runs from the shortest level to the longest.
    NGramStorage s(4), twin(4);
    feed_disagreeing_levels(s);
    feed_disagreeing_levels(twin);
    INFO(
        "check the ids of the longest key (the last n-1 tokens of the context, or all of a shorter "
        "one) and of next_tokens before the first level records: a check left to each level "
        "comes after the shorter levels have recorded");
    check_refused_updates(s, twin,
                          {
                              {{-7, 1, 2}, {5}},     // the longest key only: shorter levels first
                              {{3, -7, 1, 2}, {5}},  // the same, after a token no key reads
                              {{1, -7}, {5}},        // the two keys that fit
                              {{-7}, {5}},           // one level fits
                              {{1, 2, -7}, {}},      // no next tokens: nothing would be recorded
                          });
    see(s, {1, 2, 3}, 7);
    see(twin, {1, 2, 3}, 7);
    CHECK(state_text(s) == state_text(twin));
  }

  TEST_CASE("a negative token id before the longest key is not read and every level records") {
    // n = 4: the longest key is the context's last 3 tokens, and it holds every shorter one.
    // `twin` gets the same updates with the tokens before it left out.
    NGramStorage s(4), twin(4);
    feed_disagreeing_levels(s);
    feed_disagreeing_levels(twin);
    INFO(
        "update reads the longest key and next_tokens only: the context's earlier tokens are not "
        "read, nor checked (the header's contract). Checking the whole context costs O(context) "
        "per update, so recording a long reply token by token becomes quadratic");
    CHECK_NOTHROW(s.update(V{-7, 1, 2, 3}, V{5, 6}));
    twin.update(V{1, 2, 3}, V{5, 6});
    CHECK_NOTHROW(s.update(V{-7, 4, 4, 0, 2, 3}, V{5}));
    twin.update(V{0, 2, 3}, V{5});
    CHECK(state_text(s) == state_text(twin));
    CHECK(s.next_token(V{-7, 1, 2, 3}) == Prediction{7, true, 3});
  }
}

TEST_SUITE("lab02 / Seeding from the prompt") {
  TEST_CASE("every n-gram of the prompt is recorded including the first and the last") {
    const V prompt = {5, 6, 7, 5, 6, 8};
    OneLevelNGramStorage s(3);
    s.seed(prompt);
    INFO("3-grams: (5 6)->7  (6 7)->5  (7 5)->6  (5 6)->8");
    CHECK(s.count(V{5, 6}, 7) == 1);
    CHECK(s.count(V{6, 7}, 5) == 1);
    CHECK(s.count(V{7, 5}, 6) == 1);
    CHECK(s.count(V{5, 6}, 8) == 1);
    CHECK(s.size() == 4);
    {
      INFO("(5 6) saw 7 and 8 once each: a tie at 1, and 7 came first");
      CHECK(s.next_token(V{5, 6}) == Prediction{7, true, 2});
    }

    NGramStorage m(3);
    m.seed(prompt);
    INFO("the multi-level storage also records the bigrams: 5->6 twice  6->7  7->5  6->8");
    CHECK(m.level(1).count(V{5}, 6) == 2);
    CHECK(m.level(1).count(V{6}, 8) == 1);
    CHECK(m.size() == 4 + 4);
    INFO("and each trigram once, as the one-level storage does");
    CHECK(m.level(2).count(V{5, 6}, 7) == 1);
    CHECK(m.level(2).count(V{5, 6}, 8) == 1);
  }

  TEST_CASE("a prompt shorter than n records only the levels it fits") {
    OneLevelNGramStorage s(3);
    s.seed(V{1, 2});
    CHECK(s.size() == 0);
    NGramStorage m(3);
    m.seed(V{1, 2});
    CHECK(m.size() == 1);
    CHECK(m.next_token(V{1}) == Prediction{2, true, 1});
    INFO("an empty prompt records nothing (a loop to prompt.size() - 1 wraps around in size_t)");
    OneLevelNGramStorage e(3);
    e.seed(V{});
    CHECK(e.size() == 0);
    NGramStorage me(3);
    me.seed(V{});
    CHECK(me.size() == 0);
  }

  TEST_CASE("a prompt with a negative token id throws and seeds nothing") {
    const V good = {1, 2, 3, 1, 2, 4};
    const V refused[] = {
        {-7, 1, 2, 3, 1},     // first: only ever in a key, never a next token
        {1, 2, 3, -7, 2, 3},  // middle: the n-grams before -7 would be recorded already
        {1, 2, 3, 1, -7},     // last
        {1, -7},              // shorter than n: the one-level storage would record nothing
        {-7},
    };
    for (const V& prompt : refused) {
      // Each storage and its twin seed the same good prompt; only the storage gets `prompt`.
      OneLevelNGramStorage one(3), one_twin(3);
      NGramStorage multi(4), multi_twin(4);
      one.seed(good);
      one_twin.seed(good);
      multi.seed(good);
      multi_twin.seed(good);
      INFO("seed(", prompt, ")");
      INFO(
          "a token id is never negative: seed throws std::invalid_argument naming it, however "
          "short the prompt, and records nothing. Check every id before the first n-gram: a "
          "check left to update() comes after the n-grams before the bad id are recorded");
      CHECK_THROWS_WITH_AS(one.seed(prompt), doctest::Contains("-7"), std::invalid_argument);
      CHECK(state_text(one) == state_text(one_twin));
      CHECK_THROWS_WITH_AS(multi.seed(prompt), doctest::Contains("-7"), std::invalid_argument);
      CHECK(state_text(multi) == state_text(multi_twin));
    }
  }
}
