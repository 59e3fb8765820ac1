#pragma once
// A plain Llama forward pass for tests: no KV cache, no threads, no tiling. It recomputes the
// whole sequence and sums attention in double. It shares only the activation quantization and
// the *reference* matrix product with CpuLlama (both checked on their own in
// test_cpu_kernels.cpp), so it pins CpuLlama's orchestration: norms, RoPE positions, the causal
// mask, the GQA head mapping, SwiGLU, the residual stream, the KV cache and the thread split.
// It applies the roundings CpuLlama copies from llama.cpp (cpu_llama.cpp says why): RoPE angles
// formed in float, K, V and q rounded to fp16, the attention weights rounded to fp16. Without
// them the two would differ by far more than float rounding: one fp16 step in an input flips
// 8-bit activation codes downstream.
#include <cmath>
#include <span>
#include <vector>

#include "mini_engine/core/logits.h"
#include "mini_engine/model/llama_weights.h"
#include "mini_engine/targets/cpu_kernels.h"

namespace speclab::testing {

// q8_1_sums: whether the engine's matrix products use the activations' block sums for Q4_1's
// offsets (every kernel but MatmulKernel::reference, which uses exact q * d throughout).
inline Logits reference_llama_logits(const LlamaWeights& w, std::span<const Token> seq,
                                     bool q8_1_sums = true) {
  const LlamaHParams& hp = w.hp;
  const int n = static_cast<int>(seq.size()), E = hp.n_embd, hd = hp.head_dim, F = hp.n_ff;
  const int qd = hp.n_head * hd;
  using Mat = std::vector<std::vector<float>>;
  auto mat = [](int r, int c) { return Mat(static_cast<size_t>(r), std::vector<float>(static_cast<size_t>(c))); };
  auto project = [&](const QuantMatrix& m, const Mat& in) {  // out[t] = m . in[t]
    std::vector<float> flat;
    for (const auto& row : in) flat.insert(flat.end(), row.begin(), row.end());
    cpu::QuantizedActs qa;
    qa.quantize(flat.data(), n, m.cols, m.cols, cpu::act_format_for(m.type));
    std::vector<float> y(static_cast<size_t>(n) * m.rows);
    cpu::matmul(cpu::MatmulKernel::reference, m, qa, y.data(), m.rows, 0, m.rows);
    if (m.type == GgmlType::Q4_1 && q8_1_sums) {
      // The reference product uses the exact activations q * d; Q4_1's offset term m * sum(x)
      // uses the block sum s instead, which the q8_1 format rounds to fp16 (as ggml does).
      for (int t = 0; t < n; ++t) {
        for (int r = 0; r < m.rows; ++r) {
          const auto* blocks = reinterpret_cast<const BlockQ4_1*>(m.row(r));
          double corr = 0;
          for (int b = 0; b < m.cols / 32; ++b) {
            int sum = 0;
            for (int i = 0; i < 32; ++i) sum += qa.q(t)[b * 32 + i];
            corr += static_cast<double>(fp16_to_fp32(blocks[b].m)) *
                    (static_cast<double>(qa.s(t)[b]) - static_cast<double>(qa.d(t)[b]) * sum);
          }
          y[static_cast<size_t>(t) * m.rows + r] += static_cast<float>(corr);
        }
      }
    }
    Mat out = mat(n, m.rows);
    for (int t = 0; t < n; ++t)
      for (int r = 0; r < m.rows; ++r) out[t][r] = y[static_cast<size_t>(t) * m.rows + r];
    return out;
  };
  auto rmsnorm = [&](const Mat& x, const float* g) {
    Mat out = mat(n, E);
    for (int t = 0; t < n; ++t) {
      double ss = 0;
      for (float v : x[t]) ss += static_cast<double>(v) * v;
      const double scale = 1.0 / std::sqrt(ss / E + hp.rms_eps);
      for (int c = 0; c < E; ++c) out[t][c] = static_cast<float>(x[t][c] * scale * g[c]);
    }
    return out;
  };
  const float theta_scale = std::pow(hp.rope_base, -2.0f / static_cast<float>(hd));
  auto rope = [&](std::vector<float>& v, int heads, int pos) {  // adjacent pairs, GGUF layout
    for (int h = 0; h < heads; ++h) {
      float theta_f = static_cast<float>(pos);  // pos * theta_scale^i, in float
      for (int i = 0; i < hd / 2; ++i, theta_f *= theta_scale) {
        const double theta = theta_f;
        float& a = v[h * hd + 2 * i];
        float& b = v[h * hd + 2 * i + 1];
        const double x0 = a, x1 = b;
        a = static_cast<float>(x0 * std::cos(theta) - x1 * std::sin(theta));
        b = static_cast<float>(x0 * std::sin(theta) + x1 * std::cos(theta));
      }
    }
  };

  Mat x = mat(n, E);
  for (int t = 0; t < n; ++t) cpu::dequantize_matrix_row(w.token_embd, seq[t], x[t].data());
  for (const LlamaLayer& L : w.layers) {
    const Mat xn = rmsnorm(x, L.attn_norm);
    Mat q = project(L.wq, xn), k = project(L.wk, xn), v = project(L.wv, xn);
    for (int t = 0; t < n; ++t) {
      rope(q[t], hp.n_head, t);
      rope(k[t], hp.n_head_kv, t);
      for (float& e : q[t]) e = round_to_fp16(e);
      for (float& e : k[t]) e = round_to_fp16(e);
      for (float& e : v[t]) e = round_to_fp16(e);
    }
    Mat att = mat(n, qd);
    for (int t = 0; t < n; ++t) {
      for (int h = 0; h < hp.n_head; ++h) {
        const int g = h / (hp.n_head / hp.n_head_kv);  // query heads share KV heads in groups
        std::vector<double> s(static_cast<size_t>(t) + 1);
        double mx = -1e300;
        for (int j = 0; j <= t; ++j) {
          double dot = 0;
          for (int i = 0; i < hd; ++i) dot += static_cast<double>(q[t][h * hd + i]) * k[j][g * hd + i];
          s[j] = dot / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[j]);
        }
        double z = 0;
        for (double& e : s) z += (e = std::exp(e - mx));
        for (double& e : s) e = round_to_fp16(static_cast<float>(e / z));
        for (int i = 0; i < hd; ++i) {
          double acc = 0;
          for (int j = 0; j <= t; ++j) acc += s[j] * v[j][g * hd + i];
          att[t][h * hd + i] = static_cast<float>(acc);
        }
      }
    }
    const Mat o = project(L.wo, att);
    for (int t = 0; t < n; ++t)
      for (int c = 0; c < E; ++c) x[t][c] += o[t][c];
    const Mat xf = rmsnorm(x, L.ffn_norm);
    const Mat gate = project(L.w_gate, xf), up = project(L.w_up, xf);
    Mat h = mat(n, F);
    for (int t = 0; t < n; ++t)
      for (int c = 0; c < F; ++c) {
        const double gv = gate[t][c];
        h[t][c] = static_cast<float>(gv / (1.0 + std::exp(-gv)) * up[t][c]);
      }
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
