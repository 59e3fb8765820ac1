#include "mini_engine/core/logits.h"

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

Token argmax(std::span<const float> row) {
  if (row.empty()) throw std::invalid_argument("argmax: empty row");
  size_t best = 0;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] > row[best]) best = i;
  }
  return static_cast<Token>(best);
}

}  // namespace speclab
