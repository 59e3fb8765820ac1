#pragma once
// A plain Llama forward pass for tests: no KV cache, no threads, no tiling; it recomputes the
// whole sequence. It shares the arithmetic of each step with CpuLlama -- the activation
// quantization, the matrix product, RoPE, the fp16 attention of one query and SwiGLU's silu_mul,
// each checked on its own in test_cpu_kernels.cpp -- and does the rest (RMSNorm, the residual
// adds) with the same float operations. So it pins CpuLlama's orchestration: which rows, heads
// and positions go into each step: norms, RoPE positions, the causal mask, the GQA head
// mapping, the residual stream, the KV cache, chunking and the thread split.
// Why share rather than recompute in double: CpuLlama rounds to fp16 (K, V, q, the attention
// weights) and to 8 bits (every matrix input) as llama.cpp does, and a last-bit difference
// before such a rounding can flip it; in a model this small one flipped code moves the logits
// by 0.1 or more, which would hide the bugs this test is for.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "mini_engine/core/logits.h"
#include "mini_engine/model/llama_weights.h"
#include "mini_engine/targets/cpu_attention.h"
#include "mini_engine/targets/cpu_kernels.h"

namespace speclab::testing {

// `kernel`: the matrix product, the same one the engine under test uses.
inline Logits reference_llama_logits(const LlamaWeights& w, std::span<const Token> seq,
                                     cpu::MatmulKernel kernel) {
  const LlamaHParams& hp = w.hp;
  const int n = static_cast<int>(seq.size()), E = hp.n_embd, hd = hp.head_dim, F = hp.n_ff;
  const int qd = hp.n_head * hd;
  using Mat = std::vector<std::vector<float>>;
  auto mat = [](int r, int c) {
    return Mat(static_cast<size_t>(r), std::vector<float>(static_cast<size_t>(c)));
  };
  auto project = [&](const QuantMatrix& m, const Mat& in) {  // out[t] = m . in[t]
    std::vector<float> flat;
    for (const auto& row : in) flat.insert(flat.end(), row.begin(), row.end());
    cpu::QuantizedActs qa;
    qa.quantize(flat.data(), n, m.cols, m.cols, cpu::act_format_for(m.type));
    std::vector<float> y(static_cast<size_t>(n) * m.rows);
    cpu::matmul(kernel, m, qa, y.data(), m.rows, 0, m.rows);
    Mat out = mat(n, m.rows);
    for (int t = 0; t < n; ++t)
      for (int r = 0; r < m.rows; ++r) out[t][r] = y[static_cast<size_t>(t) * m.rows + r];
    return out;
  };
  auto rmsnorm = [&](const Mat& x, const float* g) {  // as ggml: float squares summed in double
    Mat out = mat(n, E);
    for (int t = 0; t < n; ++t) {
      double ss = 0;
      for (float v : x[t]) ss += static_cast<double>(v * v);
      const float scale = 1.0f / std::sqrt(static_cast<float>(ss / E) + hp.rms_eps);
      for (int c = 0; c < E; ++c) out[t][c] = (x[t][c] * scale) * g[c];
    }
    return out;
  };
  const float theta_scale = std::pow(hp.rope_base, -2.0f / static_cast<float>(hd));
  Mat x = mat(n, E);
  for (int t = 0; t < n; ++t) cpu::dequantize_matrix_row(w.token_embd, seq[t], x[t].data());
  for (const LlamaLayer& L : w.layers) {
    const Mat xn = rmsnorm(x, L.attn_norm);
    Mat q = project(L.wq, xn), k = project(L.wk, xn), v = project(L.wv, xn);
    // K and V as the engine caches them, per KV head: fp16 keys in 16-position blocks
    // (cpu::key_index), fp16 value rows (len, hd).
    std::vector<std::vector<std::uint16_t>> k16(static_cast<size_t>(hp.n_head_kv)),
        v16(static_cast<size_t>(hp.n_head_kv));
    for (int t = 0; t < n; ++t) {
      for (int h = 0; h < hp.n_head; ++h) cpu::rope(&q[t][h * hd], hd, t, theta_scale);
      for (int g = 0; g < hp.n_head_kv; ++g) {
        cpu::rope(&k[t][g * hd], hd, t, theta_scale);
        k16[g].resize(static_cast<size_t>(cpu::key_slots(n)) * hd);
        v16[g].resize(static_cast<size_t>(n) * hd);
        cpu::store_key_fp16(&k[t][g * hd], hd, t, k16[g].data());
        cpu::to_fp16(&v[t][g * hd], hd, &v16[g][static_cast<size_t>(t) * hd]);
      }
    }
    Mat att = mat(n, qd);
    cpu::AlignedVector<float> p(static_cast<size_t>(cpu::key_slots(n)));
    std::vector<float> q16(static_cast<size_t>(hd));
    for (int t = 0; t < n; ++t) {
      for (int h = 0; h < hp.n_head; ++h) {
        const int g = h / (hp.n_head / hp.n_head_kv);  // query heads share KV heads in groups
        std::copy_n(&q[t][h * hd], hd, q16.data());
        cpu::round_fp16_inplace(q16.data(), hd);
        // Causal: query t sees positions 0..t. One query at a time (the engine passes several).
        const cpu::AttentionQuery query{q16.data(), t + 1, &att[t][h * hd]};
        cpu::attend_fp16(k16[g].data(), v16[g].data(), hd, 1.0f / std::sqrt(static_cast<float>(hd)),
                         &query, 1, p.data());
      }
    }
    const Mat o = project(L.wo, att);
    for (int t = 0; t < n; ++t)
      for (int c = 0; c < E; ++c) x[t][c] += o[t][c];
    const Mat xf = rmsnorm(x, L.ffn_norm);
    const Mat gate = project(L.w_gate, xf), up = project(L.w_up, xf);
    // SwiGLU through the engine's own silu_mul: its exp is a few ulps from std::exp, and one
    // ulp can flip an 8-bit code of Wdown's input (silu_mul is checked on its own).
    Mat h = gate;
    for (int t = 0; t < n; ++t) cpu::silu_mul(h[t].data(), up[t].data(), F);
    const Mat d = project(L.w_down, h);
    for (int t = 0; t < n; ++t)
      for (int c = 0; c < E; ++c) x[t][c] += d[t][c];
  }
  const Mat xo = rmsnorm(x, w.output_norm);
  const Mat logits = project(w.output, xo);
  Logits out(n, hp.n_vocab);
  for (int t = 0; t < n; ++t)
    for (int r = 0; r < hp.n_vocab; ++r) out.row(t)[r] = logits[t][r];
  return out;
}

}  // namespace speclab::testing
