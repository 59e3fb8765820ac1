#pragma once
// The ToyTarget, batched: several toy sequences scored in one call, with a configurable cost
// model that advances a simulated clock instead of sleeping, so timing studies are exact, instant
// and reproducible.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mini_engine/core/batch_target.h"
#include "mini_engine/core/clock.h"
#include "mini_engine/targets/toy_target.h"

namespace speclab {

// What one target call costs, as a function of n, the tokens it feeds over all its sequences:
//   T(n) = fixed_seconds + per_token_seconds * n + past_knee_seconds * max(0, n - knee_tokens)
// A roofline in miniature: below the knee a pass is memory-bound (the weights are read once
// whatever n is, so extra tokens are nearly free); past it, it is compute-bound and every token
// pays its arithmetic. knee_tokens = 0 with fixed_seconds = 0 is a purely compute-bound model.
struct ToyCostModel {
  double fixed_seconds = 0.020;       // reading the weights: paid once per call
  double per_token_seconds = 0.0001;  // per-token work hidden under the weight reads
  int knee_tokens = 64;               // tokens per call where arithmetic starts to dominate
  double past_knee_seconds = 0.0015;  // extra seconds per token past the knee

  // T(tokens). Requires tokens >= 1 and knee_tokens >= 0; throws std::invalid_argument otherwise.
  double seconds(int tokens) const;
  // Throws std::invalid_argument naming the field when a field is negative, infinite or NaN,
  // and when every call would cost 0 s (fixed + per-token and past-knee seconds all 0; with
  // only past_knee_seconds > 0, calls below the knee do cost 0).
  void validate() const;
};

// Every sequence is scored exactly as a standalone ToyTarget with the same config would score it
// (the toy's logits are a pure function of config and context), so batched and unbatched runs
// give identical tokens. Each extend_batch or append_batch call advances clock() by
// cost.seconds(total tokens).
class ToyBatchTarget final : public BatchTarget {
 public:
  // Throws std::invalid_argument for a bad config (as ToyTarget does) or cost model.
  explicit ToyBatchTarget(ToyTargetConfig config, ToyCostModel cost = {});

  std::string name() const override;
  int vocab_size() const override { return config_.vocab_size; }
  int max_length() const override { return config_.max_length; }
  int add_sequence() override;
  void remove_sequence(int seq) override;
  std::vector<int> sequences() const override;
  std::span<const Token> tokens(int seq) const override;
  std::vector<Logits> extend_batch(std::span<const BatchItem> items) override;
  // extend_batch() without the logits; the same cost on the clock. Its errors name append_batch.
  void append_batch(std::span<const BatchItem> items) override;
  void truncate(int seq, int new_len) override;

  // The simulated time: the sum of the costs of every extend_batch and append_batch call so far.
  const SimulatedClock& clock() const { return clock_; }
  const ToyCostModel& cost_model() const { return cost_; }
  const ToyTargetConfig& config() const { return config_; }
  std::int64_t calls() const { return calls_; }            // extend/append_batch calls so far
  std::int64_t fed_tokens() const { return fed_tokens_; }  // tokens fed by those calls
  // A prompt that suits the regime, as ToyTarget::make_prompt (the same for every sequence).
  std::vector<Token> make_prompt(int length) const;

 private:
  ToyTarget& at(int seq, const char* who) const;
  // Checks `items` (messages name `who`), advances the clock and extends every sequence.
  std::vector<Logits> run(std::span<const BatchItem> items, const char* who);
  ToyTargetConfig config_;
  ToyCostModel cost_;
  SimulatedClock clock_;
  std::map<int, std::unique_ptr<ToyTarget>> seqs_;
  int next_id_ = 0;
  std::int64_t calls_ = 0;
  std::int64_t fed_tokens_ = 0;
};

}  // namespace speclab
