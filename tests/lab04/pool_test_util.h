#pragma once
// Helpers shared by the lab 04 test files.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
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

// "{3, 1}": tokens as the failure messages print them.
inline std::string to_text(const V& tokens) {
  std::string s = "{";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(tokens[i]);
  }
  return s + "}";
}
inline std::string to_text(const Values& values) {
  std::string s = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) s += ", ";
    s += to_text(values[i]);
  }
  return s + "}";
}

// Everything a pool holds, exactly, in words: its counters, then its keys most recently used
// first, each with its values oldest first. Two pools with the same text propose the same from
// then on; a failed comparison prints both (for small pools only).
inline std::string state_text(const NGramPool& pool) {
  const NGramPoolStats& s = pool.stats();
  std::string out = "pair_updates=" + std::to_string(s.pair_updates) +
                    " evicted_keys=" + std::to_string(s.evicted_keys) +
                    " dropped_values=" + std::to_string(s.dropped_values);
  for (const V& key : pool.keys_by_recency()) {
    out += "; " + to_text(key) + " -> " + to_text(pool.values(key));
  }
  return out;
}

// The first key whose values differ between two contents() results, in words, for a failure
// message (doctest cannot print the rows themselves).
inline std::string first_difference(const std::vector<std::pair<V, Values>>& got,
                                    const std::vector<std::pair<V, Values>>& want) {
  std::size_t g = 0, w = 0;
  while (g < got.size() || w < want.size()) {
    if (w == want.size() || (g < got.size() && got[g].first < want[w].first)) {
      return "key " + to_text(got[g].first) + ": yours holds " + to_text(got[g].second) +
             ", the scan holds no such key";
    }
    if (g == got.size() || want[w].first < got[g].first) {
      return "key " + to_text(want[w].first) + ": yours holds no such key, the scan holds " +
             to_text(want[w].second);
    }
    if (got[g].second != want[w].second) {
      return "key " + to_text(got[g].first) + ": yours holds " + to_text(got[g].second) +
             ", the scan holds " + to_text(want[w].second) + " (values sorted)";
    }
    ++g, ++w;
  }
  return "none";
}

}  // namespace speclab::lab04_testing
