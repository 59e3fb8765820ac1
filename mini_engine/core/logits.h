#pragma once
// A block of logits rows: the output of one Target::extend call.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mini_engine/core/token.h"

namespace speclab {

// rows() x vocab() floats, row-major. Row i holds the target's scores for the token that follows
// the i-th appended position. Owns its storage; cheap to move.
class Logits {
 public:
  Logits() = default;
  // Requires rows >= 0 and vocab >= 1; throws std::invalid_argument otherwise. All entries
  // start at 0.
  Logits(int rows, int vocab);

  int rows() const { return rows_; }
  int vocab() const { return vocab_; }
  // Row i's vocab() scores. Requires 0 <= i < rows(); throws std::out_of_range otherwise. The
  // span (like data()) points into this object: valid while it lives and is not assigned to.
  std::span<float> row(int i);
  std::span<const float> row(int i) const;
  // All rows() * vocab() scores, row after row.
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }

 private:
  int rows_ = 0;
  int vocab_ = 0;
  std::vector<float> data_;  // (rows_, vocab_), row-major
};

// Throws std::runtime_error "<who>: the logit of the token chosen at position P is NaN..." when,
// for some i, row i's score for chosen[i] is NaN or +infinity: the model's numbers broke down (a
// corrupt model, a kernel bug), and what it chose is noise. (-infinity is a score: a target may
// rule tokens out with it.) chosen[i] is the token at position first_position + i. Throws
// std::out_of_range when chosen.size() > rows(), before reading any row, and
// std::invalid_argument for an id outside [0, vocab()), before reading it.
void require_finite_choices(const Logits& logits, std::span<const Token> chosen,
                            std::int64_t first_position, const std::string& who);

// The index of the largest score; ties go to the lowest index. Requires a non-empty row (throws
// std::invalid_argument otherwise). As the loop `if (row[i] > row[best]) best = i`: a NaN is
// never chosen, except at index 0, which nothing compares greater than.
Token argmax(std::span<const float> row);

}  // namespace speclab
