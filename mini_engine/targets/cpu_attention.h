#pragma once
// The per-head arithmetic of CpuLlama's attention: RoPE, the fp16 KV rows, and one query's
// attention over them, each with the roundings llama.cpp's CPU path makes (cpu_attention.cpp
// says which and why). CpuLlama's forward pass decides which rows, heads and positions go in;
// these functions only compute. Kept apart so that tests can run the same arithmetic in a plain
// reference forward pass (tests/model/llama_reference.h) and check it on its own
// (tests/model/test_cpu_kernels.cpp).
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

// One query's attention over `len` cached positions: out = V^T softmax(scale * K q16).
// k and v: (len, hd) fp16 rows, row-major. q16: the query, already rounded to fp16 (hd floats).
// p: scratch for len floats (on return, the fp16-rounded attention weights). out: hd floats.
// Requires len >= 1 and hd >= 1.
void attend_fp16(const std::uint16_t* k, const std::uint16_t* v, int len, int hd, const float* q16,
                 float scale, float* p, float* out);

}  // namespace speclab::cpu
