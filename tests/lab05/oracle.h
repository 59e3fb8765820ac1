#pragma once
// The brute-force oracle for lab 05, and the streams the tests feed it.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "mini_engine/sampling/rng.h"
#include "suffix_automaton.h"

namespace speclab::lab05_testing {

using V = std::vector<Token>;

// The longest suffix of `s` that also ends at an earlier position, found by comparing the
// stream's end with every earlier end position e, backwards. Among equally long matches, the
// smallest e (the first occurrence) is reported, as SuffixAutomaton::longest_match documents.
inline SuffixMatch brute_longest_match(const V& s) {
  const auto n = static_cast<std::int64_t>(s.size());
  SuffixMatch best;
  for (std::int64_t e = 0; e + 1 < n; ++e) {
    int len = 0;
    while (e - len >= 0 &&
           s[static_cast<std::size_t>(e - len)] == s[static_cast<std::size_t>(n - 1 - len)]) {
      ++len;
    }
    if (len > best.length) best = {len, e};
  }
  return best;
}

// What the automaton should propose: up to k tokens after the brute-force match.
inline V brute_propose(const V& s, int k, int min_match) {
  const SuffixMatch m = brute_longest_match(s);
  if (m.length == 0 || m.length < min_match) return {};
  const auto from = static_cast<std::size_t>(m.end + 1);
  const std::size_t to = std::min(s.size(), from + static_cast<std::size_t>(k));
  return V(s.begin() + static_cast<std::ptrdiff_t>(from),
           s.begin() + static_cast<std::ptrdiff_t>(to));
}

inline Token draw(std::uint64_t seed, std::uint64_t i, int alphabet) {
  return static_cast<Token>(counter_hash(seed, 11, i) % static_cast<std::uint64_t>(alphabet));
}

// Uniform random tokens from a small alphabet: many short repeats.
inline V random_stream(std::uint64_t seed, int length, int alphabet) {
  V s;
  for (int i = 0; i < length; ++i) s.push_back(draw(seed, static_cast<std::uint64_t>(i), alphabet));
  return s;
}

// A few random tokens, then a pattern of `period` tokens repeated: the longest match grows by
// one token per step once the pattern repeats.
inline V periodic_stream(std::uint64_t seed, int length, int period) {
  V s;
  for (int i = 0; i < 5; ++i) s.push_back(100 + draw(seed, static_cast<std::uint64_t>(i), 50));
  for (int i = 0; static_cast<int>(s.size()) < length; ++i) {
    s.push_back(draw(seed + 1000, static_cast<std::uint64_t>(i % period), 20));
  }
  return s;
}

// Runs 0, 00, 000, ... each closed by a 1, until the stream holds at least `length` tokens: the
// suffix-link path of the whole stream grows as long as the current run, so a walk that climbs
// it whole on every token reads about sqrt(length) transitions per token.
inline V runs_stream(int length) {
  V s;
  for (int run = 1; static_cast<int>(s.size()) < length; ++run) {
    s.insert(s.end(), static_cast<std::size_t>(run), 0);
    s.push_back(1);
  }
  return s;
}

// Fresh random tokens from a large alphabet interleaved with copies of earlier stretches of
// random lengths (1..40): repetition at mixed lengths, as in edited code or quoted text.
inline V mixed_stream(std::uint64_t seed, int length) {
  V s;
  std::uint64_t c = 0;
  while (static_cast<int>(s.size()) < length) {
    const auto r = counter_hash(seed, 12, c++);
    const int run = 1 + static_cast<int>(r % 40);
    if (s.size() > 10 && (r >> 20) % 2 == 0) {
      const auto from = static_cast<std::size_t>((r >> 30) % s.size());
      for (int i = 0; i < run && static_cast<int>(s.size()) < length; ++i) {
        s.push_back(s[std::min(from + static_cast<std::size_t>(i), s.size() - 1)]);
      }
    } else {
      for (int i = 0; i < run && static_cast<int>(s.size()) < length; ++i) {
        s.push_back(draw(seed, 1000000 + c * 64 + static_cast<std::uint64_t>(i), 1000));
      }
    }
  }
  return s;
}

}  // namespace speclab::lab05_testing
