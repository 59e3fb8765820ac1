#pragma once
// CpuLlama: a Llama-architecture model from a GGUF file, run on the CPU, as a Target.
//
// The forward pass (book/engine_forward.md): token embedding, then per layer
//   x += Wo . attention(rope(Wq . rmsnorm(x)), rope(Wk . rmsnorm(x)), Wv . rmsnorm(x))
//   x += Wdown . (silu(Wgate . rmsnorm(x)) * (Wup . rmsnorm(x)))
// and logits = Wout . rmsnorm(x), where Wout is the embedding table when the file ties them.
//
// The weights stay in their quantized ggml blocks: the default kernel reads a copy repacked once
// at load time into one block of memory (weight_arena.h), the others the memory-mapped file. The
// matrix products quantize activations to 8 bits and use integer dot products (cpu_kernels.h).
// Every token of one extend() call goes through each weight matrix together, so a verify pass over
// k + 1 tokens reads the weights once, like a single decode step.
#include <memory>
#include <string>
#include <vector>

#include "mini_engine/core/target.h"
#include "mini_engine/model/gguf.h"
#include "mini_engine/model/llama_weights.h"
#include "mini_engine/targets/cpu_kernels.h"

namespace speclab {

// The most worker threads CpuLlamaOptions::threads may ask for (each has its own buffers).
inline constexpr int kMaxCpuThreads = 1024;

struct CpuLlamaOptions {
  int threads = 0;  // worker threads, 0..kMaxCpuThreads; 0 = every core (hardware_concurrency).
                    // A thread that waits for another spins ~50 us, then sleeps
                    // (spin_barrier.h): cores busy with other programs slow a pass, not stall it
  int max_context = 0;  // the most tokens a sequence may hold; 0 = the model's
                        // llama.context_length, otherwise the smaller of the two
  // packed: the weights are repacked once at load time (cpu::PackedMatrix, as much memory again
  // as the matrices); reference/scalar/simd read the mapped file as is (tests, comparisons).
  cpu::MatmulKernel kernel = cpu::MatmulKernel::packed;
};

class CpuLlama final : public Target {
 public:
  // Opens and maps the GGUF at `path`. Throws GgufError / std::runtime_error for a file that
  // cannot be read, ModelError for one that is not a runnable Llama model (the message names
  // the key, tensor or shape), std::invalid_argument for bad options.
  static std::unique_ptr<CpuLlama> open(const std::string& path, CpuLlamaOptions options = {});

  // Takes ownership of an already parsed file (GgufFile::parse keeps pointing into the caller's
  // bytes, which must then outlive this object). Same errors as open().
  explicit CpuLlama(GgufFile file, CpuLlamaOptions options = {});
  ~CpuLlama() override;

  // "cpu-llama(NAME, T threads)" ("1 thread" for one): NAME is the file's general.name ("llama"
  // without one), printable() and clipped() to 64 bytes.
  std::string name() const override;
  int vocab_size() const override { return w_.hp.n_vocab; }
  int max_length() const override { return max_length_; }
  std::span<const Token> tokens() const override { return tokens_; }
  // One forward pass over all of `tokens` (a prefill, a decode step or a verify pass). Throws
  // std::invalid_argument naming the first id outside [0, vocab_size()), ContextOverflow when
  // length() + tokens.size() > max_length(); the sequence is unchanged in both cases.
  Logits extend(std::span<const Token> tokens) override;
  // extend() without the output norm and projection: the same KV cache, no logits.
  void append(std::span<const Token> tokens) override;
  // Drops the KV-cache entries past new_len (they are overwritten by the next extend). Throws
  // std::out_of_range unless 0 <= new_len <= length().
  void truncate(int new_len) override;

  const LlamaHParams& hparams() const { return w_.hp; }
  const LlamaWeights& weights() const { return w_; }
  int threads() const { return threads_; }
  // The one block that holds every repacked weight matrix, in the order a forward pass reads them
  // (empty unless options.kernel is packed). For tools that report its pages: weight_arena.h.
  const cpu::WeightArena& packed_weights() const { return packed_arena_; }

 private:
  friend class CpuLlamaBatch;  // runs several sequences' KV caches through one forward pass
  struct Scratch;
  // One sequence's KV cache, per layer l and KV head g a slab of capacity * head_dim fp16 values
  // at ((l * n_head_kv + g) * capacity) * head_dim: in v, one row per position,
  // v[slab + pos * head_dim + i]; in k, keys in 16-position blocks, k[slab + cpu::key_index(pos,
  // i, head_dim)] (cpu_attention.h; capacity is a whole number of blocks). fp16 as llama.cpp's
  // default cache (type_k = type_v = F16): half the memory of floats, and the same rounding of
  // K and V as the engine we check against.
  struct KvCache {
    int capacity = 0;
    cpu::AlignedVector<std::uint16_t> k;
    cpu::AlignedVector<std::uint16_t> v;
  };
  // Where one token of a forward pass goes: its sequence's cache and its position there.
  struct RowSlot {
    KvCache* cache;
    int pos;
  };
  // Grows `kv` to hold n_tokens positions, keeping its first `keep` positions.
  void reserve_kv(KvCache& kv, int n_tokens, int keep) const;
  // Throws what extend()/append() throw for `tokens` (`who` names the caller in messages).
  // They call it first, before anything is allocated for the tokens.
  void check_tokens(std::span<const Token> tokens, const std::string& who) const;
  // Runs checked `tokens` in chunks of kMaxChunk and appends them to tokens_. Writes
  // tokens.size() logits rows to `logits`, or none when it is null.
  void run(std::span<const Token> tokens, float* logits);
  // Runs tokens at positions [pos0, pos0 + n) and writes n logits rows to `logits` (none when
  // it is null: the output norm and projection are skipped).
  void forward(const Token* tokens, int n, int pos0, float* logits);
  // Runs n tokens, token t into rows[t].cache at rows[t].pos, and writes n logits rows (none
  // when `logits` is null). Tokens of one sequence must come in increasing position order with no
  // gap after what its cache holds; each attends to positions 0..pos of its own cache. All weight
  // products cover every row at once: that is what batches sequences.
  void forward_rows(const Token* tokens, const RowSlot* rows, int n, float* logits);

  GgufFile file_;
  LlamaWeights w_;
  CpuLlamaOptions options_;
  int threads_ = 1;
  int max_length_ = 0;
  std::string model_name_;
  std::vector<Token> tokens_;
  float rope_theta_scale_ = 1.0f;  // base^(-2 / head_dim), in float as ggml computes it

  KvCache kv_;  // this Target's own sequence

  std::unique_ptr<Scratch> scratch_;

  // The weights repacked for MatmulKernel::packed (empty for the other kernels), all in one
  // arena (huge pages where the kernel has them: weight_arena.h).
  cpu::WeightArena packed_arena_;
  struct PackedLayer {
    cpu::PackedMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
  };
  std::vector<PackedLayer> packed_layers_;
  cpu::PackedMatrix packed_output_;
};

}  // namespace speclab
