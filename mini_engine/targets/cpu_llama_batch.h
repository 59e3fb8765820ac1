#pragma once
// CpuLlama, batched: several sequences, each with its own KV cache, sharing one model. One
// extend_batch call runs every token of every item through each weight matrix together, so the
// weights are read once per call however many sequences it serves -- the batching that makes a
// serving engine's decode step cheap per sequence, and that makes a verify pass dearer the more
// sequences share it (lab 06).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mini_engine/core/batch_target.h"
#include "mini_engine/targets/cpu_llama.h"

namespace speclab {

class CpuLlamaBatch final : public BatchTarget {
 public:
  // Opens and maps the GGUF at `path`. Same errors as CpuLlama::open.
  static std::unique_ptr<CpuLlamaBatch> open(const std::string& path, CpuLlamaOptions options = {});
  // Takes ownership of an already parsed file (see CpuLlama's constructor). Same errors.
  explicit CpuLlamaBatch(GgufFile file, CpuLlamaOptions options = {});
  ~CpuLlamaBatch() override;

  std::string name() const override;
  int vocab_size() const override { return model_->vocab_size(); }
  // The most tokens one sequence may hold (CpuLlama::max_length()).
  int max_length() const override { return model_->max_length(); }
  int add_sequence() override;
  void remove_sequence(int seq) override;
  std::vector<int> sequences() const override;
  std::span<const Token> tokens(int seq) const override;
  // Every row of sequence s equals what CpuLlama::extend gives for s alone: each token's
  // activations are quantized, multiplied and attended on their own, and only the reading of the
  // weights is shared (bit-identical with this build's kernels; the tests allow 1e-5 of float
  // rounding). The logits of all items are computed into one block, then copied out per item.
  std::vector<Logits> extend_batch(std::span<const BatchItem> items) override;
  // extend_batch() without the output norm and projection.
  void append_batch(std::span<const BatchItem> items) override;
  void truncate(int seq, int new_len) override;

  const LlamaHParams& hparams() const { return model_->hparams(); }
  int threads() const { return model_->threads(); }

 private:
  struct Sequence {
    std::vector<Token> tokens;
    CpuLlama::KvCache kv;
  };
  Sequence& at(int seq, const char* who) const;
  // Checks `items` (messages name `who`), runs them in one pass, appends them to their
  // sequences, and returns their logits, or nothing when want_logits is false.
  std::vector<Logits> run(std::span<const BatchItem> items, bool want_logits, const char* who);

  std::unique_ptr<CpuLlama> model_;  // weights, RoPE table, scratch; its own sequence stays empty
  std::map<int, std::unique_ptr<Sequence>> seqs_;  // owned by pointer: caches never move
  int next_id_ = 0;
};

}  // namespace speclab
