// Lab 04 -- insert_pair and its keep rule. Chapter: book/lab04_ngram_pool.md
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ngram_pool.h"
#include "pool_test_util.h"

using namespace speclab;
using namespace speclab::lab04_testing;

TEST_SUITE("lab04 / Keeping values: the keep rule") {
  TEST_CASE("keep all: a different value for a known key is appended as the newest") {
    NGramPool pool(config(2, 4));
    pool.insert_pair(V{5}, V{1, 2});
    pool.insert_pair(V{5}, V{3});
    pool.insert_pair(V{5}, V{1, 9});
    CHECK(pool.values(V{5}) == Values{{1, 2}, {3}, {1, 9}});
    CHECK(pool.num_keys() == 1);
  }

  TEST_CASE("keep all: a value that is a prefix of a stored value changes nothing") {
    NGramPool pool(config(2, 4));
    pool.insert_pair(V{5}, V{1, 2, 3});
    pool.insert_pair(V{5}, V{1, 2});
    pool.insert_pair(V{5}, V{1});
    pool.insert_pair(V{5}, V{1, 2, 3});
    INFO("a prefix adds no information: the stored value already proposes it");
    CHECK(pool.values(V{5}) == Values{{1, 2, 3}});
  }

  TEST_CASE("keep all: a stored proper prefix grows in place and keeps its age") {
    NGramPool pool(config(2, 4));
    pool.insert_pair(V{5}, V{1});
    pool.insert_pair(V{5}, V{7});
    pool.insert_pair(V{5}, V{1, 2});
    pool.insert_pair(V{5}, V{1, 2, 3});
    {
      INFO("the value that began as '1' is still the oldest after growing to '1 2 3'");
      CHECK(pool.values(V{5}) == Values{{1, 2, 3}, {7}});
    }
    {
      INFO("a value may grow by several tokens at once: '8' then '8 6 4' is one value");
      pool.insert_pair(V{6}, V{8});
      pool.insert_pair(V{6}, V{8, 6, 4});
      CHECK(pool.values(V{6}) == Values{{8, 6, 4}});
    }
    INFO(
        "'1 2' and '1 9' start alike but are two values: '1 9 5' grows the second, and '1 9' "
        "then changes nothing; compare with every stored value, not only the first that starts "
        "the same way");
    pool.insert_pair(V{7}, V{1, 2});
    pool.insert_pair(V{7}, V{1, 9});
    pool.insert_pair(V{7}, V{1, 9, 5});
    CHECK(pool.values(V{7}) == Values{{1, 2}, {1, 9, 5}});
    pool.insert_pair(V{7}, V{1, 9});
    CHECK(pool.values(V{7}) == Values{{1, 2}, {1, 9, 5}});
  }

  TEST_CASE("keep one: only a strictly longer value replaces the kept value") {
    NGramPool pool(config(2, 4, /*keep_all=*/false));
    pool.insert_pair(V{5}, V{1, 2});
    pool.insert_pair(V{5}, V{8, 9});  // as long: the first stays
    CHECK(pool.values(V{5}) == Values{{1, 2}});
    pool.insert_pair(V{5}, V{3});  // shorter: ignored
    CHECK(pool.values(V{5}) == Values{{1, 2}});
    pool.insert_pair(V{5}, V{4, 4, 4});  // longer: replaces
    CHECK(pool.values(V{5}) == Values{{4, 4, 4}});
  }

  TEST_CASE("max_values_per_key drops the oldest value of a full key") {
    NGramPoolConfig c = config(1, 2);
    c.max_values_per_key = 2;
    NGramPool pool(c);
    pool.insert_pair(V{5}, V{1});
    pool.insert_pair(V{5}, V{2});
    pool.insert_pair(V{5}, V{3});
    CHECK(pool.values(V{5}) == Values{{2}, {3}});
    CHECK(pool.stats().dropped_values == 1);
    INFO(
        "a value the full key already holds changes nothing: the limit applies only after a value "
        "is appended (making room first drops '1' and appends it again as the newest)");
    NGramPool full(c);
    full.insert_pair(V{5}, V{1});
    full.insert_pair(V{5}, V{2});
    full.insert_pair(V{5}, V{1});
    CHECK(full.values(V{5}) == Values{{1}, {2}});
    CHECK(full.stats().dropped_values == 0);
  }

  TEST_CASE("every insert_pair counts one pair update and marks its key most recent") {
    for (const bool keep_all : {true, false}) {
      // A std::string: doctest prints a `const char*` as an address.
      const std::string rule = keep_all ? "keep all" : "keep one (is_keep_all false)";
      INFO(rule,
           ": key 1 was inserted last, so it is the most recent key even though its values did "
           "not change (touch() it on every insert_pair)");
      NGramPool pool(config(2, 4, keep_all));
      pool.insert_pair(V{1}, V{2});
      pool.insert_pair(V{3}, V{4});
      pool.insert_pair(V{1}, V{2});  // no change to the values, but still a use of key 1
      CHECK(pool.stats().pair_updates == 3);
      CHECK(pool.keys_by_recency() == Values{{1}, {3}});
    }
  }

  TEST_CASE("insert_pair rejects keys and values of the wrong size") {
    NGramPool pool(config(2, 3));
    CHECK_THROWS_AS(pool.insert_pair(V{}, V{1}), std::invalid_argument);
    CHECK_THROWS_AS(pool.insert_pair(V{1, 2, 3}, V{1}), std::invalid_argument);
    CHECK_THROWS_AS(pool.insert_pair(V{1}, V{}), std::invalid_argument);
    CHECK_THROWS_AS(pool.insert_pair(V{1}, V{1, 2, 3, 4}), std::invalid_argument);
    CHECK(pool.num_keys() == 0);
    INFO("a rejected pair changes nothing, not even stats().pair_updates: check, then count");
    CHECK(pool.stats().pair_updates == 0);
  }

  TEST_CASE("insert_pair rejects a negative token id in the key or the value and changes nothing") {
    NGramPool pool(config(2, 3));
    pool.insert_pair(V{1}, V{2});
    pool.insert_pair(V{3}, V{4});
    const std::string before = state_text(pool);
    INFO(
        "a token id is never negative: insert_pair throws std::invalid_argument naming the id, "
        "and a rejected pair changes nothing (no value grows, no key is added or used, nothing "
        "is counted): check the ids with the sizes, before anything else");
    CHECK_THROWS_WITH_AS(pool.insert_pair(V{1}, V{2, -7}), doctest::Contains("-7"),
                         std::invalid_argument);  // would grow {2} into {2, -7}
    CHECK_THROWS_WITH_AS(pool.insert_pair(V{-7}, V{2}), doctest::Contains("-7"),
                         std::invalid_argument);  // would add the key {-7}
    CHECK_THROWS_WITH_AS(pool.insert_pair(V{1, -7}, V{5}), doctest::Contains("-7"),
                         std::invalid_argument);
    CHECK(state_text(pool) == before);
  }
}
