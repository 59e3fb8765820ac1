// Lab 04 -- lookup. Chapter: book/lab04_ngram_pool.md
#include <doctest/doctest.h>

#include <span>
#include <stdexcept>
#include <vector>

#include "ngram_pool.h"
#include "pool_test_util.h"

using namespace speclab;
using namespace speclab::lab04_testing;

TEST_SUITE("lab04 / Lookup") {
  TEST_CASE("the longest matching key wins over a shorter one") {
    NGramPool pool(config(3, 4));
    pool.insert_pair(V{9}, V{1, 1});
    pool.insert_pair(V{8, 9}, V{2, 2});
    pool.insert_pair(V{7, 8, 9}, V{3, 3});
    INFO("try the last k tokens first, then shorter keys");
    CHECK(pool.lookup(V{7, 8, 9}, 4) == V{3, 3});
    CHECK(pool.lookup(V{0, 8, 9}, 4) == V{2, 2});
    CHECK(pool.lookup(V{0, 0, 9}, 4) == V{1, 1});
  }

  TEST_CASE("a key longer than k is never tried and a short context tries fewer lengths") {
    NGramPool pool(config(2, 4));
    pool.insert_pair(V{9}, V{1});
    pool.insert_pair(V{8, 9}, V{2});
    CHECK(pool.lookup(V{6, 7, 8, 9}, 4) == V{2});
    CHECK(pool.lookup(V{9}, 4) == V{1});
    {
      INFO(
          "the context {9} is the end of a longer buffer {8, 9}: the last min(k, "
          "context.size()) = 1 tokens are the longest key tried, never a token before the context");
      const V buffer = {8, 9};
      CHECK(pool.lookup(std::span<const Token>(buffer).subspan(1), 4) == V{1});
    }
    CHECK(pool.lookup(V{}, 4) == V{});
  }

  TEST_CASE("is_use_oldest proposes the oldest value and otherwise the newest") {
    for (bool use_oldest : {true, false}) {
      NGramPool pool(config(1, 3, /*keep_all=*/true, use_oldest));
      pool.scan(V{5, 1, 2, 5, 3, 4, 5, 6, 6});  // '5' is followed by 1 2 5, then 3 4 5, then 6 6
      CHECK(pool.values(V{5}) == Values{{1, 2, 5}, {3, 4, 5}, {6, 6}});
      INFO("is_use_oldest=", use_oldest);
      CHECK(pool.lookup(V{0, 5}, 3) == (use_oldest ? V{1, 2, 5} : V{6, 6}));
    }
  }

  TEST_CASE("keep one proposes the single kept value: the longest seen") {
    for (bool use_oldest : {true, false}) {
      NGramPool pool(config(1, 3, /*keep_all=*/false, use_oldest));
      pool.scan(V{5, 1, 5, 3, 4, 5, 6, 6, 6});  // values of '5': 1 5 3, then 3 4 5, then 6 6 6
      INFO("with is_keep_all false the first value of the longest length stays: 1 5 3");
      CHECK(pool.values(V{5}) == Values{{1, 5, 3}});
      CHECK(pool.lookup(V{5}, 3) == V{1, 5, 3});
    }
    NGramPool grows(config(1, 3, /*keep_all=*/false));
    grows.insert_pair(V{5}, V{1});
    grows.insert_pair(V{5}, V{2, 2});
    CHECK(grows.lookup(V{5}, 3) == V{2, 2});
  }

  TEST_CASE("a proposal is cut to max_tokens and max_tokens = 0 proposes nothing") {
    NGramPool pool(config(1, 5));
    pool.insert_pair(V{1}, V{2, 3, 4, 5, 6});
    CHECK(pool.lookup(V{1}, 2) == V{2, 3});
    CHECK(pool.lookup(V{1}, 9) == V{2, 3, 4, 5, 6});
    CHECK(pool.lookup(V{1}, 0) == V{});
    CHECK_THROWS_AS(pool.lookup(V{1}, -1), std::invalid_argument);
    INFO("max_tokens < 0 is refused up front: on a miss too, and a hit's key is not used first");
    CHECK_THROWS_AS(pool.lookup(V{42}, -1), std::invalid_argument);
    pool.insert_pair(V{3}, V{4});
    CHECK_THROWS_AS(pool.lookup(V{1}, -1), std::invalid_argument);
    INFO(
        "key {3} was inserted after key {1}'s last use, so it is the more recent: {1} first means "
        "that lookup(-1) used key {1}, or that the new key {3} went to the back of lru_ (push a "
        "new key to the front)");
    CHECK(pool.keys_by_recency() == Values{{3}, {1}});
  }

  TEST_CASE(
      "a negative id in the context is no error: keys that hold it miss, shorter ones match") {
    NGramPool pool(config(3, 4));
    pool.scan(V{5, 6, 1, 2, 6, 3, 4});  // '6' is followed by 1 2 6 3, then by 3 4
    INFO("lookup only reads: a negative id is in no stored key, so the keys that hold it miss");
    V got;
    CHECK_NOTHROW(got = pool.lookup(V{-7, 6}, 4));
    CHECK(got == V{1, 2, 6, 3});
    CHECK_NOTHROW(got = pool.lookup(V{5, 6, -7}, 4));
    CHECK(got == V{});
  }

  TEST_CASE("no matching key proposes nothing") {
    NGramPool pool(config(3, 5));
    pool.scan(V{1, 2, 3, 4});
    CHECK(pool.lookup(V{7, 8, 9}, 5) == V{});
    CHECK(pool.lookup(V{4}, 5) == V{});  // the last token has no value yet
    INFO(
        "the same pool proposes for a key it holds: the misses above are misses, not a lookup "
        "that never finds anything");
    CHECK(pool.lookup(V{9, 2}, 5) == V{3, 4});
  }
}
