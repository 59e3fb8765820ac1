// Lab 04 -- bounded memory: capacity and least-recently-used eviction.
// Chapter: book/lab04_ngram_pool.md
#include <doctest/doctest.h>

#include <vector>

#include "ngram_pool.h"
#include "pool_test_util.h"

using namespace speclab;
using namespace speclab::lab04_testing;

namespace {
NGramPoolConfig bounded(int k, int v, std::size_t capacity, int max_values = 0) {
  NGramPoolConfig c = config(k, v);
  c.capacity = capacity;
  c.max_values_per_key = max_values;
  return c;
}
}  // namespace

TEST_SUITE("lab04 / Bounded memory") {
  TEST_CASE("a full pool evicts the least recently used key") {
    NGramPool pool(bounded(1, 2, 3));
    pool.insert_pair(V{1}, V{10});
    pool.insert_pair(V{2}, V{20});
    pool.insert_pair(V{3}, V{30});
    pool.insert_pair(V{1}, V{12});  // key 1 is used again: key 2 is now the oldest use
    {
      INFO(
          "key 1 is already in the pool: an insert under it needs no room, so nothing is "
          "evicted (only a new key evicts); its values are {10} and now {12}");
      CHECK(pool.values(V{1}) == Values{{10}, {12}});
      CHECK(pool.stats().evicted_keys == 0);
    }
    pool.insert_pair(V{4}, V{40});  // full: key 2 goes
    CHECK_MESSAGE(pool.num_keys() == 3,
                  "capacity 3: a new key into a full pool first evicts one key, from map_ as "
                  "well as from lru_ (evict when map_.size() >= capacity, not >)");
    CHECK(pool.values(V{2}) == Values{});
    INFO(
        "the key evicted is the least recently used one, at the back of lru_ (key 2 here), not "
        "the front; keys_by_recency() walks lru_, most recent first, so an evicted key must "
        "leave lru_ as well as map_");
    CHECK(pool.keys_by_recency() == Values{{4}, {1}, {3}});
    CHECK(pool.stats().evicted_keys == 1);
  }

  TEST_CASE("a lookup hit counts as a use and protects its key from eviction") {
    NGramPool pool(bounded(1, 2, 2));
    pool.insert_pair(V{1}, V{10});
    pool.insert_pair(V{2}, V{20});
    CHECK(pool.lookup(V{1}, 2) == V{10});  // key 1 is now the most recent
    pool.insert_pair(V{3}, V{30});         // key 2 goes, not key 1
    INFO(
        "lookup({1}) proposed from key {1}: a hit is a use (touch the key), so the new key {3} "
        "evicts key {2}, the least recently used, not key {1}");
    CHECK(pool.values(V{1}) == Values{{10}});
    CHECK(pool.values(V{2}) == Values{});
    INFO("keys_by_recency() walks lru_: every key of the map once, most recent first");
    CHECK(pool.keys_by_recency() == Values{{3}, {1}});
  }

  TEST_CASE("a lookup for zero tokens is not a use of any key") {
    // It proposes nothing, so it must not move a key to the front: that would protect from
    // eviction a key no draft came from.
    NGramPool pool(bounded(1, 2, 2));
    pool.insert_pair(V{1}, V{10});
    pool.insert_pair(V{2}, V{20});
    CHECK(pool.lookup(V{1}, 0) == V{});
    INFO("lookup(context, 0) returns at once: key {1} must stay the least recently used");
    CHECK(pool.keys_by_recency() == Values{{2}, {1}});
  }

  TEST_CASE("a pool never holds more than capacity keys over a long stream") {
    const std::size_t capacity = 200;
    NGramPool pool(bounded(3, 4, capacity, 3));
    const V tokens = random_stream(5, 4000, 40);
    std::size_t most_keys = 0;
    std::size_t most_tokens = 0;
    for (std::size_t end = 1; end <= tokens.size(); ++end) {
      pool.update(std::span<const Token>(tokens).first(end));
      most_keys = std::max(most_keys, pool.num_keys());
      if (end % 97 == 0) most_tokens = std::max(most_tokens, pool.stored_tokens());
    }
    INFO("see the chapter, 'Bounded memory': evict before inserting a new key into a full pool");
    CHECK(most_keys == capacity);
    CHECK(most_tokens <= capacity * (3 + 4 * 3));
    CHECK(pool.stats().evicted_keys > 0);
    // Recent text is still proposed: the last key was used a moment ago.
    CHECK(pool.lookup(std::span<const Token>(tokens).first(tokens.size() - 1), 4).size() >= 1);
  }

  TEST_CASE("capacity 0 means no limit") {
    NGramPool pool(bounded(2, 2, 0));
    V tokens;
    for (int i = 0; i < 3000; ++i) tokens.push_back(i);
    pool.scan(tokens);
    INFO(
        "3000 distinct tokens give 2999 one-token and 2998 two-token keys; fewer means the scan "
        "stops early ('The initial scan'), not an eviction");
    CHECK(pool.num_keys() == 2999 + 2998);
    CHECK(pool.stats().evicted_keys == 0);
  }
}
