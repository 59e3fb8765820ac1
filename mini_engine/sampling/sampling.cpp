#include "mini_engine/sampling/sampling.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "mini_engine/core/logits.h"
#include "mini_engine/sampling/rng.h"

namespace speclab {

std::vector<double> softmax(std::span<const float> row, double temperature) {
  if (!(temperature > 0.0) || !std::isfinite(temperature)) {
    throw std::invalid_argument("softmax: temperature must be finite and > 0, got " +
                                std::to_string(temperature));
  }
  if (row.empty()) throw std::invalid_argument("softmax: empty row");
  const float mx = *std::max_element(row.begin(), row.end());
  if (!std::isfinite(mx)) throw std::invalid_argument("softmax: row has no finite maximum");
  std::vector<double> p(row.size());
  double sum = 0.0;
  for (size_t i = 0; i < row.size(); ++i) {
    if (std::isnan(row[i])) {
      throw std::invalid_argument("softmax: the score of token " + std::to_string(i) + " is NaN");
    }
    p[i] = std::exp((static_cast<double>(row[i]) - mx) / temperature);
    sum += p[i];
  }
  for (double& x : p) x /= sum;
  return p;
}

Token sample_from_logits(std::span<const float> row, double temperature, double u) {
  if (!(temperature >= 0.0) || !std::isfinite(temperature)) {
    throw std::invalid_argument("temperature must be finite and >= 0, got " +
                                std::to_string(temperature));
  }
  if (!(u >= 0.0 && u < 1.0)) {
    // u = 1 (or more) would fall past the last token, and a NaN u would fall nowhere.
    throw std::invalid_argument("u must be in [0, 1), got " + std::to_string(u));
  }
  if (temperature == 0.0) return argmax(row);
  const std::vector<double> p = softmax(row, temperature);
  double cdf = 0.0;
  Token last_nonzero = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.0) continue;
    cdf += p[i];
    last_nonzero = static_cast<Token>(i);
    if (u < cdf) return last_nonzero;
  }
  return last_nonzero;  // u within rounding of 1.0
}

Token sample_at(std::span<const float> row, const SamplingParams& params, std::int64_t position) {
  const double u = params.temperature == 0.0 ? 0.0
                                             : uniform01(params.seed, params.sequence,
                                                         static_cast<std::uint64_t>(position));
  return sample_from_logits(row, params.temperature, u);
}

}  // namespace speclab
