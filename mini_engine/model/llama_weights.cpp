#include "mini_engine/model/llama_weights.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace speclab {
namespace {

class Loader {
 public:
  explicit Loader(const GgufFile& f) : f_(f) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ModelError(f_.path() + ": " + what);
  }

  // An optional integer key: nullopt when absent; a value of another type is an error, not 0.
  std::optional<std::int64_t> optional_int(const std::string& key) const {
    if (!f_.find(key)) return std::nullopt;
    try {
      return f_.get_int(key);
    } catch (const GgufError& e) {
      fail(e.what());
    }
  }

  // A required positive integer hyperparameter.
  int hparam(const std::string& key) const {
    const std::optional<std::int64_t> x = optional_int(key);
    if (!x) fail("metadata key '" + key + "' is missing (a Llama model needs it)");
    if (*x < 1 || *x > std::numeric_limits<int>::max()) {
      fail("metadata key '" + key + "' = " + std::to_string(*x) + " is out of range");
    }
    return static_cast<int>(*x);
  }

  float real_param(const std::string& key) const {
    if (!f_.find(key)) fail("metadata key '" + key + "' is missing (a Llama model needs it)");
    double x = 0;
    try {
      x = f_.get_real(key);
    } catch (const GgufError& e) {
      fail(e.what());
    }
    if (!(x > 0.0) || x > 1e30) {  // NaN and infinity included
      char shown[32];
      std::snprintf(shown, sizeof shown, "%g", x);
      fail("metadata key '" + key + "' = " + shown + " must be positive and at most 1e+30");
    }
    return static_cast<float>(x);
  }

  const GgufTensor& tensor(const std::string& name) const {
    const GgufTensor* t = f_.tensor(name);
    if (!t) fail("tensor '" + name + "' is missing");
    return *t;
  }

  static std::string shape_str(const std::vector<std::int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  }

  // A weight matrix of ggml shape [cols, rows].
  QuantMatrix matrix(const std::string& name, int cols, int rows) const {
    const GgufTensor& t = tensor(name);
    const std::vector<std::int64_t> want = {cols, rows};
    if (t.shape != want) {
      fail("tensor '" + name + "' has shape " + shape_str(t.shape) + ", expected " +
           shape_str(want) + " from the hyperparameters");
    }
    if (t.type != GgmlType::Q4_0 && t.type != GgmlType::Q4_1 && t.type != GgmlType::Q8_0) {
      fail("tensor '" + name + "' has type " + ggml_type_name(static_cast<std::uint32_t>(t.type)) +
           "; CpuLlama supports Q4_0, Q4_1 and Q8_0 matrices");
    }
    // Every ggml block starts with fp16 scales, which the kernels read as 2-byte values.
    if (reinterpret_cast<std::uintptr_t>(t.data) % alignof(std::uint16_t) != 0) {
      fail("tensor '" + name + "' is not 2-byte aligned in the file");
    }
    QuantMatrix m;
    m.type = t.type;
    m.data = t.data;
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = ggml_row_bytes(t.type, cols);
    const std::int64_t per_row = cols / kQuantBlock;
    const std::int64_t bad =
        first_nonfinite_block(t.type, t.data, static_cast<std::int64_t>(rows) * per_row);
    if (bad >= 0) {
      fail("tensor '" + name + "' has a scale that is not finite in row " +
           std::to_string(bad / per_row) + ", block " + std::to_string(bad % per_row) +
           " (inf or NaN: the weights are corrupt)");
    }
    return m;
  }

  const float* norm(const std::string& name, int n) const {
    const GgufTensor& t = tensor(name);
    if (t.shape != std::vector<std::int64_t>{n}) {
      fail("tensor '" + name + "' has shape " + shape_str(t.shape) + ", expected [" +
           std::to_string(n) + "]");
    }
    if (t.type != GgmlType::F32) {
      fail("tensor '" + name + "' has type " + ggml_type_name(static_cast<std::uint32_t>(t.type)) +
           ", expected F32");
    }
    if (reinterpret_cast<std::uintptr_t>(t.data) % alignof(float) != 0) {
      fail("tensor '" + name + "' is not 4-byte aligned in the file");
    }
    const float* w = reinterpret_cast<const float*>(t.data);
    for (int i = 0; i < n; ++i) {
      if (!std::isfinite(w[i])) {
        fail("tensor '" + name + "' holds " +
             (std::isnan(w[i]) ? "nan"
              : w[i] > 0       ? "inf"
                               : "-inf") +
             " at index " + std::to_string(i) + " (the weights are corrupt)");
      }
    }
    return w;
  }

 private:
  const GgufFile& f_;
};

}  // namespace

LlamaWeights load_llama_weights(const GgufFile& file) {
  Loader ld(file);
  if (!file.find("general.architecture")) ld.fail("metadata key 'general.architecture' is missing");
  std::string arch;
  try {
    arch = file.get_string("general.architecture");
  } catch (const GgufError& e) {
    ld.fail(e.what());
  }
  if (arch != "llama") {
    ld.fail("general.architecture is '" + clipped(arch) +
            "'; SpecLab's Llama targets run only 'llama'");
  }

  // Q4_0, Q4_1 and Q8_0 changed their block layouts twice in 2023, before GGUF existed; every
  // GGUF file holds version 2, and reading another version's blocks as these gives garbage.
  if (const auto version = ld.optional_int("general.quantization_version");
      version && *version != 2) {
    ld.fail("general.quantization_version is " + std::to_string(*version) +
            "; SpecLab reads ggml's quantization format 2, the one GGUF files hold");
  }

  LlamaWeights w;
  LlamaHParams& hp = w.hp;
  hp.n_ctx_train = ld.hparam("llama.context_length");
  hp.n_embd = ld.hparam("llama.embedding_length");
  hp.n_layer = ld.hparam("llama.block_count");
  hp.n_ff = ld.hparam("llama.feed_forward_length");
  hp.n_head = ld.hparam("llama.attention.head_count");
  hp.n_head_kv = ld.hparam("llama.attention.head_count_kv");
  hp.rms_eps = ld.real_param("llama.attention.layer_norm_rms_epsilon");
  hp.rope_base = ld.real_param("llama.rope.freq_base");

  if (hp.n_embd % hp.n_head != 0) {
    ld.fail("llama.attention.head_count = " + std::to_string(hp.n_head) +
            " does not divide llama.embedding_length = " + std::to_string(hp.n_embd));
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    ld.fail("llama.attention.head_count_kv = " + std::to_string(hp.n_head_kv) +
            " does not divide llama.attention.head_count = " + std::to_string(hp.n_head));
  }
  hp.head_dim = hp.n_embd / hp.n_head;
  if (hp.head_dim % 2 != 0) {
    ld.fail("head dimension " + std::to_string(hp.head_dim) + " is odd; RoPE rotates pairs");
  }
  if (const auto rope_dims = ld.optional_int("llama.rope.dimension_count")) {
    if (*rope_dims != hp.head_dim) {
      ld.fail("llama.rope.dimension_count = " + std::to_string(*rope_dims) +
              " differs from the head dimension " + std::to_string(hp.head_dim) +
              "; partial rotary embeddings are not supported");
    }
  }
  if (hp.n_embd % kQuantBlock != 0 || hp.n_ff % kQuantBlock != 0) {
    ld.fail("llama.embedding_length and llama.feed_forward_length must be multiples of 32");
  }

  const GgufTensor& embd = ld.tensor("token_embd.weight");
  if (embd.shape.size() != 2 || embd.shape[0] != hp.n_embd || embd.shape[1] < 1 ||
      embd.shape[1] > std::numeric_limits<int>::max()) {
    ld.fail("tensor 'token_embd.weight' has shape " + Loader::shape_str(embd.shape) +
            ", expected [" + std::to_string(hp.n_embd) + ", n_vocab]");
  }
  hp.n_vocab = static_cast<int>(embd.shape[1]);
  if (const auto vocab = ld.optional_int("llama.vocab_size")) {
    if (*vocab != hp.n_vocab) {
      ld.fail("llama.vocab_size = " + std::to_string(*vocab) +
              " differs from the rows of token_embd.weight (" + std::to_string(hp.n_vocab) + ")");
    }
  }
  // Every id the model can emit must have a text, and every id the tokenizer makes a row: with
  // fewer tokens than rows, generation broke off mid-reply at the first id past the tokenizer.
  if (const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->type == GgufType::ARRAY &&
      tokens->array_type == GgufType::STRING &&
      tokens->strings.size() != static_cast<std::size_t>(hp.n_vocab)) {
    ld.fail("tokenizer.ggml.tokens holds " + std::to_string(tokens->strings.size()) +
            " tokens, but token_embd.weight has " + std::to_string(hp.n_vocab) +
            " rows (one per token id): the tokenizer and the weights do not belong together");
  }
  w.token_embd = ld.matrix("token_embd.weight", hp.n_embd, hp.n_vocab);

  // A corrupt (smaller) block count would leave later blocks unread and run a shallower model
  // that prints garbage without a word: every blk.N tensor must belong to a block it counts.
  for (const GgufTensor& t : file.tensors()) {
    if (t.name.rfind("blk.", 0) != 0) continue;
    const std::size_t dot = t.name.find('.', 4);
    const std::string digits = t.name.substr(4, dot == std::string::npos ? dot : dot - 4);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;  // not a block tensor's name: left to the checks of the tensors read
    }
    if (std::stoi(digits) >= hp.n_layer) {
      ld.fail("tensor '" + clipped(t.name) + "' belongs to block " + digits +
              ", but llama.block_count is " + std::to_string(hp.n_layer) + " (blocks 0 to " +
              std::to_string(hp.n_layer - 1) + "): a corrupt block count?");
    }
  }

  const int q_dim = hp.n_head * hp.head_dim;
  for (int l = 0; l < hp.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LlamaLayer L;
    L.attn_norm = ld.norm(p + "attn_norm.weight", hp.n_embd);
    L.wq = ld.matrix(p + "attn_q.weight", hp.n_embd, q_dim);
    L.wk = ld.matrix(p + "attn_k.weight", hp.n_embd, hp.kv_dim());
    L.wv = ld.matrix(p + "attn_v.weight", hp.n_embd, hp.kv_dim());
    L.wo = ld.matrix(p + "attn_output.weight", q_dim, hp.n_embd);
    L.ffn_norm = ld.norm(p + "ffn_norm.weight", hp.n_embd);
    L.w_gate = ld.matrix(p + "ffn_gate.weight", hp.n_embd, hp.n_ff);
    L.w_up = ld.matrix(p + "ffn_up.weight", hp.n_embd, hp.n_ff);
    L.w_down = ld.matrix(p + "ffn_down.weight", hp.n_ff, hp.n_embd);
    w.layers.push_back(L);
  }
  w.output_norm = ld.norm("output_norm.weight", hp.n_embd);
  if (file.tensor("output.weight")) {
    w.output = ld.matrix("output.weight", hp.n_embd, hp.n_vocab);
  } else {
    w.output = w.token_embd;  // tied: the logits reuse the embedding table
    w.tied_output = true;
  }
  return w;
}

}  // namespace speclab
