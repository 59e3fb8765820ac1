#pragma once
// The Llama architecture as stored in a GGUF file: hyperparameters from the llama.* metadata and
// views of every weight tensor, checked for presence, type and shape before anything runs.
//
// Shared by every Llama target (CpuLlama, CudaLlama): they differ in how they compute, not in
// what the file means.
#include <cstdint>
#include <string>
#include <vector>

#include "mini_engine/core/printable.h"
#include "mini_engine/model/gguf.h"
#include "mini_engine/model/quant.h"

namespace speclab {

// Thrown when a GGUF file parses but is not a Llama model SpecLab can run: wrong architecture,
// a missing key or tensor, a shape that does not fit the hyperparameters, an unsupported type.
class ModelError : public std::runtime_error {
 public:
  // The message is kept printable(): it quotes names from the file, which may hold any byte.
  explicit ModelError(const std::string& message) : std::runtime_error(printable(message)) {}
};

struct LlamaHParams {
  int n_vocab = 0;         // rows of token_embd.weight
  int n_ctx_train = 0;     // llama.context_length: the longest sequence the model was trained on
  int n_embd = 0;          // llama.embedding_length
  int n_layer = 0;         // llama.block_count
  int n_ff = 0;            // llama.feed_forward_length
  int n_head = 0;          // llama.attention.head_count
  int n_head_kv = 0;       // llama.attention.head_count_kv (grouped-query attention)
  int head_dim = 0;        // n_embd / n_head
  float rms_eps = 0.0f;    // llama.attention.layer_norm_rms_epsilon
  float rope_base = 0.0f;  // llama.rope.freq_base

  int kv_dim() const { return n_head_kv * head_dim; }  // width of one K (or V) row
};

// A quantized (or float) weight matrix straight from the mapping: `rows` rows of `cols` weights,
// each row stored as ggml blocks of `type`, rows packed back to back. In ggml's shape order this
// is a tensor of shape [cols, rows]. Does not own `data`: valid while the GgufFile lives.
struct QuantMatrix {
  GgmlType type = GgmlType::F32;
  const std::uint8_t* data = nullptr;
  int rows = 0;
  int cols = 0;
  std::uint64_t row_bytes = 0;

  // Row r's blocks. Requires 0 <= r < rows (unchecked).
  const std::uint8_t* row(int r) const { return data + static_cast<std::uint64_t>(r) * row_bytes; }
};

struct LlamaLayer {
  const float* attn_norm = nullptr;  // (n_embd)
  QuantMatrix wq;                    // (n_head * head_dim, n_embd): q = wq . x
  QuantMatrix wk;                    // (n_head_kv * head_dim, n_embd)
  QuantMatrix wv;                    // (n_head_kv * head_dim, n_embd)
  QuantMatrix wo;                    // (n_embd, n_head * head_dim)
  const float* ffn_norm = nullptr;   // (n_embd)
  QuantMatrix w_gate;                // (n_ff, n_embd)
  QuantMatrix w_up;                  // (n_ff, n_embd)
  QuantMatrix w_down;                // (n_embd, n_ff)
};

struct LlamaWeights {
  LlamaHParams hp;
  QuantMatrix token_embd;              // (n_vocab, n_embd): row t is token t's embedding
  std::vector<LlamaLayer> layers;      // n_layer
  const float* output_norm = nullptr;  // (n_embd)
  QuantMatrix output;                  // (n_vocab, n_embd); token_embd itself when the file has
                                       // no output.weight (tied embeddings)
  bool tied_output = false;
};

// Reads the hyperparameters and binds every tensor of `file`. Requires
// general.architecture == "llama". Matrices may be Q4_0, Q4_1, Q8_0 (rows a multiple of 32
// weights); norms must be F32. Where the file has a tokenizer (tokenizer.ggml.tokens, an array
// of strings; its other checks are the Tokenizer's), it must have one token per row of
// token_embd.weight. Also refused: a scale or norm weight that is inf or NaN, a tensor not
// aligned for its type, quantization_version other than 2, partial RoPE, an odd head dimension,
// and blk.N tensors past block_count. Throws ModelError naming the file and the key, tensor or
// dimension that is wrong. The returned views point into `file`, which must outlive them.
LlamaWeights load_llama_weights(const GgufFile& file);

}  // namespace speclab
