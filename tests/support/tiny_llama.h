#pragma once
// A tiny random Llama model written as a GGUF file in memory: for CpuLlama tests that must run
// without the real model, and for the loader's bad-input cases (each field can be broken).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gguf_writer.h"
#include "mini_engine/model/llama_weights.h"
#include "mini_engine/model/quant.h"
#include "mini_engine/sampling/rng.h"

namespace speclab::testing {

struct TinyLlamaSpec {
  std::string arch = "llama";
  int n_vocab = 96, n_embd = 64, n_layer = 2, n_ff = 96, n_head = 4, n_head_kv = 2;
  int n_ctx = 64;
  float rope_base = 10000.0f, rms_eps = 1e-5f;
  std::uint32_t matrix_type = 3;  // ggml id: 2 Q4_0, 3 Q4_1, 8 Q8_0
  std::uint32_t embd_type = 8;
  std::uint32_t quantization_version = 2;  // general.quantization_version, as llama.cpp writes
  bool tied = true;                        // no output.weight
  std::uint64_t seed = 1;
  std::string name = "tiny-test-llama";  // general.name (its length moves the data section)
  std::uint32_t alignment = 32;          // the file's data alignment; other values are written
                                         // as general.alignment
  std::set<std::string> omit;            // metadata keys or tensor names to leave out
  std::map<std::string, std::vector<std::uint64_t>> shape_override;  // tensor -> ggml shape
  std::map<std::string, std::uint32_t> type_override;                // tensor -> ggml type id
  int block_count_key = -1;  // llama.block_count as written; -1: n_layer (the blocks written)
  std::map<std::string, std::uint32_t> extra_u32;  // more metadata keys, written as uint32
  std::map<std::string, float> extra_f32;          // and as float32
  int tokenizer_tokens = 0;  // tokenizer.ggml.tokens written with this many entries; 0: no key
};

// Raw bytes of `rows` x `cols` random weights of ggml type `type` (F32, Q4_0, Q4_1 or Q8_0),
// roughly uniform in [-scale, scale].
inline std::vector<std::uint8_t> random_matrix_bytes(std::uint32_t type, int rows, int cols,
                                                     std::uint64_t seed, float scale) {
  std::vector<std::uint8_t> out;
  std::uint64_t ctr = 0;
  auto u = [&] { return static_cast<float>(uniform01(seed, 7, ctr++, 0)); };
  auto half = [](float f) {  // float -> fp16 (normal range, truncating), enough for test scales
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    const std::uint32_t sign = (b >> 16) & 0x8000u;
    const int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
    if (exp <= 0) return static_cast<std::uint16_t>(sign);
    return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exp) << 10) |
                                      ((b >> 13) & 0x3ffu));
  };
  auto put16 = [&](std::uint16_t h) {
    out.push_back(static_cast<std::uint8_t>(h & 0xff));
    out.push_back(static_cast<std::uint8_t>(h >> 8));
  };
  const long long n = static_cast<long long>(rows) * cols;
  if (type == 0) {
    for (long long i = 0; i < n; ++i) {
      const float f = (2 * u() - 1) * scale;
      std::uint8_t b[4];
      std::memcpy(b, &f, 4);
      out.insert(out.end(), b, b + 4);
    }
    return out;
  }
  for (long long blk = 0; blk < n / 32; ++blk) {
    if (type == 8) {  // Q8_0
      put16(half(scale / 127.0f * (0.5f + u())));
      for (int i = 0; i < 32; ++i)
        out.push_back(static_cast<std::uint8_t>(static_cast<int>(u() * 255) - 127));
    } else {  // Q4_0 / Q4_1
      put16(half(scale / 8.0f * (0.5f + u())));
      if (type == 3) put16(half(-scale * (0.5f + 0.5f * u())));
      for (int i = 0; i < 16; ++i) out.push_back(static_cast<std::uint8_t>(u() * 255.99f));
    }
  }
  return out;
}

// A QuantMatrix view of `b` (from random_matrix_bytes with the same type and shape), which must
// outlive it.
inline QuantMatrix make_matrix(std::uint32_t type, int rows, int cols,
                               const std::vector<std::uint8_t>& b) {
  QuantMatrix m;
  m.type = static_cast<GgmlType>(type);
  m.data = b.data();
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = ggml_row_bytes(m.type, cols);
  return m;
}

inline std::vector<std::uint8_t> build_tiny_llama(const TinyLlamaSpec& s) {
  GgufWriter w;
  auto key_u32 = [&](const std::string& k, std::uint32_t v) {
    if (!s.omit.count(k)) w.kv_u32(k, v);
  };
  auto key_f32 = [&](const std::string& k, float v) {
    if (!s.omit.count(k)) w.kv_f32(k, v);
  };
  if (!s.omit.count("general.architecture")) w.kv_string("general.architecture", s.arch);
  w.kv_string("general.name", s.name);
  if (s.alignment != 32) w.kv_u32("general.alignment", s.alignment);
  key_u32("general.quantization_version", s.quantization_version);
  key_u32("llama.context_length", static_cast<std::uint32_t>(s.n_ctx));
  key_u32("llama.embedding_length", static_cast<std::uint32_t>(s.n_embd));
  key_u32("llama.block_count",
          static_cast<std::uint32_t>(s.block_count_key >= 0 ? s.block_count_key : s.n_layer));
  key_u32("llama.feed_forward_length", static_cast<std::uint32_t>(s.n_ff));
  key_u32("llama.attention.head_count", static_cast<std::uint32_t>(s.n_head));
  key_u32("llama.attention.head_count_kv", static_cast<std::uint32_t>(s.n_head_kv));
  key_f32("llama.rope.freq_base", s.rope_base);
  key_f32("llama.attention.layer_norm_rms_epsilon", s.rms_eps);
  for (const auto& [k, v] : s.extra_u32) w.kv_u32(k, v);
  for (const auto& [k, v] : s.extra_f32) w.kv_f32(k, v);
  if (s.tokenizer_tokens > 0) {
    std::vector<std::string> texts;
    for (int i = 0; i < s.tokenizer_tokens; ++i) texts.push_back("t" + std::to_string(i));
    w.kv_strings("tokenizer.ggml.tokens", texts);
  }

  std::uint64_t seed = s.seed * 1000;
  auto tensor = [&](const std::string& name, std::uint32_t type, int cols, int rows, float scale) {
    ++seed;
    if (s.omit.count(name)) return;
    std::vector<std::uint64_t> shape = {static_cast<std::uint64_t>(cols)};
    if (rows > 0) shape.push_back(static_cast<std::uint64_t>(rows));
    if (auto it = s.type_override.find(name); it != s.type_override.end()) type = it->second;
    auto it = s.shape_override.find(name);
    if (it != s.shape_override.end()) shape = it->second;
    long long n = 1;
    for (auto d : shape) n *= static_cast<long long>(d);
    const int r = static_cast<int>(n / static_cast<long long>(shape[0]));
    const int c = static_cast<int>(shape[0]);
    w.tensor(name, type, shape, random_matrix_bytes(type, r, c, seed, scale));
  };
  auto norm = [&](const std::string& name) {
    ++seed;
    if (s.omit.count(name)) return;
    std::vector<std::uint8_t> b;
    for (int i = 0; i < s.n_embd; ++i) {
      const float f =
          1.0f + 0.25f * static_cast<float>(uniform01(seed, 9, static_cast<std::uint64_t>(i), 0));
      std::uint8_t x[4];
      std::memcpy(x, &f, 4);
      b.insert(b.end(), x, x + 4);
    }
    std::vector<std::uint64_t> shape = {static_cast<std::uint64_t>(s.n_embd)};
    if (auto it = s.shape_override.find(name); it != s.shape_override.end()) shape = it->second;
    w.tensor(name, 0, shape, b);
  };
  const int hd = s.n_embd / s.n_head, kv = s.n_head_kv * hd;
  tensor("token_embd.weight", s.embd_type, s.n_embd, s.n_vocab, 1.0f);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    norm(p + "attn_norm.weight");
    tensor(p + "attn_q.weight", s.matrix_type, s.n_embd, s.n_head * hd, 0.1f);
    tensor(p + "attn_k.weight", s.matrix_type, s.n_embd, kv, 0.1f);
    tensor(p + "attn_v.weight", s.matrix_type, s.n_embd, kv, 0.3f);
    tensor(p + "attn_output.weight", s.matrix_type, s.n_head * hd, s.n_embd, 0.2f);
    norm(p + "ffn_norm.weight");
    tensor(p + "ffn_gate.weight", s.matrix_type, s.n_embd, s.n_ff, 0.3f);
    tensor(p + "ffn_up.weight", s.matrix_type, s.n_embd, s.n_ff, 0.3f);
    tensor(p + "ffn_down.weight", s.matrix_type, s.n_ff, s.n_embd, 0.2f);
  }
  norm("output_norm.weight");
  if (!s.tied) tensor("output.weight", s.matrix_type, s.n_embd, s.n_vocab, 0.5f);
  return w.build(s.alignment);
}

}  // namespace speclab::testing
