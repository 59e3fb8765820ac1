// Lab 04 -- the per-token update. Chapter: book/lab04_ngram_pool.md
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "ngram_pool.h"
#include "pool_test_util.h"

using namespace speclab;
using namespace speclab::lab04_testing;

TEST_SUITE("lab04 / The per-token update") {
  TEST_CASE("a value shorter than v grows by the new token") {
    NGramPool pool(config(2, 3));
    const V tokens = {1, 2, 3, 4};
    pool.scan(std::span<const Token>(tokens).first(3));  // 1 2 3
    CHECK(pool.values(V{1}) == Values{{2, 3}});
    pool.update(tokens);  // 4 arrives
    CHECK(pool.values(V{1}) == Values{{2, 3, 4}});
    CHECK(pool.values(V{2}) == Values{{3, 4}});
    CHECK(pool.values(V{1, 2}) == Values{{3, 4}});
  }

  TEST_CASE("the new token becomes the value of the new keys") {
    NGramPool pool(config(2, 3));
    const V tokens = {1, 2, 3, 4};
    pool.scan(std::span<const Token>(tokens).first(3));
    CHECK(pool.values(V{3}) == Values{});
    pool.update(tokens);
    CHECK(pool.values(V{3}) == Values{{4}});
    CHECK(pool.values(V{2, 3}) == Values{{4}});
  }

  TEST_CASE("values stop growing at v tokens") {
    NGramPool pool(config(1, 2));
    const V tokens = {1, 2, 3, 4, 5};
    for (std::size_t end = 1; end <= tokens.size(); ++end) {
      pool.update(std::span<const Token>(tokens).first(end));
    }
    CHECK(pool.values(V{1}) == Values{{2, 3}});
    CHECK(pool.values(V{3}) == Values{{4, 5}});
    CHECK(pool.values(V{4}) == Values{{5}});
  }

  TEST_CASE("each new token costs exactly k times v pair updates however long the context is") {
    // k = 3, v = 5: once the context holds k + v - 1 = 7 tokens before the new one, every update
    // inserts 15 pairs: per key length, 4 values that grow and 1 new key.
    NGramPool pool(config(3, 5));
    const V tokens = random_stream(11, 6000, 50);
    std::vector<std::int64_t> cost;
    INFO(
        "see the chapter, 'The per-token update': only pairs whose value ends at the new token "
        "are updated, at most k * v = 15 of them");
    for (std::size_t end = 1; end <= tokens.size(); ++end) {
      CAPTURE(end);
      const auto before = pool.stats().pair_updates;
      pool.update(std::span<const Token>(tokens).first(end));
      cost.push_back(pool.stats().pair_updates - before);
      REQUIRE(cost.back() <= 15);  // stop at the first token that costs more than k * v
    }
    // The first tokens: sum over n <= position of min(v, position - n + 1).
    CHECK(std::vector<std::int64_t>(cost.begin(), cost.begin() + 8) ==
          std::vector<std::int64_t>{0, 1, 3, 6, 9, 12, 14, 15});
    // From then on every token costs exactly 15, at position 100 as at position 5999.
    const auto other =
        std::find_if(cost.begin() + 7, cost.end(), [](std::int64_t c) { return c != 15; });
    const std::ptrdiff_t first_other = other == cost.end() ? -1 : other - cost.begin();
    INFO(
        "the first position from 7 on whose token did not cost exactly 15 pair updates (-1: "
        "none); it cost ",
        other == cost.end() ? 15 : *other);
    CHECK(first_other == -1);
  }

  TEST_CASE("when t8 arrives after the 8-token scan, five pairs per key length end at it") {
    // The chapter's example ('The per-token update'): k = 3, v = 5, t0..t7 = 10..17 scanned, then
    // t8 = 18 arrives. For n = 1 the pool receives t3 -> t4..t8, t4 -> t5..t8, t5 -> t6 t7 t8,
    // t6 -> t7 t8 and the new t7 -> t8; likewise five pairs for n = 2 and five for n = 3.
    NGramPool pool(config(3, 5));
    const V tokens = {10, 11, 12, 13, 14, 15, 16, 17, 18};
    pool.scan(std::span<const Token>(tokens).first(8));
    const auto before = pool.stats().pair_updates;
    pool.update(tokens);
    INFO("see the chapter, 'The per-token update': when t8 arrives, k * v = 15 pairs");
    CHECK(pool.stats().pair_updates - before == 15);
    CHECK(pool.values(V{13}) == Values{{14, 15, 16, 17, 18}});
    CHECK(pool.values(V{14}) == Values{{15, 16, 17, 18}});
    CHECK(pool.values(V{15}) == Values{{16, 17, 18}});
    CHECK(pool.values(V{16}) == Values{{17, 18}});
    CHECK(pool.values(V{17}) == Values{{18}});
    CHECK(pool.values(V{12, 13}) == Values{{14, 15, 16, 17, 18}});
    CHECK(pool.values(V{16, 17}) == Values{{18}});
    CHECK(pool.values(V{11, 12, 13}) == Values{{14, 15, 16, 17, 18}});
    CHECK(pool.values(V{15, 16, 17}) == Values{{18}});
    INFO("t2's value was already v = 5 tokens long (t3..t7): it does not grow");
    CHECK(pool.values(V{12}) == Values{{13, 14, 15, 16, 17}});
  }

  TEST_CASE("token-by-token updates hold the same values as one scan") {
    for (bool keep_all : {true, false}) {
      for (std::uint64_t seed = 0; seed < 6; ++seed) {
        const V tokens = random_stream(seed, 300, 4 + static_cast<int>(seed));
        NGramPool scanned(config(3, 4, keep_all));
        scanned.scan(tokens);
        NGramPool incremental(config(3, 4, keep_all));
        incremental.scan(std::span<const Token>(tokens).first(20));
        for (std::size_t end = 21; end <= tokens.size(); ++end) {
          incremental.update(std::span<const Token>(tokens).first(end));
        }
        INFO("keep_all=", keep_all, " seed=", seed);
        REQUIRE(!contents(scanned).empty());  // two empty pools would agree, and test nothing
        // The first difference, not the two pools (printed whole, they fill screens), and only
        // for the first seed that differs.
        REQUIRE(first_difference(contents(incremental), contents(scanned)) == "none");
      }
    }
  }

  TEST_CASE("update rejects an empty token list") {
    NGramPool pool(config(2, 3));
    CHECK_THROWS_AS(pool.update(V{}), std::invalid_argument);
    pool.update(V{4});  // one token: nothing precedes it, so no pair
    CHECK(pool.num_keys() == 0);
  }

  TEST_CASE("update with a negative token id throws before it inserts any pair") {
    // k = 2, v = 3: update reads the last k + v = 5 tokens. In 1 -7 3 4 5 6 the -7 is the oldest
    // of them: only key length 2 reaches it (key -7 3, value 4 5 6), after key length 1 has
    // grown 3 -> 4 5 into 4 5 6. A check left to insert_pair comes too late.
    NGramPool pool(config(2, 3));
    pool.scan(V{1, 2, 3, 4, 5});
    const std::string before = state_text(pool);
    INFO(
        "check the ids update reads (the last k + v tokens) before its first insert_pair; the "
        "message names the id");
    CHECK_THROWS_WITH_AS(pool.update(V{1, 2, 3, 4, 5, -7}), doctest::Contains("-7"),
                         std::invalid_argument);
    CHECK(state_text(pool) == before);
    CHECK_THROWS_WITH_AS(pool.update(V{1, -7, 3, 4, 5, 6}), doctest::Contains("-7"),
                         std::invalid_argument);
    CHECK(state_text(pool) == before);
    CHECK_THROWS_WITH_AS(pool.update(V{-7}), doctest::Contains("-7"), std::invalid_argument);
    CHECK(state_text(pool) == before);
    INFO("after the refusals the pool updates as if they never happened");
    pool.update(V{1, 2, 3, 4, 5, 6});
    NGramPool scanned(config(2, 3));
    scanned.scan(V{1, 2, 3, 4, 5, 6});
    CHECK(first_difference(contents(pool), contents(scanned)) == "none");
  }

  TEST_CASE("a negative id before the last k + v tokens is no error: update never reads it") {
    // k = 2, v = 3: update reads the last k + v = 5 tokens. `twin` gets the same updates with the
    // tokens before those left out, so both insert the same pairs in the same order.
    NGramPool pool(config(2, 3)), twin(config(2, 3));
    pool.scan(V{1, 2, 3, 4, 5});
    twin.scan(V{1, 2, 3, 4, 5});
    INFO(
        "update checks the ids it reads (the last k + v tokens), not the ones before them (the "
        "header's contract): checking the whole context costs O(context) per token, so feeding "
        "a long reply token by token becomes quadratic");
    CHECK_NOTHROW(pool.update(V{-7, 1, 2, 3, 4, 5, 6}));
    twin.update(V{1, 2, 3, 4, 5, 6});
    CHECK_NOTHROW(pool.update(V{-7, 8, 1, 2, 3, 4, 5, 6, 7}));
    twin.update(V{2, 3, 4, 5, 6, 7});
    CHECK(state_text(pool) == state_text(twin));
    INFO("and both did update: 5 was the scan's last token, 6 and 7 followed it");
    CHECK(pool.values(V{5}) == Values{{6, 7}});
  }
}
