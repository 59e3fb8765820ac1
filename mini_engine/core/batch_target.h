#pragma once
// A model that holds several sequences and scores them together in one call: the batched
// counterpart of Target. A serving engine verifies the drafts of many requests in one forward
// pass; BatchTarget::extend_batch is that pass.
#include <span>
#include <string>
#include <vector>

#include "mini_engine/core/logits.h"
#include "mini_engine/core/target.h"
#include "mini_engine/core/token.h"

namespace speclab {

// One sequence's share of a batched call: the tokens appended to sequence `seq`.
struct BatchItem {
  int seq = -1;                   // an id returned by BatchTarget::add_sequence()
  std::span<const Token> tokens;  // non-empty; not owned (must outlive the call)
};

// Holds any number of sequences (each with its own KV cache, for a real model) that share one
// model. Sequences are named by small integer ids. Not copyable, like Target.
class BatchTarget {
 public:
  BatchTarget() = default;
  BatchTarget(const BatchTarget&) = delete;
  BatchTarget& operator=(const BatchTarget&) = delete;
  virtual ~BatchTarget() = default;

  virtual std::string name() const = 0;
  virtual int vocab_size() const = 0;
  // The most tokens one sequence may hold.
  virtual int max_length() const = 0;

  // Starts a new, empty sequence and returns its id. An id is not reused while the target
  // lives, so a stale id never names another sequence.
  virtual int add_sequence() = 0;
  // Frees a sequence; its id becomes invalid. Throws std::out_of_range for an unknown id.
  virtual void remove_sequence(int seq) = 0;
  // The ids of the live sequences, in ascending order.
  virtual std::vector<int> sequences() const = 0;

  // The tokens sequence `seq` holds, oldest first. Throws std::out_of_range for an unknown id.
  // The span points into the target: valid until the next call that changes any sequence.
  virtual std::span<const Token> tokens(int seq) const = 0;
  int length(int seq) const { return static_cast<int>(tokens(seq).size()); }

  // Appends each item's tokens to its sequence, all in one pass, and returns one Logits per
  // item, in item order: result[j] has items[j].tokens.size() rows, row i scoring the token that
  // follows items[j].tokens[i] in sequence items[j].seq. Each sequence's rows are exactly what
  // Target::extend would give for that sequence alone: batching changes the cost, never the
  // numbers (up to floating-point summation order, for a real model).
  // Requires a non-empty `items`, each naming a distinct live sequence, each with non-empty
  // tokens, every id in [0, vocab_size()).
  // Throws std::invalid_argument (bad item, duplicate or unknown sequence, bad token id) or
  // ContextOverflow (a sequence would pass max_length()); in every case no sequence changes.
  virtual std::vector<Logits> extend_batch(std::span<const BatchItem> items) = 0;

  // extend_batch() without the logits: a batched prefill whose scores nobody reads. Same
  // requirements and errors, and the same sequences afterwards. The default calls extend_batch()
  // and drops the result; a real model overrides it to skip the output projection (and the
  // tokens x vocab result, a gigabyte for 32 prompts of 170 tokens with SmolLM2's vocabulary).
  virtual void append_batch(std::span<const BatchItem> items) { extend_batch(items); }

  // Rolls sequence `seq` back to its first `new_len` tokens.
  // Throws std::out_of_range for an unknown id or new_len outside [0, length(seq)].
  virtual void truncate(int seq, int new_len) = 0;
};

// Checks `items` against the contract of extend_batch (everything but max_length and token ids,
// which implementations check with their own messages). Throws std::invalid_argument naming the
// call (`who`: "extend_batch" or "append_batch") and the first bad item. For implementations of
// BatchTarget.
void check_batch_items(const BatchTarget& target, std::span<const BatchItem> items,
                       const char* who = "extend_batch");

// One sequence of a BatchTarget seen as a plain Target, so the single-sequence loops
// (run_baseline, run_speculative) run on it unchanged: extend() is extend_batch() with one item.
// The view does not own the sequence and must not outlive `target`; the sequence must stay live.
class SequenceView final : public Target {
 public:
  // Throws std::out_of_range when `seq` is not a live sequence of `target`.
  SequenceView(BatchTarget& target, int seq);

  std::string name() const override;
  int vocab_size() const override { return target_.vocab_size(); }
  int max_length() const override { return target_.max_length(); }
  std::span<const Token> tokens() const override { return target_.tokens(seq_); }
  Logits extend(std::span<const Token> tokens) override;
  void append(std::span<const Token> tokens) override;  // append_batch() with one item
  void truncate(int new_len) override { target_.truncate(seq_, new_len); }
  int seq() const { return seq_; }

 private:
  BatchTarget& target_;
  int seq_;
};

}  // namespace speclab
