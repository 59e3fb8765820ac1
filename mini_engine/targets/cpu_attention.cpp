#include "mini_engine/targets/cpu_attention.h"

#include <Eigen/Dense>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define SPECLAB_ATTEND_NEON 1
#endif
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
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
#elif defined(SPECLAB_ATTEND_NEON)
  for (; i + 4 <= n; i += 4) {
    vst1_u16(out + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));  // nearest even
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
#elif defined(SPECLAB_ATTEND_NEON)
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vcvt_f32_f16(vcvt_f16_f32(vld1q_f32(x + i))));
#endif
  for (; i < n; ++i) x[i] = round_to_fp16(x[i]);
}

void store_key_fp16(const float* k, int hd, int pos, std::uint16_t* keys) {
  std::uint16_t* dst = keys + key_index(pos, 0, hd);
  std::uint16_t h[64];
  for (int i0 = 0; i0 < hd; i0 += 64) {  // to_fp16 converts 8 at a time, then one per lane
    const int n = std::min(64, hd - i0);
    to_fp16(k + i0, n, h);
    for (int i = 0; i < n; ++i) dst[static_cast<size_t>(i0 + i) * kKeyBlock] = h[i];
  }
}

std::size_t attend_scratch_floats(const AttentionQuery* queries, int nq) {
  int longest = 0;
  for (int q = 0; q < nq; ++q) longest = std::max(longest, queries[q].len);
  return static_cast<size_t>(nq) * static_cast<size_t>(key_slots(longest));
}

// The arithmetic, per query (both paths below follow it operation for operation):
//   score_j = (a_0 + a_1) + (a_2 + a_3),  a_u = fma(q_i, k_ji, a_u) over the dimensions
//             i = u, u + 4, u + 8, ... in order, from 0: four chains, so that the vector path
//             has independent FMAs to overlap;
//   p = softmax(scale * score) in float, with the normalizer summed in double, as ggml forms it,
//       and each weight rounded to fp16 (ggml converts a product's float operand to the fp16
//       type of V);
//   out_i = fma(p_j, v_ji, out_i) over the positions j = 0, 1, ... in order, from 0.
// The query is rounded to fp16 for the same reason as the weights (the caller does that).

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

// p[0..len) = fp16(softmax(scale * p[0..len))). p starts 64-byte aligned relative to the
// scratch (rows have a whole number of 16-float blocks), so Eigen's vectorized exp splits a
// given len the same way every time.
static void softmax_fp16(float* p, int len, float scale) {
  VecMap pv(p, len);
  pv *= scale;
  const float mx = pv.maxCoeff();
  pv = (pv.array() - mx).exp().matrix();
  pv *= static_cast<float>(1.0 / sum_double(p, len));
  round_fp16_inplace(p, len);
}

static int longest_len(const AttentionQuery* queries, int nq) {
  int longest = 0;
  for (int q = 0; q < nq; ++q) longest = std::max(longest, queries[q].len);
  return longest;
}

// Query a's scores over its len keys into pq, one operation at a time.
static void scores_scalar(const std::uint16_t* keys, int hd, const AttentionQuery& a, float* pq) {
  for (int j = 0; j < a.len; ++j) {
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < hd; ++i) {
      s[i % 4] = std::fma(a.q16[i], fp16_to_fp32(keys[key_index(j, i, hd)]), s[i % 4]);
    }
    pq[j] = (s[0] + s[1]) + (s[2] + s[3]);
  }
}

void attend_fp16_scalar(const std::uint16_t* keys, const std::uint16_t* v, int hd, float scale,
                        const AttentionQuery* queries, int nq, float* p) {
  const size_t stride = static_cast<size_t>(key_slots(longest_len(queries, nq)));
  for (int q = 0; q < nq; ++q) {
    const AttentionQuery& a = queries[q];
    float* pq = p + static_cast<size_t>(q) * stride;
    scores_scalar(keys, hd, a, pq);
    softmax_fp16(pq, a.len, scale);
    for (int i = 0; i < hd; ++i) {
      float acc = 0.0f;
      for (int j = 0; j < a.len; ++j) {
        acc = std::fma(pq[j], fp16_to_fp32(v[static_cast<size_t>(j) * hd + i]), acc);
      }
      a.out[i] = acc;
    }
  }
}

#if defined(__AVX512F__)
namespace {

// Up to 6 queries at a time: 6 x 4 score accumulators, or 6 x 4 output accumulators plus 4
// value vectors, stay inside the 32 vector registers.
constexpr int kQueryTile = 6;
// The head sizes this path takes (the others go to the scalar one).
bool vector_head(int hd) { return hd % 64 == 0; }

// Scores of queries[0..QB) against keys [0, longest) (16 at a time, every lane a key) into
// their rows of p. Lanes past a query's len are stored too (its row has room) and ignored.
template <int QB>
void scores_tile(const std::uint16_t* keys, int hd, const AttentionQuery* queries, float* p,
                 size_t stride) {
  const int longest = longest_len(queries, QB);
  for (int j0 = 0; j0 < longest; j0 += kKeyBlock) {
    const std::uint16_t* kb = keys + static_cast<size_t>(j0) * hd;
    __m512 a[QB][4];
    for (int q = 0; q < QB; ++q) {
      for (int u = 0; u < 4; ++u) a[q][u] = _mm512_setzero_ps();
    }
    for (int i = 0; i < hd; i += 4) {
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        const __m512 k = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kb + (i + u) * kKeyBlock)));
        for (int q = 0; q < QB; ++q) {
          a[q][u] = _mm512_fmadd_ps(_mm512_set1_ps(queries[q].q16[i + u]), k, a[q][u]);
        }
      }
    }
    for (int q = 0; q < QB; ++q) {
      if (j0 >= queries[q].len) continue;
      _mm512_storeu_ps(p + q * stride + j0, _mm512_add_ps(_mm512_add_ps(a[q][0], a[q][1]),
                                                          _mm512_add_ps(a[q][2], a[q][3])));
    }
  }
}

// out = V^T p for queries[0..QB): each value row is widened once and used by every query whose
// len reaches it (masked FMAs leave the others' sums untouched). Requires hd % 64 == 0.
template <int QB>
void weighted_sum_tile(const std::uint16_t* v, int hd, const AttentionQuery* queries,
                       const float* p, size_t stride) {
  const int longest = longest_len(queries, QB);
  for (int i0 = 0; i0 < hd; i0 += 64) {
    __m512 acc[QB][4];
    for (int q = 0; q < QB; ++q) {
      for (int m = 0; m < 4; ++m) acc[q][m] = _mm512_setzero_ps();
    }
    for (int j = 0; j < longest; ++j) {
      const std::uint16_t* vj = v + static_cast<size_t>(j) * hd + i0;
      __m512 row[4];
      for (int m = 0; m < 4; ++m) {
        row[m] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(vj + 16 * m)));
      }
      for (int q = 0; q < QB; ++q) {
        const bool in = j < queries[q].len;
        const __mmask16 mask = in ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>(0);
        const __m512 pj = _mm512_set1_ps(in ? p[q * stride + j] : 0.0f);
        for (int m = 0; m < 4; ++m) acc[q][m] = _mm512_mask3_fmadd_ps(pj, row[m], acc[q][m], mask);
      }
    }
    for (int q = 0; q < QB; ++q) {
      for (int m = 0; m < 4; ++m) _mm512_storeu_ps(queries[q].out + i0 + 16 * m, acc[q][m]);
    }
  }
}

template <int QB>
void attend_tile(const std::uint16_t* keys, const std::uint16_t* v, int hd, float scale,
                 const AttentionQuery* queries, float* p, size_t stride) {
  scores_tile<QB>(keys, hd, queries, p, stride);
  for (int q = 0; q < QB; ++q) softmax_fp16(p + q * stride, queries[q].len, scale);
  weighted_sum_tile<QB>(v, hd, queries, p, stride);
}

}  // namespace
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
namespace {

// The same arithmetic with 8-lane vectors (16 registers): up to 3 queries at a time, so that
// 3 x 4 score accumulators, or 3 x M output accumulators and a value vector, fit.
constexpr int kQueryTile = 3;
bool vector_head(int hd) { return hd % 16 == 0; }

// Scores of queries[0..QB) against keys [0, longest), 8 at a time (half a key block, every lane
// a key), into their rows of p. Lanes past a query's len are stored too and ignored.
// Requires hd % 4 == 0 (the four chains).
template <int QB>
void scores_tile(const std::uint16_t* keys, int hd, const AttentionQuery* queries, float* p,
                 size_t stride) {
  const int longest = longest_len(queries, QB);
  for (int j0 = 0; j0 < longest; j0 += 8) {
    const std::uint16_t* kb = keys + key_index(j0, 0, hd);
    __m256 a[QB][4];
    for (int q = 0; q < QB; ++q) {
      for (int u = 0; u < 4; ++u) a[q][u] = _mm256_setzero_ps();
    }
    for (int i = 0; i < hd; i += 4) {
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        const __m256 k = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(kb + (i + u) * kKeyBlock)));
        for (int q = 0; q < QB; ++q) {
          a[q][u] = _mm256_fmadd_ps(_mm256_set1_ps(queries[q].q16[i + u]), k, a[q][u]);
        }
      }
    }
    for (int q = 0; q < QB; ++q) {
      if (j0 >= queries[q].len) continue;
      _mm256_storeu_ps(p + q * stride + j0, _mm256_add_ps(_mm256_add_ps(a[q][0], a[q][1]),
                                                          _mm256_add_ps(a[q][2], a[q][3])));
    }
  }
}

// out = V^T p for queries[0..QB), 8 * M dimensions at a time: each value vector is widened once
// and used by every query whose len reaches it (the others' sums are left untouched, not added
// a zero, which could turn a -0 into +0). Requires hd % (8 * M) == 0.
template <int QB, int M>
void weighted_sum_tile(const std::uint16_t* v, int hd, const AttentionQuery* queries,
                       const float* p, size_t stride) {
  const int longest = longest_len(queries, QB);
  for (int i0 = 0; i0 < hd; i0 += 8 * M) {
    __m256 acc[QB][M];
    for (int q = 0; q < QB; ++q) {
      for (int m = 0; m < M; ++m) acc[q][m] = _mm256_setzero_ps();
    }
    for (int j = 0; j < longest; ++j) {
      const std::uint16_t* vj = v + static_cast<size_t>(j) * hd + i0;
      for (int m = 0; m < M; ++m) {
        const __m256 row =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(vj + 8 * m)));
        for (int q = 0; q < QB; ++q) {
          if (j < queries[q].len) {
            acc[q][m] = _mm256_fmadd_ps(_mm256_broadcast_ss(p + q * stride + j), row, acc[q][m]);
          }
        }
      }
    }
    for (int q = 0; q < QB; ++q) {
      for (int m = 0; m < M; ++m) _mm256_storeu_ps(queries[q].out + i0 + 8 * m, acc[q][m]);
    }
  }
}

template <int QB>
void attend_tile(const std::uint16_t* keys, const std::uint16_t* v, int hd, float scale,
                 const AttentionQuery* queries, float* p, size_t stride) {
  scores_tile<QB>(keys, hd, queries, p, stride);
  for (int q = 0; q < QB; ++q) softmax_fp16(p + q * stride, queries[q].len, scale);
  if (hd % 32 == 0) {
    weighted_sum_tile<QB, 4>(v, hd, queries, p, stride);
  } else {
    weighted_sum_tile<QB, 2>(v, hd, queries, p, stride);
  }
}

}  // namespace
#elif defined(SPECLAB_ATTEND_NEON)
namespace {

// The same arithmetic with 4-lane vectors (32 registers): up to 6 queries at a time, so that
// 6 x 4 score accumulators, or 6 x 4 output accumulators and 4 value vectors, fit.
constexpr int kQueryTile = 6;
bool vector_head(int hd) { return hd % 16 == 0; }

inline float32x4_t widen4(const std::uint16_t* h) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

// Scores of queries[0..QB) against keys [0, longest), 4 at a time (a quarter of a key block,
// every lane a key), into their rows of p. Lanes past a query's len are stored too and ignored.
// Requires hd % 4 == 0 (the four chains).
template <int QB>
void scores_tile(const std::uint16_t* keys, int hd, const AttentionQuery* queries, float* p,
                 size_t stride) {
  const int longest = longest_len(queries, QB);
  for (int j0 = 0; j0 < longest; j0 += 4) {
    const std::uint16_t* kb = keys + key_index(j0, 0, hd);
    float32x4_t a[QB][4];
    for (int q = 0; q < QB; ++q) {
      for (int u = 0; u < 4; ++u) a[q][u] = vdupq_n_f32(0.0f);
    }
    for (int i = 0; i < hd; i += 4) {
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        const float32x4_t k = widen4(kb + (i + u) * kKeyBlock);
        for (int q = 0; q < QB; ++q) {
          a[q][u] = vfmaq_f32(a[q][u], vdupq_n_f32(queries[q].q16[i + u]), k);
        }
      }
    }
    for (int q = 0; q < QB; ++q) {
      if (j0 >= queries[q].len) continue;
      vst1q_f32(p + q * stride + j0,
                vaddq_f32(vaddq_f32(a[q][0], a[q][1]), vaddq_f32(a[q][2], a[q][3])));
    }
  }
}

// out = V^T p for queries[0..QB), 16 dimensions at a time: each value vector is widened once and
// used by every query whose len reaches it (the others' sums are left untouched, not added a
// zero, which could turn a -0 into +0). Requires hd % 16 == 0.
template <int QB>
void weighted_sum_tile(const std::uint16_t* v, int hd, const AttentionQuery* queries,
                       const float* p, size_t stride) {
  const int longest = longest_len(queries, QB);
  for (int i0 = 0; i0 < hd; i0 += 16) {
    float32x4_t acc[QB][4];
    for (int q = 0; q < QB; ++q) {
      for (int m = 0; m < 4; ++m) acc[q][m] = vdupq_n_f32(0.0f);
    }
    for (int j = 0; j < longest; ++j) {
      const std::uint16_t* vj = v + static_cast<size_t>(j) * hd + i0;
      float32x4_t row[4];
      for (int m = 0; m < 4; ++m) row[m] = widen4(vj + 4 * m);
      for (int q = 0; q < QB; ++q) {
        if (j >= queries[q].len) continue;
        const float32x4_t pj = vdupq_n_f32(p[q * stride + j]);
        for (int m = 0; m < 4; ++m) acc[q][m] = vfmaq_f32(acc[q][m], pj, row[m]);
      }
    }
    for (int q = 0; q < QB; ++q) {
      for (int m = 0; m < 4; ++m) vst1q_f32(queries[q].out + i0 + 4 * m, acc[q][m]);
    }
  }
}

template <int QB>
void attend_tile(const std::uint16_t* keys, const std::uint16_t* v, int hd, float scale,
                 const AttentionQuery* queries, float* p, size_t stride) {
  scores_tile<QB>(keys, hd, queries, p, stride);
  for (int q = 0; q < QB; ++q) softmax_fp16(p + q * stride, queries[q].len, scale);
  weighted_sum_tile<QB>(v, hd, queries, p, stride);
}

}  // namespace
#endif

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)) || \
    defined(SPECLAB_ATTEND_NEON)
#define SPECLAB_ATTEND_VECTOR 1
namespace {
// Calls f(std::integral_constant<int, n>{}, q0) for each tile [q0, q0 + n) of the nq queries,
// n <= kQueryTile: the tile width becomes a template argument of the vector code.
template <class F>
void for_each_tile(int nq, F&& f) {
  for (int q0 = 0; q0 < nq; q0 += kQueryTile) {
    switch (std::min(kQueryTile, nq - q0)) {
      case 1: f(std::integral_constant<int, 1>{}, q0); break;
      case 2: f(std::integral_constant<int, 2>{}, q0); break;
      case 3: f(std::integral_constant<int, 3>{}, q0); break;
      default:
        if constexpr (kQueryTile == 6) {
          switch (nq - q0) {
            case 4: f(std::integral_constant<int, 4>{}, q0); break;
            case 5: f(std::integral_constant<int, 5>{}, q0); break;
            default: f(std::integral_constant<int, 6>{}, q0); break;
          }
        }
    }
  }
}
}  // namespace
#endif

void attend_fp16(const std::uint16_t* keys, const std::uint16_t* v, int hd, float scale,
                 const AttentionQuery* queries, int nq, float* p) {
#if defined(SPECLAB_ATTEND_VECTOR)
  if (vector_head(hd)) {
    const size_t stride = static_cast<size_t>(key_slots(longest_len(queries, nq)));
    for_each_tile(nq, [&](auto width, int q0) {
      attend_tile<decltype(width)::value>(keys, v, hd, scale, queries + q0,
                                          p + static_cast<size_t>(q0) * stride, stride);
    });
    return;
  }
#endif
  attend_fp16_scalar(keys, v, hd, scale, queries, nq, p);
}

void attend_scores_fp16(const std::uint16_t* keys, int hd, const AttentionQuery* queries, int nq,
                        float* p, bool vector) {
  const size_t stride = static_cast<size_t>(key_slots(longest_len(queries, nq)));
#if defined(SPECLAB_ATTEND_VECTOR)
  if (vector && vector_head(hd)) {
    for_each_tile(nq, [&](auto width, int q0) {
      scores_tile<decltype(width)::value>(keys, hd, queries + q0,
                                          p + static_cast<size_t>(q0) * stride, stride);
    });
    return;
  }
#else
  (void)vector;
#endif
  for (int q = 0; q < nq; ++q) {
    scores_scalar(keys, hd, queries[q], p + static_cast<size_t>(q) * stride);
  }
}

}  // namespace speclab::cpu
