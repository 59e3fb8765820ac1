#pragma once
// The per-head arithmetic of CpuLlama's attention: RoPE, the fp16 KV cache's layout, and the
// attention of a KV head's queries over it, each with the roundings llama.cpp's CPU path makes
// (cpu_attention.cpp says which and why). CpuLlama's forward pass decides which rows, heads and
// positions go in; these functions only compute. Kept apart so that tests can run the same
// arithmetic in a plain reference forward pass (tests/model/llama_reference.h) and check it on its
// own (tests/model/test_cpu_kernels.cpp).
#include <cstddef>
#include <cstdint>

namespace speclab::cpu {

// RoPE as GGUF's llama weights need it: rotates the adjacent pairs (x[2i], x[2i+1]) of one head
// by theta_i = pos * theta_scale^i, theta_scale = base^(-2 / head_dim), i < head_dim / 2.
// Requires head_dim even. Writes x in place. Same as rope_angles then rope_apply.
void rope(float* x, int head_dim, int pos, float theta_scale);

// The rotation for one position, to share between the heads and layers that use it:
// cs[2i] = cos(theta_i), cs[2i + 1] = sin(theta_i). cs has room for head_dim floats.
void rope_angles(int head_dim, int pos, float theta_scale, float* cs);

// Rotates one head's x in place by the angles rope_angles gave (bit-identical to rope()).
void rope_apply(float* x, int head_dim, const float* cs);

// out[0..n) = fp16(x[0..n)), rounded to nearest even.
void to_fp16(const float* x, int n, std::uint16_t* out);

// x[0..n) rounded to fp16 in place (kept as floats).
void round_fp16_inplace(float* x, int n);

// ---- the KV cache's layout ----
// Values are cached as rows: (len, hd) fp16, value j at v + j * hd.
// Keys are cached "in lanes": in blocks of kKeyBlock positions, and inside a block by dimension,
//   key j, dimension i  at  keys[key_index(j, i, hd)] = keys[(j / 16) * 16 * hd + i * 16 + j % 16],
// so that one vector load brings the same dimension of 16 keys. A query's scores against 16 keys
// are then hd FMAs with q[i] broadcast (no horizontal sums), and every query of a pass that reads
// the same KV head reuses each loaded and widened key vector.
constexpr int kKeyBlock = 16;
inline std::size_t key_index(int j, int i, int hd) {
  return static_cast<std::size_t>(j / kKeyBlock) * kKeyBlock * hd +
         static_cast<std::size_t>(i) * kKeyBlock + j % kKeyBlock;
}
// Positions a keys buffer for n keys has room for: n rounded up to a whole block (the buffer
// holds key_slots(n) * hd values).
inline int key_slots(int n) { return (n + kKeyBlock - 1) / kKeyBlock * kKeyBlock; }
// Stores fp16(k[0..hd)) (rounded to nearest even) as key `pos` of `keys`.
void store_key_fp16(const float* k, int hd, int pos, std::uint16_t* keys);

// ---- attention ----
// One query of an attend_fp16 call.
struct AttentionQuery {
  const float* q16;  // hd floats, already rounded to fp16
  int len;           // attends to positions [0, len); >= 1
  float* out;        // hd floats: the result
};

// Scratch floats attend_fp16 needs for these queries: nq rows of key_slots(the largest len).
std::size_t attend_scratch_floats(const AttentionQuery* queries, int nq);

// Several queries' attention over one KV head (a pass's queries of one GQA group share it):
// for each query, out = V^T softmax(scale * K q16) over its first len positions, with the
// roundings of llama.cpp's CPU path (cpu_attention.cpp says which).
// keys: the layout above, holding at least the largest len; v: (len, hd) fp16 rows.
// p: attend_scratch_floats(queries, nq) floats, 64-byte aligned (the vectorized exp then splits
// every row the same way); on return row q (stride key_slots(largest len))
// holds query q's attention weights, rounded to fp16, in its first len entries.
// Each query's out depends only on its own q16, len and the first len keys and values: it is
// bit-identical whatever other queries share the call, so a prefill, a verify pass and single
// decode steps give a position the same bits. Requires nq >= 0, hd >= 1 and every len >= 1.
void attend_fp16(const std::uint16_t* keys, const std::uint16_t* v, int hd, float scale,
                 const AttentionQuery* queries, int nq, float* p);

// The same arithmetic one scalar operation at a time, in the same order: attend_fp16's vector
// paths must match it bit for bit (a test checks that). The vector paths: AVX-512 for head
// sizes that are a multiple of 64, else AVX2 with FMA and F16C for multiples of 16; NEON
// (AArch64) for multiples of 16; this one is the path everywhere else.
void attend_fp16_scalar(const std::uint16_t* keys, const std::uint16_t* v, int hd, float scale,
                        const AttentionQuery* queries, int nq, float* p);

// attend_fp16's first step alone, for tests: row q of p (stride key_slots(the largest len))
// gets query q's raw scores K q16 (before the scale and the softmax) in its first len entries;
// the rest of each row is unspecified. vector = true takes attend_fp16's path for this hd,
// false the scalar one. The scores are where a wrong order of the sums shows at once: the
// softmax's fp16 rounding hides most ulps from attend_fp16's results. Same requirements and
// scratch size as attend_fp16.
void attend_scores_fp16(const std::uint16_t* keys, int hd, const AttentionQuery* queries, int nq,
                        float* p, bool vector = true);

}  // namespace speclab::cpu
