#pragma once
// Counter-based randomness: every random number is a pure function of (seed, sequence, position,
// stream). Plain and speculative decoding draw the same number for the same token position, so
// sampled speculative decoding can be checked token for token against sampled plain decoding.
#include <cstdint>

namespace speclab {

// A 64-bit hash of the four inputs with full avalanche (splitmix64 finalizer rounds).
constexpr std::uint64_t counter_hash(std::uint64_t seed, std::uint64_t sequence,
                                     std::uint64_t position, std::uint64_t stream = 0) {
  auto mix = [](std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::uint64_t h = mix(seed);
  h = mix(h ^ sequence);
  h = mix(h ^ position);
  return mix(h ^ stream);
}

// A uniform double in [0, 1) for the token at `position` of sequence `sequence`.
// `stream` separates independent uses at the same position (stream 0 is the one that sampling
// uses to pick the emitted token).
constexpr double uniform01(std::uint64_t seed, std::uint64_t sequence, std::uint64_t position,
                           std::uint64_t stream = 0) {
  return static_cast<double>(counter_hash(seed, sequence, position, stream) >> 11) * 0x1.0p-53;
}

}  // namespace speclab
