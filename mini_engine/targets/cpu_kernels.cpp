#include "mini_engine/targets/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define SPECLAB_SIMD_AVX2 1
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define SPECLAB_SIMD_VNNI 1  // _mm256_dpbusd_epi32 (EVEX encoding)
#elif defined(__AVXVNNI__)
#define SPECLAB_SIMD_VNNI 1  // _mm256_dpbusd_avx_epi32 (VEX encoding)
#define SPECLAB_SIMD_AVXVNNI 1
#endif
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define SPECLAB_SIMD_NEON 1  // the packed kernel: 4 rows per sdot (or its armv8.0 emulation)
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
#define SPECLAB_SIMD_AVX512 1  // the packed kernel: _mm512_dpbusd_epi32 over 16 rows at once
// GCC 12 warns inside its own headers that the unmasked AVX-512 intrinsics (_mm512_cvtepi32_ps,
// _mm512_cvtph_ps, _mm512_roundscale_ps, ...) read an "uninitialized" _mm512_undefined_ps():
// a known false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

namespace speclab::cpu {

void QuantizedActs::reset(int rows, int cols) {
  if (rows < 0 || cols <= 0 || cols % 32 != 0) {
    throw std::invalid_argument(
        "QuantizedActs: needs rows >= 0 and cols > 0 a multiple of 32 "
        "(got rows=" +
        std::to_string(rows) + " cols=" + std::to_string(cols) + ")");
  }
  rows_ = rows;
  cols_ = cols;
  q_stride_ = static_cast<size_t>(cols);
  const size_t need = static_cast<size_t>(rows) * q_stride_ + 32;
  if (q_.size() < need) q_.resize(need);
  q_offset_ = (32 - reinterpret_cast<std::uintptr_t>(q_.data()) % 32) % 32;
  d_.resize(static_cast<size_t>(rows) * blocks());
  s_.resize(static_cast<size_t>(rows) * blocks());
}

ActFormat act_format_for(GgmlType type) {
  return type == GgmlType::Q4_1 ? ActFormat::q8_1 : ActFormat::q8_0;
}

void QuantizedActs::quantize(const float* x, int rows, int cols, int ldx, ActFormat format) {
  if (ldx < cols) {
    throw std::invalid_argument("QuantizedActs::quantize: ldx " + std::to_string(ldx) + " < cols " +
                                std::to_string(cols));
  }
  reset(rows, cols);
  quantize_rows(x, ldx, 0, rows, format);
}

// round_to_fp16 with F16C where compiled in (the same round-to-nearest-even result).
static inline float round_fp16(float f) {
#if defined(__F16C__)
  return _cvtsh_ss(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#elif defined(SPECLAB_SIMD_NEON)
  return static_cast<float>(static_cast<__fp16>(f));  // fcvt: round to nearest even
#else
  return round_to_fp16(f);
#endif
}

void QuantizedActs::quantize_rows(const float* x, int ldx, int r0, int r1, ActFormat format) {
  const int nb = blocks();
  for (int r = r0; r < r1; ++r) {
    const float* xr = x + static_cast<size_t>(r) * ldx;
    std::int8_t* qr = q_.data() + q_offset_ + static_cast<size_t>(r) * q_stride_;
    for (int b = 0; b < nb; ++b) {
      const float* xb = xr + b * 32;
      int sum = 0;
      float amax = 0.0f;
#if defined(SPECLAB_SIMD_AVX512)
      // The scalar loop (#else), 16 lanes at a time, with the same operations in the same order
      // (x * id rounded to nearest-even, as nearbyint does in the default rounding mode), so the
      // codes are bit-identical to it.
      const __m512 x0 = _mm512_loadu_ps(xb), x1 = _mm512_loadu_ps(xb + 16);
      amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
      const __m512 id = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
      const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
      constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
      const __m512i v0 = _mm512_cvtps_epi32(_mm512_min_ps(
          _mm512_max_ps(_mm512_roundscale_ps(_mm512_mul_ps(x0, id), kRound), lo), hi));
      const __m512i v1 = _mm512_cvtps_epi32(_mm512_min_ps(
          _mm512_max_ps(_mm512_roundscale_ps(_mm512_mul_ps(x1, id), kRound), lo), hi));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + b * 32), _mm512_cvtepi32_epi8(v0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + b * 32 + 16), _mm512_cvtepi32_epi8(v1));
      sum = _mm512_reduce_add_epi32(_mm512_add_epi32(v0, v1));
#elif defined(SPECLAB_SIMD_AVX2)
      // The same on 8 lanes: 4 vectors of 8 floats, rounded and clamped, packed to 32 bytes.
      const __m256 sign = _mm256_set1_ps(-0.0f);
      __m256 xv[4];
      __m256 m = _mm256_setzero_ps();
      for (int j = 0; j < 4; ++j) {
        xv[j] = _mm256_loadu_ps(xb + 8 * j);
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, xv[j]));
      }
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
      amax = _mm_cvtss_f32(m4);
      const __m256 id = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
      const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
      __m256i v[4];
      for (int j = 0; j < 4; ++j) {
        v[j] = _mm256_cvtps_epi32(_mm256_min_ps(
            _mm256_max_ps(_mm256_round_ps(_mm256_mul_ps(xv[j], id),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                          lo),
            hi));
      }
      // packs interleave the 128-bit lanes: bytes come out as 4-column groups 0 2 4 6 1 3 5 7,
      // which the permute puts back in order (no saturation: every value is within +-127).
      const __m256i b8 =
          _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(qr + b * 32),
          _mm256_permutevar8x32_epi32(b8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
      const __m256i s8 =
          _mm256_add_epi32(_mm256_add_epi32(v[0], v[1]), _mm256_add_epi32(v[2], v[3]));
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
      sum = _mm_cvtsi128_si32(s4);
#else
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
      // 127 / amax, not 1 / d: ggml's multiplier (the two can differ in the last bit).
      const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
      for (int i = 0; i < 32; ++i) {
        // |x * id| <= 127 up to rounding; the clamp only guards that last ulp.
        const int v = std::clamp(static_cast<int>(std::nearbyint(xb[i] * id)), -127, 127);
        qr[b * 32 + i] = static_cast<std::int8_t>(v);
        sum += v;
      }
#endif
      const float d = amax / 127.0f;
      const float d16 = round_fp16(d);
      d_[static_cast<size_t>(r) * nb + b] = d16;
      s_[static_cast<size_t>(r) * nb + b] = format == ActFormat::q8_1
                                                ? round_fp16(d * static_cast<float>(sum))
                                                : d16 * static_cast<float>(sum);
    }
  }
}

const char* simd_kernel_name() {
#if defined(SPECLAB_SIMD_AVXVNNI)
  return "avx2+avxvnni";
#elif defined(SPECLAB_SIMD_VNNI)
  return "avx2+avx512vnni";
#elif defined(SPECLAB_SIMD_AVX2)
  return "avx2";
#else
  return "none (scalar fallback)";
#endif
}

void silu_mul_reference(float* g, const float* u, int n) {
  for (int i = 0; i < n; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

#if defined(SPECLAB_SIMD_AVX512)
namespace {
// exp(x) on 16 lanes: x = k ln2 + r with |r| <= ln2 / 2 (ln2 split in two for an exact k ln2),
// e^r by its Taylor polynomial to r^6 (truncation error below 2e-7 relative), then scaled by 2^k
// with vscalefps, which gives inf / 0 past the float range. NaN stays NaN.
inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, k);
}
}  // namespace
#elif defined(SPECLAB_SIMD_AVX2)
namespace {
// exp(x) on 8 lanes: exp16's reduction and polynomial; AVX2 has no vscalefps, so 2^k is applied
// as two exact powers of two built in the exponent bits, 2^(k >> 1) * 2^(k - (k >> 1)), both
// normal floats for every k of the clamped range (-150..128): the product overflows to inf and
// flushes to 0 past the float range as vscalefps does (below 2^-126 it can differ from it by the
// second rounding of a subnormal). NaN stays NaN.
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(89.0f), _mm256_max_ps(_mm256_set1_ps(-104.0f), x));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ki = _mm256_cvtps_epi32(k);  // exact: k is a whole number
  const __m256i k1 = _mm256_srai_epi32(ki, 1), k2 = _mm256_sub_epi32(ki, k1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
}  // namespace
#elif defined(SPECLAB_SIMD_NEON)
namespace {
// exp(x) on 4 lanes: exp8's operations one for one (vrndnq rounds to nearest even as
// _mm256_round_ps does, vfmsq is the fused a - b * c of _mm256_fnmadd_ps), so the lanes get the
// bits the AVX2 path gives. NaN stays NaN.
inline float32x4_t exp4(float32x4_t x) {
  x = vminq_f32(vdupq_n_f32(89.0f), vmaxq_f32(vdupq_n_f32(-104.0f), x));
  const float32x4_t k = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, k, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, k, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.0f / 720.0f);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t ki = vcvtq_s32_f32(k);  // exact: k is a whole number
  const int32x4_t k1 = vshrq_n_s32(ki, 1), k2 = vsubq_s32(ki, k1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k1, bias), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k2, bias), 23));
  return vmulq_f32(vmulq_f32(p, s1), s2);
}
}  // namespace
#endif

void silu_mul(float* g, const float* u, int n) {
#if defined(SPECLAB_SIMD_AVX512)
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
    const __m512 uv = _mm512_maskz_loadu_ps(m, u + i);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), gv));
    _mm512_mask_storeu_ps(g + i, m, _mm512_mul_ps(_mm512_div_ps(gv, _mm512_add_ps(one, e)), uv));
  }
#elif defined(SPECLAB_SIMD_AVX2)
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int i = 0; i < n; i += 8) {
    // Lanes past n are masked off (maskload reads nothing there, maskstore writes nothing).
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - i), lane);
    const __m256 gv = _mm256_maskload_ps(g + i, m);
    const __m256 uv = _mm256_maskload_ps(u + i, m);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), gv));
    _mm256_maskstore_ps(g + i, m, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), uv));
  }
#elif defined(SPECLAB_SIMD_NEON)
  const float32x4_t one = vdupq_n_f32(1.0f);
  const auto step = [&](float32x4_t gv, float32x4_t uv) {
    const float32x4_t e = exp4(vsubq_f32(vdupq_n_f32(0.0f), gv));
    return vmulq_f32(vdivq_f32(gv, vaddq_f32(one, e)), uv);
  };
  int i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(g + i, step(vld1q_f32(g + i), vld1q_f32(u + i)));
  if (i < n) {  // the tail through the same lanes, so every element gets the same arithmetic
    float gt[4] = {0.0f, 0.0f, 0.0f, 0.0f}, ut[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::memcpy(gt, g + i, sizeof(float) * static_cast<size_t>(n - i));
    std::memcpy(ut, u + i, sizeof(float) * static_cast<size_t>(n - i));
    vst1q_f32(gt, step(vld1q_f32(gt), vld1q_f32(ut)));
    std::memcpy(g + i, gt, sizeof(float) * static_cast<size_t>(n - i));
  }
#else
  silu_mul_reference(g, u, n);
#endif
}

void dequantize_matrix_row(const QuantMatrix& w, int r, float* out) {
  if (r < 0 || r >= w.rows) {
    throw std::out_of_range("dequantize_matrix_row: row " + std::to_string(r) + " of a matrix of " +
                            std::to_string(w.rows) + " rows");
  }
  dequantize_row(w.type, w.row(r), out, w.cols);
}

namespace {

// ---- reference: float weights x float activations, summed in double ----

void matmul_reference(const QuantMatrix& w, const QuantizedActs& x, float* y, int ldy, int r0,
                      int r1) {
  std::vector<float> wr(static_cast<size_t>(w.cols));
  for (int r = r0; r < r1; ++r) {
    dequantize_matrix_row(w, r, wr.data());
    for (int t = 0; t < x.rows(); ++t) {
      double sum = 0.0;
      for (int c = 0; c < w.cols; ++c) {
        sum += static_cast<double>(wr[c]) * (static_cast<double>(x.q(t)[c]) * x.d(t)[c / 32]);
      }
      y[static_cast<size_t>(t) * ldy + r] = static_cast<float>(sum);
    }
  }
}

// ---- scalar: per block, an integer dot product and an affine correction ----
//
// Every supported block decodes as w_i = dw * c_i + mw with integer codes c_i, so
//   sum_i w_i * (dx * q_i) = dw * dx * sum_i c_i q_i  +  mw * (dx * sum_i q_i)
//                          = dw * dx * isum           +  mw * s.

struct BlockCodes {
  int c[32];
  float dw, mw;
};

void unpack_block(GgmlType type, const std::uint8_t* p, BlockCodes& out) {
  switch (type) {
    case GgmlType::Q4_0: {
      const auto* b = reinterpret_cast<const BlockQ4_0*>(p);
      out.dw = fp16_to_fp32(b->d);
      out.mw = -8.0f * out.dw;
      for (int j = 0; j < 16; ++j) {
        out.c[j] = b->qs[j] & 0x0f;
        out.c[j + 16] = b->qs[j] >> 4;
      }
      return;
    }
    case GgmlType::Q4_1: {
      const auto* b = reinterpret_cast<const BlockQ4_1*>(p);
      out.dw = fp16_to_fp32(b->d);
      out.mw = fp16_to_fp32(b->m);
      for (int j = 0; j < 16; ++j) {
        out.c[j] = b->qs[j] & 0x0f;
        out.c[j + 16] = b->qs[j] >> 4;
      }
      return;
    }
    case GgmlType::Q8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(p);
      out.dw = fp16_to_fp32(b->d);
      out.mw = 0.0f;
      for (int j = 0; j < 32; ++j) out.c[j] = b->qs[j];
      return;
    }
    default: throw std::invalid_argument("unpack_block: unsupported type");
  }
}

int block_bytes(GgmlType type) {
  return static_cast<int>(ggml_type_info(static_cast<std::uint32_t>(type))->type_size);
}

void matmul_scalar(const QuantMatrix& w, const QuantizedActs& x, float* y, int ldy, int r0,
                   int r1) {
  const int nb = w.cols / 32;
  const int bb = block_bytes(w.type);
  const int nt = x.rows();
  std::vector<float> acc(static_cast<size_t>(nt)), macc(static_cast<size_t>(nt));
  BlockCodes codes;
  for (int r = r0; r < r1; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    std::fill(macc.begin(), macc.end(), 0.0f);
    const std::uint8_t* row = w.row(r);
    for (int b = 0; b < nb; ++b) {
      unpack_block(w.type, row + static_cast<size_t>(b) * bb, codes);
      for (int t = 0; t < nt; ++t) {
        const std::int8_t* q = x.q(t) + b * 32;
        int isum = 0;
        for (int i = 0; i < 32; ++i) isum += codes.c[i] * q[i];
        acc[t] += codes.dw * x.d(t)[b] * static_cast<float>(isum);
        macc[t] += codes.mw * x.s(t)[b];
      }
    }
    for (int t = 0; t < nt; ++t) y[static_cast<size_t>(t) * ldy + r] = acc[t] + macc[t];
  }
}

#if defined(SPECLAB_SIMD_AVX2)
// ---- simd: AVX2, one weight block unpacked once and dotted with NT activation rows ----

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float fp16(std::uint16_t h) { return _cvtsh_ss(h); }

// 8 lanes, each the sum of 4 products u8 * s8.
inline __m256i dot_u8s8(__m256i u, __m256i s) {
#if defined(SPECLAB_SIMD_AVXVNNI)
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
#elif defined(SPECLAB_SIMD_VNNI)
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  // u <= 255 only for Q8_0, which never comes here without VNNI (see below); for 4-bit codes
  // u <= 15 and the 16-bit pair sums (<= 2 * 15 * 127) cannot saturate.
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// Unpacks block b of a row to 32 unsigned codes u_i and the map w_i = dw * u_i + mw.
// For Q8_0 the signed code is shifted by +128 (u = c ^ 0x80) and mw = -128 dw, so the same
// unsigned x signed product covers it (needs VNNI: u up to 255 would saturate maddubs).
template <GgmlType kType>
inline __m256i unpack_simd(const std::uint8_t* p, float& dw, float& mw) {
  if constexpr (kType == GgmlType::Q8_0) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(p);
    dw = fp16(b->d);
    mw = -128.0f * dw;
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs)),
                            _mm256_set1_epi8(static_cast<char>(0x80)));
  } else {
    const std::uint8_t* qs;
    if constexpr (kType == GgmlType::Q4_1) {
      const auto* b = reinterpret_cast<const BlockQ4_1*>(p);
      dw = fp16(b->d);
      mw = fp16(b->m);
      qs = b->qs;
    } else {
      const auto* b = reinterpret_cast<const BlockQ4_0*>(p);
      dw = fp16(b->d);
      mw = -8.0f * dw;
      qs = b->qs;
    }
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i lo = _mm_and_si128(raw, _mm_set1_epi8(0x0f));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0f));
    return _mm256_set_m128i(hi, lo);
  }
}

// sum_b m[b] * s[b]
inline float dot_floats(const float* m, const float* s, int n) {
  __m256 acc = _mm256_setzero_ps();
  int b = 0;
  for (; b + 8 <= n; b += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(m + b), _mm256_loadu_ps(s + b), acc);
  float tail = 0.0f;
  for (; b < n; ++b) tail += m[b] * s[b];
  return hsum(acc) + tail;
}

#endif  // SPECLAB_SIMD_AVX2

#if defined(SPECLAB_SIMD_AVX2) || defined(SPECLAB_SIMD_NEON)
// The activation rows of one tile of NT tokens, block by block: codes of block b, token t at
// q + (b * NT + t) * 32 (32-byte aligned), its scale at d + b * NT + t and its sum term at
// s + b * NT + t. One base pointer and constant offsets: with a pointer per token the compiler
// runs out of registers and reloads them on every block.
struct ActTile {
  const std::int8_t* q;
  const float* d;
  const float* s;
};

// x cut into tiles of `tile` rows (the last one shorter), each laid out as an ActTile. The
// buffers are per thread and reused from call to call, so a thread may hold only one TiledActs at
// a time (each matmul call makes one; calls do not nest). One activation row needs no copy.
class TiledActs {
 public:
  TiledActs(const QuantizedActs& x, int tile) : x_(x), nb_(x.cols() / 32) {
    if (x.rows() == 1) return;
    const size_t n = static_cast<size_t>(x.rows()) * static_cast<size_t>(nb_);
    q_.resize(n * 32);
    d_.resize(n);
    s_.resize(n);
    for (int t0 = 0; t0 < x.rows(); t0 += tile) {
      const int nt = std::min(tile, x.rows() - t0);
      const size_t base = static_cast<size_t>(t0) * nb_;
      for (int b = 0; b < nb_; ++b) {
        for (int t = 0; t < nt; ++t) {
          const size_t i = base + static_cast<size_t>(b) * nt + t;
          std::memcpy(q_.data() + i * 32, x.q(t0 + t) + b * 32, 32);
          d_[i] = x.d(t0 + t)[b];
          s_[i] = x.s(t0 + t)[b];
        }
      }
    }
  }
  // The tile that starts at activation row t0 (a multiple of the tile size).
  ActTile at(int t0) const {
    if (x_.rows() == 1) return {x_.q(0), x_.d(0), x_.s(0)};
    const size_t base = static_cast<size_t>(t0) * nb_;
    return {q_.data() + base * 32, d_.data() + base, s_.data() + base};
  }

 private:
  const QuantizedActs& x_;
  int nb_;
  static thread_local AlignedVector<std::int8_t> q_;
  static thread_local std::vector<float> d_, s_;
};
thread_local AlignedVector<std::int8_t> TiledActs::q_;
thread_local std::vector<float> TiledActs::d_, TiledActs::s_;

// Calls f(std::integral_constant<int, nt>{}) for a runtime nt in [1, NT]: a tile's token count
// becomes a template argument, so the packed kernels unroll their loops over its tokens fully.
template <int NT, class F>
void with_tile_width(int nt, F&& f) {
  if constexpr (NT > 1) {
    if (nt < NT) return with_tile_width<NT - 1>(nt, f);
  }
  f(std::integral_constant<int, NT>{});
}

// The tile size for n activation rows: as few tiles of at most max_tile rows as will do, balanced
// (9 rows go as 5 + 4, not 8 + 1).
inline int balanced_tile(int n, int max_tile) {
  const int tiles = (n + max_tile - 1) / max_tile;
  return (n + tiles - 1) / tiles;
}
#endif  // SPECLAB_SIMD_AVX2 || SPECLAB_SIMD_NEON

#if defined(SPECLAB_SIMD_AVX2)

// Rows [r0, r1) x activation rows [t0, t0 + NT). Every loop over the tile's tokens is fully
// unrolled: then acc[] lives in registers only (otherwise GCC also stored all of it to the stack
// on every block).
template <GgmlType kType, int NT>
void simd_tile(const QuantMatrix& w, const QuantizedActs& x, const ActTile& xt, int t0, float* y,
               int ldy, int r0, int r1, float* mrow) {
  constexpr int kBytes = kType == GgmlType::Q8_0 ? 34 : kType == GgmlType::Q4_1 ? 20 : 18;
  const int nb = w.cols / 32;
  for (int r = r0; r < r1; ++r) {
    const std::uint8_t* row = w.row(r);
    __m256 acc[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; ++b) {
      float dw, mw;
      const __m256i u = unpack_simd<kType>(row + b * kBytes, dw, mw);
      mrow[b] = mw;
      const __m256 dwv = _mm256_set1_ps(dw);
      const std::int8_t* qb = xt.q + static_cast<size_t>(b) * NT * 32;
      const float* db = xt.d + static_cast<size_t>(b) * NT;
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(qb + t * 32));
        const __m256 p = _mm256_cvtepi32_ps(dot_u8s8(u, xv));
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(p, _mm256_broadcast_ss(db + t)), dwv, acc[t]);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      y[static_cast<size_t>(t0 + t) * ldy + r] = hsum(acc[t]) + dot_floats(mrow, x.s(t0 + t), nb);
    }
  }
}

#if !defined(SPECLAB_SIMD_VNNI)
// Q8_0 without VNNI: signed x signed through maddubs(|w|, sign(x, w)), as ggml does.
template <int NT>
void simd_tile_q8_sign(const QuantMatrix& w, const ActTile& xt, int t0, float* y, int ldy, int r0,
                       int r1) {
  const int nb = w.cols / 32;
  for (int r = r0; r < r1; ++r) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(w.row(r));
    __m256 acc[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; ++b) {
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[b].qs));
      const __m256i aw = _mm256_sign_epi8(wv, wv);
      const __m256 dwv = _mm256_set1_ps(fp16(blocks[b].d));
      const std::int8_t* qb = xt.q + static_cast<size_t>(b) * NT * 32;
      const float* db = xt.d + static_cast<size_t>(b) * NT;
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(qb + t * 32));
        const __m256i sx = _mm256_sign_epi8(xv, wv);
        const __m256i p32 = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), _mm256_set1_epi16(1));
        const __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(p32), _mm256_broadcast_ss(db + t));
        acc[t] = _mm256_fmadd_ps(p, dwv, acc[t]);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) y[static_cast<size_t>(t0 + t) * ldy + r] = hsum(acc[t]);
  }
}
#endif

template <GgmlType kType>
void simd_rows_tile(const QuantMatrix& w, const QuantizedActs& x, const ActTile& xt, int t0, int nt,
                    float* y, int ldy, int r0, int r1, float* mrow) {
#if !defined(SPECLAB_SIMD_VNNI)
  if constexpr (kType == GgmlType::Q8_0) {
    switch (nt) {
      case 1: return simd_tile_q8_sign<1>(w, xt, t0, y, ldy, r0, r1);
      case 2: return simd_tile_q8_sign<2>(w, xt, t0, y, ldy, r0, r1);
      case 3: return simd_tile_q8_sign<3>(w, xt, t0, y, ldy, r0, r1);
      case 4: return simd_tile_q8_sign<4>(w, xt, t0, y, ldy, r0, r1);
      case 5: return simd_tile_q8_sign<5>(w, xt, t0, y, ldy, r0, r1);
      case 6: return simd_tile_q8_sign<6>(w, xt, t0, y, ldy, r0, r1);
      case 7: return simd_tile_q8_sign<7>(w, xt, t0, y, ldy, r0, r1);
      default: return simd_tile_q8_sign<8>(w, xt, t0, y, ldy, r0, r1);
    }
  }
#endif
  switch (nt) {
    case 1: return simd_tile<kType, 1>(w, x, xt, t0, y, ldy, r0, r1, mrow);
    case 2: return simd_tile<kType, 2>(w, x, xt, t0, y, ldy, r0, r1, mrow);
    case 3: return simd_tile<kType, 3>(w, x, xt, t0, y, ldy, r0, r1, mrow);
    case 4: return simd_tile<kType, 4>(w, x, xt, t0, y, ldy, r0, r1, mrow);
    case 5: return simd_tile<kType, 5>(w, x, xt, t0, y, ldy, r0, r1, mrow);
    case 6: return simd_tile<kType, 6>(w, x, xt, t0, y, ldy, r0, r1, mrow);
    case 7: return simd_tile<kType, 7>(w, x, xt, t0, y, ldy, r0, r1, mrow);
    default: return simd_tile<kType, 8>(w, x, xt, t0, y, ldy, r0, r1, mrow);
  }
}

// Up to 8 activation rows per tile keeps the accumulators in registers. A chunk of 16 weight
// rows stays in L1 while every tile of activation rows passes over it, so for a prefill the
// weights still come from memory once.
template <GgmlType kType>
void matmul_simd_typed(const QuantMatrix& w, const QuantizedActs& x, float* y, int ldy, int r0,
                       int r1) {
  constexpr int kRowChunk = 16;
  constexpr int kTokTile = 8;
  const int nb = w.cols / 32;
  thread_local std::vector<float> mrow;
  mrow.resize(static_cast<size_t>(nb));
  const TiledActs tiles(x, kTokTile);
  for (int rc = r0; rc < r1; rc += kRowChunk) {
    const int rc1 = std::min(r1, rc + kRowChunk);
    for (int t0 = 0; t0 < x.rows(); t0 += kTokTile) {
      const int nt = std::min(kTokTile, x.rows() - t0);
      const ActTile xt = tiles.at(t0);
      simd_rows_tile<kType>(w, x, xt, t0, nt, y, ldy, rc, rc1, mrow.data());
    }
  }
}

void matmul_simd(const QuantMatrix& w, const QuantizedActs& x, float* y, int ldy, int r0, int r1) {
  switch (w.type) {
    case GgmlType::Q4_0: return matmul_simd_typed<GgmlType::Q4_0>(w, x, y, ldy, r0, r1);
    case GgmlType::Q4_1: return matmul_simd_typed<GgmlType::Q4_1>(w, x, y, ldy, r0, r1);
    case GgmlType::Q8_0: return matmul_simd_typed<GgmlType::Q8_0>(w, x, y, ldy, r0, r1);
    default: throw std::invalid_argument("matmul_simd: unsupported type");
  }
}
#endif  // SPECLAB_SIMD_AVX2

}  // namespace

// ---- packed: 16 weight rows per vpdpbusd (see PackedMatrix in the header) ----

namespace {

bool packable(GgmlType t) {
  return t == GgmlType::Q4_0 || t == GgmlType::Q4_1 || t == GgmlType::Q8_0;
}

// The bytes of one (row group, block): the codes, the scales (and Q4_1's offsets), rounded up to
// 64 so that every code vector is 64-byte aligned. Throws for a matrix the packed kernel cannot
// take.
size_t group_block_bytes_for(const QuantMatrix& w) {
  if (!packable(w.type) || w.cols <= 0 || w.cols % 32 != 0) {
    throw std::invalid_argument(
        "PackedMatrix: needs a Q4_0, Q4_1 or Q8_0 matrix with cols a "
        "positive multiple of 32 (got " +
        ggml_type_name(static_cast<std::uint32_t>(w.type)) + ", cols=" + std::to_string(w.cols) +
        ")");
  }
  const size_t code_bytes = w.type == GgmlType::Q8_0 ? 512 : 256;
  return (code_bytes + (w.type == GgmlType::Q4_1 ? 64 : 32) + 63) / 64 * 64;
}

}  // namespace

size_t PackedMatrix::packed_bytes(const QuantMatrix& w) {
  const size_t groups = static_cast<size_t>((w.rows + 15) / 16);
  return groups * static_cast<size_t>(w.cols / 32) * group_block_bytes_for(w);
}

PackedMatrix::PackedMatrix(const QuantMatrix& w) : src_(w), gbb_(group_block_bytes_for(w)) {
  own_ = std::make_shared<WeightArena>(WeightArena::aligned_size(packed_bytes(w)));
  data_ = own_->take(packed_bytes(w));
  pack(data_);
}

PackedMatrix::PackedMatrix(const QuantMatrix& w, WeightArena& arena)
    : src_(w), gbb_(group_block_bytes_for(w)) {
  data_ = arena.take(packed_bytes(w));
  pack(data_);
}

void PackedMatrix::pack(std::uint8_t* dst_base) {
  const QuantMatrix& w = src_;
  const bool q8 = w.type == GgmlType::Q8_0;
  const size_t code_bytes = q8 ? 512 : 256;
  const int nb = w.cols / 32;
  const int bb = block_bytes(w.type);
  BlockCodes codes;
  for (int r = 0; r < w.rows; ++r) {
    const int g = r / 16, i = r % 16;
    for (int b = 0; b < nb; ++b) {
      const std::uint8_t* src = w.row(r) + static_cast<size_t>(b) * bb;
      std::uint8_t* dst = dst_base + (static_cast<size_t>(g) * nb + b) * gbb_;
      unpack_block(w.type, src, codes);
      auto* scales = reinterpret_cast<std::uint16_t*>(dst + code_bytes);
      if (q8) {
        for (int c = 0; c < 32; ++c) {
          dst[(c / 4) * 64 + i * 4 + c % 4] = static_cast<std::uint8_t>(codes.c[c] ^ 0x80);
        }
        scales[i] = reinterpret_cast<const BlockQ8_0*>(src)->d;
      } else {
        for (int c = 0; c < 16; ++c) {
          dst[(c / 4) * 64 + i * 4 + c % 4] =
              static_cast<std::uint8_t>(codes.c[c] | (codes.c[c + 16] << 4));
        }
        if (w.type == GgmlType::Q4_1) {
          scales[i] = reinterpret_cast<const BlockQ4_1*>(src)->d;
          scales[16 + i] = reinterpret_cast<const BlockQ4_1*>(src)->m;
        } else {
          scales[i] = reinterpret_cast<const BlockQ4_0*>(src)->d;
        }
      }
    }
  }
}

namespace {

#if defined(SPECLAB_SIMD_AVX512)
// How far ahead (bytes) the packed kernel prefetches its weight stream. The hardware prefetcher
// alone leaves the kernel waiting on memory at the start of every block once a tile has several
// activation rows (the compute between two loads then hides nothing); a software prefetch a few
// blocks ahead lets the loads overlap the dot products. 4 KiB measured better than 2 and 8 KiB
// on Zen 5 (tools/bench_model). Prefetching past the end of the matrix is harmless: a prefetch
// never faults.
#ifndef SPECLAB_PACKED_PREFETCH
#define SPECLAB_PACKED_PREFETCH 4096
#endif
constexpr int kPrefetchBytes = SPECLAB_PACKED_PREFETCH;
// A second, farther prefetch brings the stream into L2 only (0 = none). The L1 prefetch alone
// still left a 6-token verify pass waiting on memory: a longer L1 distance (8 or 16 KiB) did not
// help, this did. Zen 5, 2 threads, a 160-token prompt, builds alternating (speclab_bench_model):
// the 6-token pass 2.81 -> 2.64 ms, the decode step 2.17 -> 2.14 ms, the prefill unchanged
// (medians of 26 runs each, both CPUs on one die; 8 and 12 KiB did as well, 32 and 64 KiB worse).
#ifndef SPECLAB_PACKED_PREFETCH_L2
#define SPECLAB_PACKED_PREFETCH_L2 16384
#endif
constexpr int kPrefetchL2Bytes = SPECLAB_PACKED_PREFETCH_L2;

// Each byte's high nibble, v >> 4 per byte. With GFNI one affine transform over GF(2) does it
// (the matrix moves bits 4..7 to 0..3): one instruction instead of a shift and a mask, where the
// unpacking shares the vector ports with the dot products (a 6-token tile 5% faster on a Xeon,
// Emerald Rapids, 2026-11-28).
inline __m512i high_nibbles(__m512i v, __m512i nib) {
#if defined(__GFNI__)
  (void)nib;
  return _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(0x1020408000000000LL), 0);
#else
  return _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
#endif
}

// Row group g x activation rows [t0, t0 + NT): 16 rows' sums per lane, written for the rows of
// the group inside [r0, r1). `prefetch`: issue prefetches for the weight stream (the first tile
// over a group; later tiles find the group in L1).
template <GgmlType kType, int NT>
void packed_tile(const PackedMatrix& w, const ActTile& xt, int t0, float* y, int ldy, int g, int r0,
                 int r1, bool prefetch) {
  constexpr bool kQ8 = kType == GgmlType::Q8_0;
  constexpr int kCodeBytes = kQ8 ? 512 : 256;
  const int nb = w.blocks();
  const int gbb = static_cast<int>(w.group_block_bytes());
  // Per block: acc += float(isum) * (dw * dx), then acc += mw * s. One accumulator per
  // activation row (not a second one for the offset terms) saves vector registers: a tile of 6
  // rows fits in the 32 with its integer chains, one of 8 spills a few. Each row's sum is formed
  // in the same order whatever NT is, so a prefill and the same tokens one at a time give
  // bit-identical products.
  __m512 acc[NT];
#pragma GCC unroll 8
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i nib = _mm512_set1_epi8(0x0f);
  const std::uint8_t* p = w.at(g, 0);
  for (int b = 0; b < nb; ++b, p += gbb) {
    if (prefetch) {
      for (int off = 0; off < gbb; off += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes + off), _MM_HINT_T0);
        if constexpr (kPrefetchL2Bytes > 0) {
          _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchL2Bytes + off), _MM_HINT_T1);
        }
      }
    }
    __m512i c[8];
    if constexpr (kQ8) {
      for (int k = 0; k < 8; ++k) c[k] = _mm512_load_si512(p + 64 * k);
    } else {
      for (int k = 0; k < 4; ++k) {
        const __m512i v = _mm512_load_si512(p + 64 * k);
        c[k] = _mm512_and_si512(v, nib);
        c[k + 4] = high_nibbles(v, nib);
      }
    }
    const __m512 dw =
        _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p + kCodeBytes)));
    __m512 mw;
    if constexpr (kType == GgmlType::Q4_1) {
      mw =
          _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p + kCodeBytes + 32)));
    } else {
      mw = _mm512_mul_ps(dw, _mm512_set1_ps(kQ8 ? -128.0f : -8.0f));
    }
    // The tile's codes and scales for block b, token after token (TiledActs): one pointer and
    // constant offsets, where a pointer per token ran out of registers.
    const std::int8_t* qb = xt.q + static_cast<size_t>(b) * NT * 32;
    const float* db = xt.d + static_cast<size_t>(b) * NT;
    const float* sb = xt.s + static_cast<size_t>(b) * NT;
    // Two chains of 4 vpdpbusd per token (8 of 16 rows x 4 columns), then one add. The loop
    // over the tokens is the inner one: each code vector then feeds NT independent chains in a
    // row, so the scheduler always has ready dot products (token by token, a 6-token tile ran 5%
    // slower on the Xeon above). Integer sums are exact in any order: the results do not change.
    __m512i s0[NT], s1[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) s0[t] = s1[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int k = 0; k < 8; k += 2) {
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        const std::int8_t* q = qb + t * 32;
        std::int32_t a0, a1;
        std::memcpy(&a0, q + 4 * k, 4);
        std::memcpy(&a1, q + 4 * k + 4, 4);
        s0[t] = _mm512_dpbusd_epi32(s0[t], c[k], _mm512_set1_epi32(a0));
        s1[t] = _mm512_dpbusd_epi32(s1[t], c[k + 1], _mm512_set1_epi32(a1));
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const __m512 p32 = _mm512_cvtepi32_ps(_mm512_add_epi32(s0[t], s1[t]));
      acc[t] = _mm512_fmadd_ps(p32, _mm512_mul_ps(dw, _mm512_set1_ps(db[t])), acc[t]);
      acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(sb[t]), acc[t]);
    }
  }
  const int g0 = g * 16;
  const int lo = std::max(r0, g0), hi = std::min(r1, g0 + 16);
  const __mmask16 mask =
      static_cast<__mmask16>(((1u << (hi - g0)) - 1u) & ~((1u << (lo - g0)) - 1u));
#pragma GCC unroll 8
  for (int t = 0; t < NT; ++t) {
    float* yt = y + static_cast<size_t>(t0 + t) * ldy + g0;
    if (mask == 0xffff) {
      _mm512_storeu_ps(yt, acc[t]);
    } else {
      _mm512_mask_storeu_ps(yt, mask, acc[t]);
    }
  }
}

#ifndef SPECLAB_PACKED_MAX_TILE
#define SPECLAB_PACKED_MAX_TILE 8
#endif
constexpr int kMaxPackedTile = SPECLAB_PACKED_MAX_TILE;

// packed_tile<kType, nt> for a runtime nt in [1, NT].
template <GgmlType kType, int NT = kMaxPackedTile>
void packed_group(const PackedMatrix& w, const ActTile& xt, int t0, int nt, float* y, int ldy,
                  int g, int r0, int r1, bool prefetch) {
  if constexpr (NT > 1) {
    if (nt < NT) return packed_group<kType, NT - 1>(w, xt, t0, nt, y, ldy, g, r0, r1, prefetch);
  }
  packed_tile<kType, NT>(w, xt, t0, y, ldy, g, r0, r1, prefetch);
}

// A row group's weights (a few KB per 576 columns) stay in L1 while every tile of activation
// rows passes over them, so a prefill still reads the weights from memory once. Tiles hold at
// most kMaxPackedTile rows (measured on Zen 5: a 9-row tile is no faster than 5 + 4, a 10-row
// one slower than 5 + 5, as the accumulators start to spill out of the 32 vector registers) and
// are balanced: 9 rows go as 5 + 4, not 8 + 1.
template <GgmlType kType>
void matmul_packed_typed(const PackedMatrix& w, const QuantizedActs& x, float* y, int ldy, int r0,
                         int r1) {
  const int n = x.rows();
  const int tiles = (n + kMaxPackedTile - 1) / kMaxPackedTile;
  const int tile = (n + tiles - 1) / tiles;
  {
    // The in-loop prefetch runs kPrefetchBytes ahead; start the stream so that the first blocks
    // are on their way too.
    const std::uint8_t* first = w.at(r0 / 16, 0);
    const size_t groups = static_cast<size_t>((r1 + 15) / 16 - r0 / 16);
    const size_t span =
        std::min<size_t>(kPrefetchBytes, groups * w.blocks() * w.group_block_bytes());
    for (size_t off = 0; off < span; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(first + off), _MM_HINT_T0);
    }
  }
  const TiledActs tiled(x, tile);
  for (int g = r0 / 16; g * 16 < r1; ++g) {
    for (int t0 = 0; t0 < n; t0 += tile) {
      packed_group<kType>(w, tiled.at(t0), t0, std::min(tile, n - t0), y, ldy, g, r0, r1, t0 == 0);
    }
  }
}
#elif defined(SPECLAB_SIMD_AVX2)
// AVX2 (no VNNI needed) on the same packed layout: a 32-byte half of each 64-byte code vector
// holds 4 consecutive codes of 8 rows, so one maddubs against 4 activation bytes broadcast to
// every lane gives 8 rows' partial sums at once, and the scales and offsets are applied to 8
// rows per instruction, with no horizontal sums. Per (8 rows, block, activation row):
//   4-bit codes (<= 15): the 8 maddubs results are added as 16-bit integers (each lane at most
//     8 * 2 * 15 * 127 = 30480, so nothing saturates or wraps), then widened by one madd;
//   Q8_0: the code ^ 0x80 of the layout is turned back into the signed code c, and
//     maddubs(|c|, sign(x, c)) (ggml's trick: unsigned x signed, with |c| <= 128 and pairs at
//     most 2 * 128 * 127 < 32768) is widened per 4 columns (two such sums could overflow).
// The integer sum is exact, and the float steps per activation row do not depend on the rows it
// shares a tile with: a prefill and the same tokens one at a time give the same bits.

// Up to 8 activation rows per tile. Timed on one 1536 x 576 Q4_1 matrix in cache (Zen 3), per
// activation row: a tile of 1 row 30 us, 2 rows 18, 4 rows 14, 6 and 8 rows 13.8 (from 8 rows on,
// s[] and acc[] no longer fit in the 16 ymm registers).
constexpr int kMaxPackedTile = 8;

// Rows [8h, 8h + 8) of row group g x the tile's NT activation rows, stored for the rows inside
// [r0, r1).
// How far ahead (bytes) the first tile over a row group prefetches its weight stream, as in the
// AVX-512 kernel. On a Zen 3 host (AVX2 only), 8 KiB measured better than none and than 4 KiB:
// about 7% on decode and on a 6-token verify pass (tools/bench_model, alternating builds).
#ifndef SPECLAB_PACKED_PREFETCH_AVX2
#define SPECLAB_PACKED_PREFETCH_AVX2 8192
#endif
constexpr int kPrefetchBytes = SPECLAB_PACKED_PREFETCH_AVX2;

template <GgmlType kType, int NT>
void packed_half(const PackedMatrix& w, const ActTile& xt, int t0, float* y, int ldy, int g, int h,
                 int r0, int r1, bool prefetch) {
  constexpr bool kQ8 = kType == GgmlType::Q8_0;
  constexpr int kCodeBytes = kQ8 ? 512 : 256;
  const int nb = w.blocks();
  const size_t gbb = w.group_block_bytes();
  const __m256i nib = _mm256_set1_epi8(0x0f);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[NT];
#pragma GCC unroll 8
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  const std::uint8_t* p = w.at(g, 0);
  for (int b = 0; b < nb; ++b, p += gbb) {
    if (prefetch) {
      for (size_t off = 0; off < gbb; off += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes + off), _MM_HINT_T0);
      }
    }
    const std::int8_t* qb = xt.q + static_cast<size_t>(b) * NT * 32;
    __m256i s[NT];  // 16-bit sums (4-bit codes) or 32-bit sums (Q8_0)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) s[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      if constexpr (kQ8) {
        const __m256i c = _mm256_xor_si256(
            _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 64 * k + 32 * h)), flip);
        const __m256i ac = _mm256_sign_epi8(c, c);
#pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) {
          std::int32_t a;
          std::memcpy(&a, qb + t * 32 + 4 * k, 4);
          const __m256i sx = _mm256_sign_epi8(_mm256_set1_epi32(a), c);
          s[t] = _mm256_add_epi32(s[t], _mm256_madd_epi16(_mm256_maddubs_epi16(ac, sx), ones));
        }
      } else {
        const __m256i v =
            _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 64 * (k & 3) + 32 * h));
        const __m256i c =
            k < 4 ? _mm256_and_si256(v, nib) : _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
#pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) {
          std::int32_t a;
          std::memcpy(&a, qb + t * 32 + 4 * k, 4);
          s[t] = _mm256_add_epi16(s[t], _mm256_maddubs_epi16(c, _mm256_set1_epi32(a)));
        }
      }
    }
    const __m256 dw =
        _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p + kCodeBytes + 16 * h)));
    __m256 mw = _mm256_setzero_ps();
    if constexpr (kType == GgmlType::Q4_1) {
      mw = _mm256_cvtph_ps(
          _mm_load_si128(reinterpret_cast<const __m128i*>(p + kCodeBytes + 32 + 16 * h)));
    } else if constexpr (kType == GgmlType::Q4_0) {
      mw = _mm256_mul_ps(dw, _mm256_set1_ps(-8.0f));
    }
    const float* db = xt.d + static_cast<size_t>(b) * NT;
    const float* sb = xt.s + static_cast<size_t>(b) * NT;
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const __m256i i32 = kQ8 ? s[t] : _mm256_madd_epi16(s[t], ones);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32),
                               _mm256_mul_ps(dw, _mm256_broadcast_ss(db + t)), acc[t]);
      if constexpr (!kQ8) acc[t] = _mm256_fmadd_ps(mw, _mm256_broadcast_ss(sb + t), acc[t]);
    }
  }
  const int row0 = g * 16 + 8 * h;
  const int lo = std::max(r0, row0), hi = std::min(r1, row0 + 8);
#pragma GCC unroll 8
  for (int t = 0; t < NT; ++t) {
    float* yt = y + static_cast<size_t>(t0 + t) * ldy + row0;
    if (lo == row0 && hi == row0 + 8) {
      _mm256_storeu_ps(yt, acc[t]);
    } else {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, acc[t]);
      for (int r = lo; r < hi; ++r) yt[r - row0] = lanes[r - row0];
    }
  }
}

// packed_half<kType, nt> for a runtime nt in [1, NT].
template <GgmlType kType, int NT = kMaxPackedTile>
void packed_half_n(const PackedMatrix& w, const ActTile& xt, int t0, int nt, float* y, int ldy,
                   int g, int h, int r0, int r1, bool prefetch) {
  if constexpr (NT > 1) {
    if (nt < NT) {
      return packed_half_n<kType, NT - 1>(w, xt, t0, nt, y, ldy, g, h, r0, r1, prefetch);
    }
  }
  packed_half<kType, NT>(w, xt, t0, y, ldy, g, h, r0, r1, prefetch);
}

// Tiles are balanced (9 rows go as 5 + 4, not 8 + 1). A half group's weights (a few KB) stay in
// L1 while every tile passes over them, so a prefill still reads the weights from memory once.
template <GgmlType kType>
void matmul_packed_typed(const PackedMatrix& w, const QuantizedActs& x, float* y, int ldy, int r0,
                         int r1) {
  const int n = x.rows();
  const int tiles = (n + kMaxPackedTile - 1) / kMaxPackedTile;
  const int tile = (n + tiles - 1) / tiles;
  const TiledActs acts(x, tile);
  for (int h8 = r0 / 8; h8 * 8 < r1; ++h8) {
    for (int t0 = 0; t0 < n; t0 += tile) {
      packed_half_n<kType>(w, acts.at(t0), t0, std::min(tile, n - t0), y, ldy, h8 / 2, h8 % 2, r0,
                           r1, t0 == 0 && h8 % 2 == 0);
    }
  }
}
#elif defined(SPECLAB_SIMD_NEON)
// NEON (AArch64) on the same packed layout: a 16-byte quarter of each 64-byte code vector holds 4
// consecutive codes of 4 rows, so one sdot against 4 activation bytes (a lane of the activation
// vector) gives 4 rows' partial sums, and the scales and offsets are applied to 4 rows per
// instruction. The codes are signed bytes (Q8_0's code ^ 0x80 of the layout is flipped back), so
// Q8_0 needs no offset term. The float steps are the AVX2 kernel's, one for one: the same bits.
// Without the dot-product extension (armv8.0, e.g. a Cortex-A72) sdot is emulated with widening
// multiplies and pairwise adds; the integer sums, and so the results, are the same.

// acc[i] += sum_{j<4} c[4i + j] * a[4 * L + j]: rows 4i of a quarter, against activation lane L.
template <int L>
inline int32x4_t dot_lane(int32x4_t acc, int8x16_t c, int8x16_t a) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_laneq_s32(acc, c, a, L);
#else
  // |code x activation| <= 128 * 127, so two products fit an int16 before the widening add.
  const int8x16_t al = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(a), L));
  const int16x8_t lo = vmull_s8(vget_low_s8(c), vget_low_s8(al));
  const int16x8_t hi = vmull_high_s8(c, al);
  return vpadalq_s16(acc, vpaddq_s16(lo, hi));
#endif
}

// Up to 8 activation rows per tile: 8 accumulators, 8 code vectors and the temporaries fit the
// 32 vector registers.
constexpr int kMaxPackedTile = 8;

// Rows [4q, 4q + 4) of row group g x the tile's NT activation rows, stored for the rows inside
// [r0, r1). A quarter reads 16 bytes of every 64, and the next quarter finds the group's lines
// in the cache.
template <GgmlType kType, int NT>
void packed_quarter(const PackedMatrix& w, const ActTile& xt, int t0, float* y, int ldy, int g,
                    int q, int r0, int r1) {
  constexpr bool kQ8 = kType == GgmlType::Q8_0;
  constexpr int kCodeBytes = kQ8 ? 512 : 256;
  const int nb = w.blocks();
  const size_t gbb = w.group_block_bytes();
  const uint8x16_t nib = vdupq_n_u8(0x0f), flip = vdupq_n_u8(0x80);
  float32x4_t acc[NT];
#pragma GCC unroll 8
  for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
  const std::uint8_t* p = w.at(g, 0);
  for (int b = 0; b < nb; ++b, p += gbb) {
    // c[k] pairs with activation columns 4k..4k+3: k < 4 with lane k of the first 16 bytes,
    // k >= 4 with lane k - 4 of the second 16 (4-bit codes: the low nibbles hold columns
    // 4k..4k+3, the high ones 16 + 4k..).
    int8x16_t c[8];
    if constexpr (kQ8) {
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        c[k] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p + 64 * k + 16 * q), flip));
      }
    } else {
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const uint8x16_t v = vld1q_u8(p + 64 * k + 16 * q);
        c[k] = vreinterpretq_s8_u8(vandq_u8(v, nib));
        c[k + 4] = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
      }
    }
    const float32x4_t dw =
        vcvt_f32_f16(vld1_f16(reinterpret_cast<const float16_t*>(p + kCodeBytes) + 4 * q));
    float32x4_t mw = vdupq_n_f32(0.0f);
    if constexpr (kType == GgmlType::Q4_1) {
      mw = vcvt_f32_f16(vld1_f16(reinterpret_cast<const float16_t*>(p + kCodeBytes + 32) + 4 * q));
    } else if constexpr (kType == GgmlType::Q4_0) {
      mw = vmulq_f32(dw, vdupq_n_f32(-8.0f));
    }
    const std::int8_t* qb = xt.q + static_cast<size_t>(b) * NT * 32;
    const float* db = xt.d + static_cast<size_t>(b) * NT;
    const float* sb = xt.s + static_cast<size_t>(b) * NT;
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const int8x16_t a0 = vld1q_s8(qb + t * 32), a1 = vld1q_s8(qb + t * 32 + 16);
      int32x4_t s0 = vdupq_n_s32(0), s1 = vdupq_n_s32(0);
      s0 = dot_lane<0>(s0, c[0], a0);
      s1 = dot_lane<0>(s1, c[4], a1);
      s0 = dot_lane<1>(s0, c[1], a0);
      s1 = dot_lane<1>(s1, c[5], a1);
      s0 = dot_lane<2>(s0, c[2], a0);
      s1 = dot_lane<2>(s1, c[6], a1);
      s0 = dot_lane<3>(s0, c[3], a0);
      s1 = dot_lane<3>(s1, c[7], a1);
      const float32x4_t p32 = vcvtq_f32_s32(vaddq_s32(s0, s1));
      acc[t] = vfmaq_f32(acc[t], p32, vmulq_f32(dw, vdupq_n_f32(db[t])));
      if constexpr (!kQ8) acc[t] = vfmaq_f32(acc[t], mw, vdupq_n_f32(sb[t]));
    }
  }
  const int row0 = g * 16 + 4 * q;
  const int lo = std::max(r0, row0), hi = std::min(r1, row0 + 4);
#pragma GCC unroll 8
  for (int t = 0; t < NT; ++t) {
    float* yt = y + static_cast<size_t>(t0 + t) * ldy + row0;
    if (lo == row0 && hi == row0 + 4) {
      vst1q_f32(yt, acc[t]);
    } else {
      float lanes[4];
      vst1q_f32(lanes, acc[t]);
      for (int r = lo; r < hi; ++r) yt[r - row0] = lanes[r - row0];
    }
  }
}

// A quarter group's weights stay in the cache while every tile passes over them, so a prefill
// still reads the weights from memory once.
template <GgmlType kType>
void matmul_packed_typed(const PackedMatrix& w, const QuantizedActs& x, float* y, int ldy, int r0,
                         int r1) {
  const int n = x.rows();
  const int tile = balanced_tile(n, kMaxPackedTile);
  const TiledActs acts(x, tile);
  for (int q4 = r0 / 4; q4 * 4 < r1; ++q4) {
    for (int t0 = 0; t0 < n; t0 += tile) {
      with_tile_width<kMaxPackedTile>(std::min(tile, n - t0), [&](auto nt) {
        packed_quarter<kType, decltype(nt)::value>(w, acts.at(t0), t0, y, ldy, q4 / 4, q4 % 4, r0,
                                                   r1);
      });
    }
  }
}
#endif  // SPECLAB_SIMD_AVX512 / SPECLAB_SIMD_AVX2 / SPECLAB_SIMD_NEON

void check_shapes(const QuantMatrix& w, const QuantizedActs& x, int ldy, int r0, int r1) {
  if (w.type != GgmlType::Q4_0 && w.type != GgmlType::Q4_1 && w.type != GgmlType::Q8_0) {
    throw std::invalid_argument("matmul: weight type " +
                                ggml_type_name(static_cast<std::uint32_t>(w.type)) +
                                " is not supported (Q4_0, Q4_1, Q8_0)");
  }
  if (x.cols() != w.cols || r0 < 0 || r0 > r1 || r1 > w.rows || ldy < w.rows) {
    throw std::invalid_argument("matmul: shapes do not fit: weights " + std::to_string(w.rows) +
                                " x " + std::to_string(w.cols) + ", activations " +
                                std::to_string(x.rows()) + " x " + std::to_string(x.cols()) +
                                ", rows [" + std::to_string(r0) + ", " + std::to_string(r1) +
                                "), ldy " + std::to_string(ldy));
  }
}

void matmul_packed_unchecked(const PackedMatrix& w, const QuantizedActs& x, float* y, int ldy,
                             int r0, int r1) {
#if defined(SPECLAB_SIMD_AVX512) || defined(SPECLAB_SIMD_AVX2) || defined(SPECLAB_SIMD_NEON)
  switch (w.source().type) {
    case GgmlType::Q4_0: return matmul_packed_typed<GgmlType::Q4_0>(w, x, y, ldy, r0, r1);
    case GgmlType::Q4_1: return matmul_packed_typed<GgmlType::Q4_1>(w, x, y, ldy, r0, r1);
    default: return matmul_packed_typed<GgmlType::Q8_0>(w, x, y, ldy, r0, r1);
  }
#else
  return matmul_scalar(w.source(), x, y, ldy, r0, r1);
#endif
}

}  // namespace

const char* packed_kernel_name() {
#if defined(SPECLAB_SIMD_AVX512) && defined(__GFNI__)
  return "avx512+vnni+gfni (16 rows per instruction)";
#elif defined(SPECLAB_SIMD_AVX512)
  return "avx512+vnni (16 rows per instruction)";
#elif defined(SPECLAB_SIMD_AVX2)
  return "avx2 (8 rows per instruction)";
#elif defined(SPECLAB_SIMD_NEON) && defined(__ARM_FEATURE_DOTPROD)
  return "neon+dotprod (4 rows per instruction)";
#elif defined(SPECLAB_SIMD_NEON)
  return "neon, sdot emulated (4 rows per 3 instructions)";
#else
  return "none (scalar fallback)";
#endif
}

void matmul(const PackedMatrix& w, const QuantizedActs& x, float* y, int ldy, int r0, int r1) {
  check_shapes(w.source(), x, ldy, r0, r1);
  if (x.rows() == 0 || r0 == r1) return;
  matmul_packed_unchecked(w, x, y, ldy, r0, r1);
}

void matmul(MatmulKernel kernel, const QuantMatrix& w, const QuantizedActs& x, float* y, int ldy,
            int r0, int r1) {
  check_kernel(kernel, "matmul");
  check_shapes(w, x, ldy, r0, r1);
  if (x.rows() == 0 || r0 == r1) return;
  switch (kernel) {
    case MatmulKernel::reference: return matmul_reference(w, x, y, ldy, r0, r1);
    case MatmulKernel::scalar: return matmul_scalar(w, x, y, ldy, r0, r1);
    case MatmulKernel::simd:
#if defined(SPECLAB_SIMD_AVX2)
      return matmul_simd(w, x, y, ldy, r0, r1);
#else
      return matmul_scalar(w, x, y, ldy, r0, r1);
#endif
    case MatmulKernel::packed: return matmul_packed_unchecked(PackedMatrix(w), x, y, ldy, r0, r1);
  }
}

void check_kernel(MatmulKernel kernel, const char* who) {
  switch (kernel) {
    case MatmulKernel::reference:
    case MatmulKernel::scalar:
    case MatmulKernel::simd:
    case MatmulKernel::packed: return;
  }
  throw std::invalid_argument(std::string(who) + ": kernel " +
                              std::to_string(static_cast<int>(kernel)) +
                              " is not a MatmulKernel (0 reference, 1 scalar, 2 simd, 3 packed)");
}

}  // namespace speclab::cpu
