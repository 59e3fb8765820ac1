#pragma once
// The cost curve T(b, k): the seconds one batched verify step takes when b sequences each feed
// their last token plus k drafts, b * (k + 1) tokens in one target call. T(b, 0) is a plain
// decode step of the whole batch. Lab 06 turns this curve into a speculation policy.
//
// On disk a curve is a small CSV file (data/cost_curves/README.md):
//   # any number of comment lines: machine, model, threads, command, date
//   b,k,seconds
//   1,0,0.0213
//   1,1,0.0240
//   ...
// with one row for every b it lists and every k in 0..max_k (rows in any order).
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "mini_engine/core/batch_target.h"
#include "mini_engine/core/clock.h"

namespace speclab {

class CostCurve {
 public:
  // Builds a table by calling seconds(b, k) for every b in batch_sizes and k in 0..max_k.
  // Requires a non-empty `seconds`, batch_sizes non-empty and strictly increasing, each >= 1,
  // 0 <= max_k <= kMaxDrafts (64, loop.h) and every value finite and > 0; throws
  // std::invalid_argument naming the bad input otherwise.
  static CostCurve from_function(std::vector<int> batch_sizes, int max_k,
                                 const std::function<double(int b, int k)>& seconds,
                                 std::string source = "function");
  // Parses the CSV format above. `source` names the text in error messages. Throws
  // std::runtime_error("<source>:<line>: <what is wrong>") for a malformed line, a duplicate
  // (b, k), a k outside [0, kMaxDrafts], or a time that is not finite and > 0; and
  // std::runtime_error("<source>: <what is wrong>") for what no one line holds: a missing (b, k),
  // no header, no rows.
  static CostCurve parse_csv(std::string_view text, const std::string& source);
  // Reads and parses a file. Throws std::runtime_error when it cannot be read or parsed.
  static CostCurve load_csv(const std::string& path);
  // The CSV text, times with 6 significant digits; each line of `comment` becomes a '#' line at
  // the top.
  std::string to_csv(const std::string& comment = "") const;

  // T(b, k). A b between two listed batch sizes is interpolated linearly between them; listed
  // sizes give the stored value exactly. Throws std::out_of_range when b is outside
  // [batch_sizes().front(), batch_sizes().back()] or k outside [0, max_k()].
  double seconds(int batch, int k) const;
  const std::vector<int>& batch_sizes() const { return batch_sizes_; }
  int max_k() const { return max_k_; }
  // Where the curve came from (a file name, or "function"), for messages.
  const std::string& source() const { return source_; }

 private:
  CostCurve() = default;
  double at(size_t bi, int k) const { return table_[bi * static_cast<size_t>(max_k_ + 1) + k]; }
  std::vector<int> batch_sizes_;
  int max_k_ = 0;
  std::vector<double> table_;  // (batch_sizes_.size(), max_k_ + 1), row-major
  std::string source_;
};

struct MeasureOptions {
  int context = 64;  // tokens each sequence holds before the timed calls (the KV-cache length)
  int reps = 5;      // timed calls per (b, k); the curve stores their median
  int warmup = 1;    // untimed calls per (b, k) before those
  // Called after each point, for progress output.
  std::function<void(int b, int k, double seconds)> on_point;
};

// Measures T(b, k) of `target`, timed by `clock`: for each b, b new sequences each holding
// `context` tokens; for each k, the median of `reps` extend_batch calls that feed k + 1 tokens to
// every sequence, each call rolled back afterwards. The sequences are removed at the end.
// Requires what from_function requires (so every measured median must be > 0: a clock that
// `target` does not move fails), context >= 1, reps >= 1 and warmup >= 0; throws
// std::invalid_argument otherwise, ContextOverflow if context + max_k + 1 > max_length().
CostCurve measure_cost_curve(BatchTarget& target, const Clock& clock, std::vector<int> batch_sizes,
                             int max_k, const MeasureOptions& options = {});

}  // namespace speclab
