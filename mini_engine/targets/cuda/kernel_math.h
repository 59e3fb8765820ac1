#pragma once
// The arithmetic inside CudaLlama's kernels, as plain functions that compile for the host and the
// device (SPECLAB_HD). The kernels in cuda_llama.cu are thin launchers that call these; the host
// tests (tests/cuda/) run the very same functions over whole tensors and compare them with the
// CPU reference. So a wrong formula or a wrong index fails a test here, without a GPU.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "mini_engine/model/quant.h"  // SPECLAB_HD and the block dequantizers

namespace speclab::kmath {

// ---- RMSNorm: y_i = x_i * w_i / sqrt(mean(x^2) + eps) ----

// 1 / sqrt(sum_sq / n + eps), from the row's sum of squares (n >= 1 elements).
SPECLAB_HD inline float rms_inverse(float sum_sq, int n, float eps) {
  return 1.0f / sqrtf(sum_sq / static_cast<float>(n) + eps);
}
SPECLAB_HD inline float rmsnorm_element(float x, float weight, float inv_rms) {
  return x * inv_rms * weight;
}

// ---- RoPE, in the layout GGUF's Llama Q/K weights expect ----
// llama.cpp's converter permutes the Q and K projection rows of Hugging Face Llama checkpoints so
// that each rotated pair is two *adjacent* lanes (2i, 2i+1) of a head (ggml's "normal" rope mode),
// not lanes i and i + d/2 as in the Hugging Face code. Using the other pairing on these weights
// silently scrambles attention.

// The lanes of rotation pair `pair` (0 <= pair < rot_dim / 2) within one head.
SPECLAB_HD inline int rope_lane0(int pair, int /*rot_dim*/) { return 2 * pair; }
SPECLAB_HD inline int rope_lane1(int pair, int /*rot_dim*/) { return 2 * pair + 1; }

// The rotation angle of pair `pair` at position `pos`: pos * base^(-2 pair / rot_dim).
SPECLAB_HD inline float rope_angle(int pos, int pair, int rot_dim, float freq_base) {
  return static_cast<float>(pos) *
         powf(freq_base, -2.0f * static_cast<float>(pair) / static_cast<float>(rot_dim));
}

// Rotates (x0, x1) by `angle`.
SPECLAB_HD inline void rope_rotate(float x0, float x1, float angle, float* y0, float* y1) {
  const float c = cosf(angle);
  const float s = sinf(angle);
  *y0 = x0 * c - x1 * s;
  *y1 = x0 * s + x1 * c;
}

// ---- SwiGLU: silu(gate) * up ----
SPECLAB_HD inline float swiglu(float gate, float up) { return gate / (1.0f + expf(-gate)) * up; }

// ---- Attention split over chunks of keys (flash-decoding) ----
// A decode step has only n_heads x T queries, too few blocks to fill a GPU, so the keys are
// split into chunks and each chunk is reduced on its own to (m, l, acc): its max score m,
// l = sum of exp(s - m) and acc = sum of exp(s - m) * v over its keys (softmax_weight with
// inv_sum = 1). The chunks then merge exactly: with M the largest m,
//   out = sum_c acc_c * w_c / sum_c l_c * w_c,   w_c = chunk_rescale(m_c, M).
// A chunk whose keys are all masked has m = -infinity, and weight 0.
SPECLAB_HD inline float chunk_rescale(float chunk_max, float global_max) {
  return chunk_max == -INFINITY ? 0.0f : expf(chunk_max - global_max);
}

// ---- Fused projections ----
// CudaLlama stacks the rows of W_q, W_k and W_v into one (q_dim + 2 kv_dim) x dim matrix, and
// those of W_gate and W_up into one 2 n_ff x dim matrix, so each is one GEMM (Y = X W^T). Row t
// of the product then holds the pieces side by side, at these offsets.

// Where token t's q, k and v start in the fused Q|K|V output, and its row length.
struct QkvLayout {
  int q = 0, k = 0, v = 0;  // offsets within a row
  int row = 0;              // floats per token
};
SPECLAB_HD inline QkvLayout qkv_layout(int n_heads, int n_kv_heads, int head_dim) {
  QkvLayout l;
  l.q = 0;
  l.k = n_heads * head_dim;
  l.v = l.k + n_kv_heads * head_dim;
  l.row = l.v + n_kv_heads * head_dim;
  return l;
}

// Element i = t * n_ff + j of the SwiGLU input reads its gate and up here, in the fused
// Gate|Up output (2 n_ff floats per token).
SPECLAB_HD inline std::int64_t gate_index(std::int64_t i, int n_ff) {
  return (i / n_ff) * 2 * n_ff + i % n_ff;
}
SPECLAB_HD inline std::int64_t up_index(std::int64_t i, int n_ff) {
  return gate_index(i, n_ff) + n_ff;
}

// ---- Attention over the KV cache ----

// Which KV head query head `head` reads (grouped-query attention). Requires n_kv_heads >= 1
// dividing n_heads, as load_llama_weights checks.
SPECLAB_HD inline int kv_head_of(int head, int n_heads, int n_kv_heads) {
  return head / (n_heads / n_kv_heads);
}

// Index of element `d` of the cached key (or value) of `pos`, in a cache laid out as
// [layer][kv_head][pos][head_dim], row-major.
SPECLAB_HD inline std::size_t kv_index(int layer, int kv_head, int pos, int d, int n_kv_heads,
                                       int max_len, int head_dim) {
  return ((static_cast<std::size_t>(layer) * n_kv_heads + kv_head) * max_len + pos) * head_dim + d;
}

// The causal mask inside the appended block: a query at absolute position q_pos sees keys at
// positions 0..q_pos and nothing after.
SPECLAB_HD inline bool key_visible(int key_pos, int query_pos) { return key_pos <= query_pos; }

// Scaled score of one (query, key) pair; -infinity when the key is masked.
SPECLAB_HD inline float attention_score(float dot, float scale, int key_pos, int query_pos) {
  return key_visible(key_pos, query_pos) ? dot * scale : -INFINITY;
}

// Softmax weight of a score given the row's max and the sum of exp(score - max).
SPECLAB_HD inline float softmax_weight(float score, float row_max, float inv_sum) {
  return score == -INFINITY ? 0.0f : expf(score - row_max) * inv_sum;
}

}  // namespace speclab::kmath
