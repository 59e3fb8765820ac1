#pragma once
// Turning one logits row into one token.
#include <cstdint>
#include <span>
#include <vector>

#include "mini_engine/core/token.h"

namespace speclab {

// How the target's token is chosen at each position. temperature == 0 means greedy (argmax).
struct SamplingParams {
  double temperature = 0.0;  // finite, >= 0
  std::uint64_t seed = 0;    // with `sequence`, keys the counter-based RNG (rng.h)
  std::uint64_t sequence = 0;
};

// softmax(row / temperature) as doubles. Requires a finite temperature > 0 and a non-empty row
// with a finite max and no NaN (-inf scores are fine: probability 0); throws
// std::invalid_argument otherwise.
std::vector<double> softmax(std::span<const float> row, double temperature);

// The token at inverse-CDF point u in [0, 1) of softmax(row / temperature): token i covers
// [cdf(i - 1), cdf(i)), so a u on a boundary goes to the later token, and a token of probability
// 0 is never chosen. argmax when temperature == 0. Deterministic: the same (row, temperature, u)
// always gives the same token. Throws std::invalid_argument for a negative, NaN or infinite
// temperature, a u outside [0, 1) (NaN included, checked at every temperature), an empty row, and
// (temperature > 0) whatever softmax() rejects; at temperature 0, NaNs in the row go as argmax()
// says.
Token sample_from_logits(std::span<const float> row, double temperature, double u);

// The target's token for the given absolute `position` in the sequence: sample_from_logits with
// u = uniform01(seed, sequence, position) (u = 0 at temperature 0). Plain decoding and every
// lossless verify rule use this. Throws what sample_from_logits throws.
Token sample_at(std::span<const float> row, const SamplingParams& params, std::int64_t position);

}  // namespace speclab
