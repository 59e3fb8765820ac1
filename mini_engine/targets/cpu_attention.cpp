#include "mini_engine/targets/cpu_attention.h"

#include <Eigen/Dense>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "mini_engine/model/quant.h"

namespace speclab::cpu {

using VecMap = Eigen::Map<Eigen::VectorXf>;

// RoPE as GGUF's llama weights need it: rotate adjacent pairs (x[2i], x[2i+1]) by
// theta_i = pos * base^(-2i / head_dim).
// Hugging Face's Llama rotates the halves (x[i], x[i + d/2]) instead; llama.cpp's converter
// permutes the rows of Wq and Wk when it writes the GGUF so that the adjacent-pair rotation
// gives the same attention scores. Using the half-split rotation here would be silently wrong
// (the fixture test against llama.cpp catches it).
// theta_i is formed in float as ggml does (theta_0 = pos, then times theta_scale =
// powf(base, -2 / head_dim) per pair) rather than exactly: the two differ in the last bits,
// more for later pairs, and llama.cpp's angles are the ones to match.
void rope_angles(int head_dim, int pos, float theta_scale, float* cs) {
  float theta = static_cast<float>(pos);
  for (int i = 0; i < head_dim / 2; ++i) {
    cs[2 * i] = std::cos(theta);
    cs[2 * i + 1] = std::sin(theta);
    theta *= theta_scale;
  }
}

void rope_apply(float* x, int head_dim, const float* cs) {
  for (int i = 0; i < head_dim / 2; ++i) {
    const float c = cs[2 * i], s = cs[2 * i + 1];
    const float x0 = x[2 * i], x1 = x[2 * i + 1];
    x[2 * i] = x0 * c - x1 * s;
    x[2 * i + 1] = x0 * s + x1 * c;
  }
}

void rope(float* x, int head_dim, int pos, float theta_scale) {
  std::vector<float> cs(static_cast<size_t>(head_dim));
  rope_angles(head_dim, pos, theta_scale, cs.data());
  rope_apply(x, head_dim, cs.data());
}

// out[0..n) = fp16(x[0..n)), rounded to nearest even (F16C where compiled in: same result).
void to_fp16(const float* x, int n, std::uint16_t* out) {
  int i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
#endif
  for (; i < n; ++i) out[i] = fp32_to_fp16(x[i]);
}

// x[0..n) rounded to fp16 in place (kept as floats).
void round_fp16_inplace(float* x, int n) {
  int i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) x[i] = round_to_fp16(x[i]);
}

#if defined(__AVX512F__)
// r[j] = the sum of a[j]'s 16 lanes, for j < 16, by a fixed tree of shuffles and adds (45
// instructions for 16 sums, against about 8 per _mm512_reduce_add_ps).
static inline __m512 hsum16(const __m512 a[16]) {
  // Pairs within each 128-bit block: x[i] = [a0+a2, b0+b2, a1+a3, b1+b3], (a, b) = a[2i], a[2i+1].
  __m512 x[8];
  for (int i = 0; i < 8; ++i) {
    x[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]),
                         _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  }
  // Quads: z[m] holds, in each 128-bit block, that block's sums of a[4m], ..., a[4m + 3].
  __m512 z[4];
  for (int m = 0; m < 4; ++m) {
    z[m] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * m], x[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(x[2 * m], x[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // Across the four blocks: block m of the result is the total of z[m]'s blocks.
  const __m512 u0 = _mm512_add_ps(_mm512_shuffle_f32x4(z[0], z[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(z[0], z[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 u1 = _mm512_add_ps(_mm512_shuffle_f32x4(z[2], z[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(z[2], z[3], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(u0, u1, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(u0, u1, _MM_SHUFFLE(3, 1, 3, 1)));
}
#endif

// The sum of x[0..n) in double (the softmax's normalizer, as ggml forms it).
static double sum_double(const float* x, int n) {
  int i = 0;
  double total = 0.0;
#if defined(__AVX512F__)
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
  for (; i + 16 <= n; i += 16) {
    s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
    s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)));
  }
  total = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
#endif
  for (; i < n; ++i) total += x[i];
  return total;
}

// The scores K . q16 for rows [0, len) of fp16 K (len, hd), into p.
static void scores_fp16(const std::uint16_t* k, int len, int hd, const float* q16, float* p) {
#if defined(__AVX512F__)
  if (hd % 16 == 0) {
    // Sixteen keys at a time: one accumulator per key (the dimensions in order, 16 lanes), then
    // the 16 horizontal sums at once (hsum16). Each key's sum is formed the same way whatever
    // `len` is, so a query's scores do not depend on how many other queries share the pass.
    for (int j0 = 0; j0 < len; j0 += 16) {
      const int nk = std::min(16, len - j0);
      // Rows past the end repeat row j0 (their lanes are not stored), so every load is valid.
      std::uint32_t off[16];
      for (int j = 0; j < 16; ++j) off[j] = static_cast<std::uint32_t>((j < nk ? j : 0) * hd);
      const std::uint16_t* kb = k + static_cast<size_t>(j0) * hd;
      __m512 a[16];
      // Dimensions outside, keys inside: 16 independent FMA chains, not 16 chains one by one.
      {
        const __m512 q0 = _mm512_loadu_ps(q16);
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) {
          a[j] = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(
                                   reinterpret_cast<const __m256i*>(kb + off[j]))), q0);
        }
      }
      for (int i = 16; i < hd; i += 16) {
        const __m512 qi = _mm512_loadu_ps(q16 + i);
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) {
          a[j] = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(
                                     reinterpret_cast<const __m256i*>(kb + off[j] + i))),
                                 qi, a[j]);
        }
      }
      _mm512_mask_storeu_ps(p + j0, static_cast<__mmask16>((1u << nk) - 1u), hsum16(a));
    }
    return;
  }
#endif
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  if (hd % 16 == 0) {  // laptops without AVX-512: 8 lanes
    for (int j = 0; j < len; ++j) {
      const std::uint16_t* kj = k + static_cast<size_t>(j) * hd;
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
      for (int i = 0; i < hd; i += 16) {
        const __m256 k0 =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kj + i)));
        const __m256 k1 =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kj + i + 8)));
        a0 = _mm256_fmadd_ps(k0, _mm256_loadu_ps(q16 + i), a0);
        a1 = _mm256_fmadd_ps(k1, _mm256_loadu_ps(q16 + i + 8), a1);
      }
      const __m256 a = _mm256_add_ps(a0, a1);
      __m128 r = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
      r = _mm_add_ps(r, _mm_movehl_ps(r, r));
      r = _mm_add_ss(r, _mm_movehdup_ps(r));
      p[j] = _mm_cvtss_f32(r);
    }
    return;
  }
#endif
  for (int j = 0; j < len; ++j) {
    const std::uint16_t* kj = k + static_cast<size_t>(j) * hd;
    float dot = 0.0f;
    for (int i = 0; i < hd; ++i) dot += fp16_to_fp32(kj[i]) * q16[i];
    p[j] = dot;
  }
}

// out = V^T p for fp16 V (len, hd).
static void weighted_sum_fp16(const std::uint16_t* v, int len, int hd, const float* p, float* out) {
#if defined(__AVX512F__)
  if (hd % 64 == 0) {
    // Even and odd positions go to separate accumulators (added at the end), so that eight
    // independent FMA chains hide the FMA latency. The order depends only on len.
    for (int i = 0; i < hd; i += 64) {
      __m512 a[4], b[4];
      for (int m = 0; m < 4; ++m) a[m] = b[m] = _mm512_setzero_ps();
      auto row = [&](int j, int m) {
        const std::uint16_t* vj = v + static_cast<size_t>(j) * hd + i + 16 * m;
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(vj)));
      };
      int j = 0;
      for (; j + 2 <= len; j += 2) {
        const __m512 p0 = _mm512_set1_ps(p[j]), p1 = _mm512_set1_ps(p[j + 1]);
        for (int m = 0; m < 4; ++m) {
          a[m] = _mm512_fmadd_ps(p0, row(j, m), a[m]);
          b[m] = _mm512_fmadd_ps(p1, row(j + 1, m), b[m]);
        }
      }
      if (j < len) {
        const __m512 p0 = _mm512_set1_ps(p[j]);
        for (int m = 0; m < 4; ++m) a[m] = _mm512_fmadd_ps(p0, row(j, m), a[m]);
      }
      for (int m = 0; m < 4; ++m) _mm512_storeu_ps(out + i + 16 * m, _mm512_add_ps(a[m], b[m]));
    }
    return;
  }
#endif
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  if (hd % 32 == 0) {
    for (int i = 0; i < hd; i += 32) {
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int j = 0; j < len; ++j) {
        const std::uint16_t* vj = v + static_cast<size_t>(j) * hd + i;
        const __m256 pj = _mm256_set1_ps(p[j]);
        auto ld = [&](int o) {
          return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(vj + o)));
        };
        a0 = _mm256_fmadd_ps(pj, ld(0), a0);
        a1 = _mm256_fmadd_ps(pj, ld(8), a1);
        a2 = _mm256_fmadd_ps(pj, ld(16), a2);
        a3 = _mm256_fmadd_ps(pj, ld(24), a3);
      }
      _mm256_storeu_ps(out + i, a0);
      _mm256_storeu_ps(out + i + 8, a1);
      _mm256_storeu_ps(out + i + 16, a2);
      _mm256_storeu_ps(out + i + 24, a3);
    }
    return;
  }
#endif
  std::fill_n(out, hd, 0.0f);
  for (int j = 0; j < len; ++j) {
    const std::uint16_t* vj = v + static_cast<size_t>(j) * hd;
    for (int i = 0; i < hd; ++i) out[i] += p[j] * fp16_to_fp32(vj[i]);
  }
}

// Attention of one query over `len` cached fp16 positions, with llama.cpp's roundings (its
// non-flash-attention CPU path, the default): the scores K . q with q rounded to fp16 (ggml
// converts a product's float operand to the fp16 type of the cache), a float softmax with the
// sum in double, and the weights rounded to fp16 before they multiply V. Products are summed in
// float. K and V are (len, hd) row-major; `q16` is q already rounded; `p` has room for len
// floats.
void attend_fp16(const std::uint16_t* k, const std::uint16_t* v, int len, int hd, const float* q16,
                 float scale, float* p, float* out) {
  scores_fp16(k, len, hd, q16, p);
  VecMap pv(p, len);
  pv *= scale;
  const float mx = pv.maxCoeff();
  pv = (pv.array() - mx).exp().matrix();
  pv *= static_cast<float>(1.0 / sum_double(p, len));
  round_fp16_inplace(p, len);
  weighted_sum_fp16(v, len, hd, p, out);
}

}  // namespace speclab::cpu
