#include "mini_engine/targets/cpu_attention.h"

#include <Eigen/Dense>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <cmath>
#include <cstddef>

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
void rope(float* x, int head_dim, int pos, float theta_scale) {
  float theta = static_cast<float>(pos);
  for (int i = 0; i < head_dim / 2; ++i) {
    const float c = std::cos(theta), s = std::sin(theta);
    const float x0 = x[2 * i], x1 = x[2 * i + 1];
    x[2 * i] = x0 * c - x1 * s;
    x[2 * i + 1] = x0 * s + x1 * c;
    theta *= theta_scale;
  }
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

// The scores K . q16 for rows [0, len) of fp16 K (len, hd), into p.
static void scores_fp16(const std::uint16_t* k, int len, int hd, const float* q16, float* p) {
#if defined(__AVX512F__)
  if (hd % 32 == 0) {
    for (int j = 0; j < len; ++j) {
      const std::uint16_t* kj = k + static_cast<size_t>(j) * hd;
      __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
      for (int i = 0; i < hd; i += 32) {
        const __m512 k0 =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(kj + i)));
        const __m512 k1 =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(kj + i + 16)));
        a0 = _mm512_fmadd_ps(k0, _mm512_loadu_ps(q16 + i), a0);
        a1 = _mm512_fmadd_ps(k1, _mm512_loadu_ps(q16 + i + 16), a1);
      }
      p[j] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
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
    for (int i = 0; i < hd; i += 64) {
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int j = 0; j < len; ++j) {
        const std::uint16_t* vj = v + static_cast<size_t>(j) * hd + i;
        const __m512 pj = _mm512_set1_ps(p[j]);
        auto ld = [&](int o) {
          return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(vj + o)));
        };
        a0 = _mm512_fmadd_ps(pj, ld(0), a0);
        a1 = _mm512_fmadd_ps(pj, ld(16), a1);
        a2 = _mm512_fmadd_ps(pj, ld(32), a2);
        a3 = _mm512_fmadd_ps(pj, ld(48), a3);
      }
      _mm512_storeu_ps(out + i, a0);
      _mm512_storeu_ps(out + i + 16, a1);
      _mm512_storeu_ps(out + i + 32, a2);
      _mm512_storeu_ps(out + i + 48, a3);
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
  pv *= static_cast<float>(1.0 / pv.cast<double>().sum());
  round_fp16_inplace(p, len);
  weighted_sum_fp16(v, len, hd, p, out);
}

}  // namespace speclab::cpu
