// Lab 04 -- the options and the initial scan. Chapter: book/lab04_ngram_pool.md
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ngram_pool.h"
#include "pool_test_util.h"

using namespace speclab;
using namespace speclab::lab04_testing;

TEST_SUITE("lab04 / The options") {
  TEST_CASE("a config out of range is rejected with std::invalid_argument") {
    INFO("the message names the first field out of range (the header's contract)");
    CHECK_THROWS_WITH_AS(NGramPool(config(0, 5)), doctest::Contains("max_matching_ngram_size"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(NGramPool(config(3, 0)), doctest::Contains("max_draft_len"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(NGramPool(config(65, 5)), doctest::Contains("max_matching_ngram_size"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(NGramPool(config(3, 65)), doctest::Contains("max_draft_len"),
                         std::invalid_argument);
    NGramPoolConfig c = config(3, 5);
    c.max_values_per_key = -1;
    CHECK_THROWS_WITH_AS(NGramPool{c}, doctest::Contains("max_values_per_key"),
                         std::invalid_argument);
    {
      INFO(
          "config(k = 0, v = 0): both are out of range; the message names the first field "
          "NGramPoolConfig declares, max_draft_len (v), before max_matching_ngram_size (k)");
      CHECK_THROWS_WITH_AS(NGramPool(config(0, 0)), doctest::Contains("max_draft_len"),
                           std::invalid_argument);
    }
    CHECK_THROWS_AS(NGramPoolManager(config(0, 5)), std::invalid_argument);
    {
      INFO("a manager of private pools checks its config too, before any request makes a pool");
      NGramPoolConfig private_pools = config(0, 5);
      private_pools.is_public_pool = false;
      CHECK_THROWS_WITH_AS(NGramPoolManager{private_pools},
                           doctest::Contains("max_matching_ngram_size"), std::invalid_argument);
    }
    NGramPool ok(config(64, 64));
    CHECK(ok.num_keys() == 0);
  }
}

TEST_SUITE("lab04 / The initial scan") {
  TEST_CASE("k = 3 and v = 5 over 8 tokens adds exactly 18 pairs") {
    // The worked example of the chapter: tokens t0..t7 are 10..17 (all distinct, so every key
    // is new). Key length 1 gives 7 pairs, length 2 gives 6 and length 3 gives 5: 18.
    NGramPool pool(config(3, 5));
    const V tokens = {10, 11, 12, 13, 14, 15, 16, 17};
    pool.scan(tokens);
    INFO("see the chapter, 'The initial scan': sum over n = 1..k of (8 - n) = 7 + 6 + 5");
    CHECK(pool.stats().pair_updates == 18);
    CHECK(pool.num_keys() == 18);
    CHECK(pool.num_values() == 18);
    // The whole enumeration, as printed in the chapter.
    int checked = 0;
    for (int n = 1; n <= 3; ++n) {
      for (int i = 0; i + n < 8; ++i) {
        const V key(tokens.begin() + i, tokens.begin() + i + n);
        const int to = std::min(8, i + n + 5);
        const V value(tokens.begin() + i + n, tokens.begin() + to);
        INFO("key starting at t", i, " of length ", n);
        CHECK(pool.values(key) == Values{value});
        ++checked;
      }
    }
    CHECK(checked == 18);
  }

  TEST_CASE(
      "the last key of each length gets the final token as its value (scan range off-by-one)") {
    NGramPool pool(config(3, 5));
    pool.scan(V{10, 11, 12, 13, 14, 15, 16, 17});
    INFO("a key needs one token after it: starts run while i + n < size, not i + n + 1 < size");
    CHECK(pool.values(V{16}) == Values{{17}});
    CHECK(pool.values(V{15, 16}) == Values{{17}});
    CHECK(pool.values(V{14, 15, 16}) == Values{{17}});
    CHECK(pool.values(V{17}) == Values{});  // nothing follows the last token
  }

  TEST_CASE("the pair count is the sum over key lengths of (size - n)") {
    for (int k = 1; k <= 4; ++k) {
      for (int size = 0; size <= 12; ++size) {
        NGramPool pool(config(k, 3));
        V tokens;
        for (int i = 0; i < size; ++i) tokens.push_back(100 + i);
        pool.scan(tokens);
        int expected = 0;
        for (int n = 1; n <= k; ++n) expected += std::max(0, size - n);
        INFO("k=", k, " size=", size, ": every start i with i + n < size gives a key of length n");
        REQUIRE(pool.stats().pair_updates == expected);  // the first wrong size says it
        REQUIRE(pool.num_keys() == static_cast<std::size_t>(expected));
      }
    }
  }

  TEST_CASE("values hold up to v following tokens and keep the first occurrence first") {
    // 1 2 1 2 3 with k = 2, v = 3.
    NGramPool pool(config(2, 3));
    pool.scan(V{1, 2, 1, 2, 3});
    CHECK(pool.values(V{1}) == Values{{2, 1, 2}, {2, 3}});  // the second '1' is followed by 2 3
    CHECK(pool.values(V{1, 2}) == Values{{1, 2, 3}, {3}});
    CHECK(pool.values(V{2}) == Values{{1, 2, 3}, {3}});
    CHECK(pool.values(V{2, 1}) == Values{{2, 3}});
    CHECK(pool.values(V{2, 3}) == Values{});
    CHECK(pool.stats().pair_updates == 4 + 3);
  }

  TEST_CASE("a scan of fewer than two tokens adds nothing") {
    NGramPool pool(config(3, 5));
    pool.scan(V{});
    pool.scan(V{7});
    CHECK(pool.num_keys() == 0);
    CHECK(pool.stats().pair_updates == 0);
    INFO("two tokens are enough for one pair: 7 -> 8");
    pool.scan(V{7, 8});
    CHECK(pool.values(V{7}) == Values{{8}});
    CHECK(pool.stats().pair_updates == 1);
  }

  TEST_CASE("a scan with a negative token id throws before it adds any pair") {
    // k = 2, v = 2 over 4 5 6 -7 8: the first pair, 4 -> 5 6, holds no -7; the second,
    // 5 -> 6 -7, does. A scan that leaves the check to insert_pair has added 4 -> 5 6 by then.
    NGramPool pool(config(2, 2));
    pool.scan(V{1, 2, 3});
    const std::string before = state_text(pool);
    INFO(
        "check every id of the scan before its first insert_pair: a scan that throws halfway "
        "leaves the pairs before the negative id in the pool");
    CHECK_THROWS_WITH_AS(pool.scan(V{4, 5, 6, -7, 8}), doctest::Contains("-7"),
                         std::invalid_argument);
    CHECK(state_text(pool) == before);
    INFO("a scan too short to add a pair still checks its ids");
    CHECK_THROWS_WITH_AS(pool.scan(V{-7}), doctest::Contains("-7"), std::invalid_argument);
    CHECK(state_text(pool) == before);
  }
}
