#pragma once
// Helpers shared by the lab 04 test files.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "mini_engine/sampling/rng.h"
#include "ngram_pool.h"

namespace speclab::lab04_testing {

using V = std::vector<Token>;
using Values = std::vector<V>;

inline NGramPoolConfig config(int k, int v, bool keep_all = true, bool use_oldest = true) {
  NGramPoolConfig c;
  c.max_matching_ngram_size = k;
  c.max_draft_len = v;
  c.is_keep_all = keep_all;
  c.is_use_oldest = use_oldest;
  c.capacity = 0;
  c.max_values_per_key = 0;
  return c;
}

// `length` tokens from a small alphabet, so that n-grams repeat with different continuations.
inline V random_stream(std::uint64_t seed, int length, int alphabet) {
  V out;
  for (int i = 0; i < length; ++i) {
    out.push_back(static_cast<Token>(counter_hash(seed, 7, static_cast<std::uint64_t>(i)) %
                                     static_cast<std::uint64_t>(alphabet)));
  }
  return out;
}

// The pool's contents as sorted (key, sorted values) rows: the same pool in any age order.
inline std::vector<std::pair<V, Values>> contents(const NGramPool& pool) {
  std::vector<std::pair<V, Values>> out;
  for (const V& key : pool.keys_by_recency()) {
    Values vals = pool.values(key);
    std::sort(vals.begin(), vals.end());
    out.emplace_back(key, vals);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace speclab::lab04_testing
