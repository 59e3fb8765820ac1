#pragma once
// The token stream the drafter benches feed: text with repetition at mixed lengths.
#include <cstdint>
#include <vector>

#include "mini_engine/core/token.h"
#include "mini_engine/sampling/rng.h"

namespace speclab::bench {

// `length` tokens over a `vocab`-token vocabulary: runs of 4..64 fresh random tokens alternate
// (at random) with copies of 4..64 tokens from a random earlier position, so some n-grams repeat
// with long matching contexts, many never repeat, and a scan for an n-gram often has to look far
// back. Deterministic in (seed, length, vocab).
inline std::vector<Token> mixed_stream(std::uint64_t seed, std::size_t length, int vocab) {
  std::vector<Token> s;
  s.reserve(length);
  std::uint64_t c = 0;
  while (s.size() < length) {
    const std::uint64_t r = counter_hash(seed, 1, c++);
    const std::size_t run = 4 + r % 61;
    if (s.size() > 64 && (r >> 8) % 2 == 0) {
      const std::size_t from = (r >> 16) % (s.size() - 1);
      for (std::size_t i = 0; i < run && s.size() < length; ++i) s.push_back(s[from + i]);
    } else {
      for (std::size_t i = 0; i < run && s.size() < length; ++i) {
        s.push_back(
            static_cast<Token>(counter_hash(seed, 2, c, i) % static_cast<std::uint64_t>(vocab)));
      }
    }
  }
  return s;
}

}  // namespace speclab::bench
