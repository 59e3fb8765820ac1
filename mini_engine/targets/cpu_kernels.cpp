#include "mini_engine/targets/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

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

namespace speclab::cpu {

void QuantizedActs::reset(int rows, int cols) {
  if (rows < 0 || cols <= 0 || cols % 32 != 0) {
    throw std::invalid_argument("QuantizedActs: needs rows >= 0 and cols > 0 a multiple of 32 "
                                "(got rows=" + std::to_string(rows) + " cols=" +
                                std::to_string(cols) + ")");
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

void QuantizedActs::quantize(const float* x, int rows, int cols, int ldx) {
  if (ldx < cols) {
    throw std::invalid_argument("QuantizedActs::quantize: ldx " + std::to_string(ldx) +
                                " < cols " + std::to_string(cols));
  }
  reset(rows, cols);
  quantize_rows(x, ldx, 0, rows);
}

void QuantizedActs::quantize_rows(const float* x, int ldx, int r0, int r1) {
  const int nb = blocks();
  for (int r = r0; r < r1; ++r) {
    const float* xr = x + static_cast<size_t>(r) * ldx;
    std::int8_t* qr = q_.data() + q_offset_ + static_cast<size_t>(r) * q_stride_;
    for (int b = 0; b < nb; ++b) {
      const float* xb = xr + b * 32;
      float amax = 0.0f;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
      const float d = amax / 127.0f;
      const float id = d > 0.0f ? 1.0f / d : 0.0f;
      int sum = 0;
      for (int i = 0; i < 32; ++i) {
        // |x * id| <= 127 up to rounding; the clamp only guards that last ulp.
        const int v = std::clamp(static_cast<int>(std::nearbyint(xb[i] * id)), -127, 127);
        qr[b * 32 + i] = static_cast<std::int8_t>(v);
        sum += v;
      }
      d_[static_cast<size_t>(r) * nb + b] = d;
      s_[static_cast<size_t>(r) * nb + b] = d * static_cast<float>(sum);
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

void dequantize_matrix_row(const QuantMatrix& w, int r, float* out) {
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
    default:
      throw std::invalid_argument("unpack_block: unsupported type");
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
  for (; b + 8 <= n; b += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(m + b), _mm256_loadu_ps(s + b), acc);
  float tail = 0.0f;
  for (; b < n; ++b) tail += m[b] * s[b];
  return hsum(acc) + tail;
}

// Rows [r0, r1) x activation rows [t0, t0 + NT).
template <GgmlType kType, int NT>
void simd_tile(const QuantMatrix& w, const QuantizedActs& x, int t0, float* y, int ldy, int r0,
               int r1, float* mrow) {
  constexpr int kBytes = kType == GgmlType::Q8_0 ? 34 : kType == GgmlType::Q4_1 ? 20 : 18;
  const int nb = w.cols / 32;
  const std::int8_t* xq[NT];
  const float* xd[NT];
  for (int t = 0; t < NT; ++t) {
    xq[t] = x.q(t0 + t);
    xd[t] = x.d(t0 + t);
  }
  for (int r = r0; r < r1; ++r) {
    const std::uint8_t* row = w.row(r);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; ++b) {
      float dw, mw;
      const __m256i u = unpack_simd<kType>(row + b * kBytes, dw, mw);
      mrow[b] = mw;
      const __m256 dwv = _mm256_set1_ps(dw);
      for (int t = 0; t < NT; ++t) {
        const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(xq[t] + b * 32));
        const __m256 p = _mm256_cvtepi32_ps(dot_u8s8(u, xv));
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(p, _mm256_broadcast_ss(xd[t] + b)), dwv, acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) {
      y[static_cast<size_t>(t0 + t) * ldy + r] = hsum(acc[t]) + dot_floats(mrow, x.s(t0 + t), nb);
    }
  }
}

#if !defined(SPECLAB_SIMD_VNNI)
// Q8_0 without VNNI: signed x signed through maddubs(|w|, sign(x, w)), as ggml does.
template <int NT>
void simd_tile_q8_sign(const QuantMatrix& w, const QuantizedActs& x, int t0, float* y, int ldy,
                       int r0, int r1) {
  const int nb = w.cols / 32;
  for (int r = r0; r < r1; ++r) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(w.row(r));
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; ++b) {
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[b].qs));
      const __m256i aw = _mm256_sign_epi8(wv, wv);
      const __m256 dwv = _mm256_set1_ps(fp16(blocks[b].d));
      for (int t = 0; t < NT; ++t) {
        const __m256i xv =
            _mm256_load_si256(reinterpret_cast<const __m256i*>(x.q(t0 + t) + b * 32));
        const __m256i sx = _mm256_sign_epi8(xv, wv);
        const __m256i p32 = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), _mm256_set1_epi16(1));
        acc[t] = _mm256_fmadd_ps(
            _mm256_mul_ps(_mm256_cvtepi32_ps(p32), _mm256_broadcast_ss(x.d(t0 + t) + b)), dwv,
            acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) y[static_cast<size_t>(t0 + t) * ldy + r] = hsum(acc[t]);
  }
}
#endif

template <GgmlType kType>
void simd_rows_tile(const QuantMatrix& w, const QuantizedActs& x, int t0, int nt, float* y,
                    int ldy, int r0, int r1, float* mrow) {
#if !defined(SPECLAB_SIMD_VNNI)
  if constexpr (kType == GgmlType::Q8_0) {
    switch (nt) {
      case 1: return simd_tile_q8_sign<1>(w, x, t0, y, ldy, r0, r1);
      case 2: return simd_tile_q8_sign<2>(w, x, t0, y, ldy, r0, r1);
      case 3: return simd_tile_q8_sign<3>(w, x, t0, y, ldy, r0, r1);
      case 4: return simd_tile_q8_sign<4>(w, x, t0, y, ldy, r0, r1);
      case 5: return simd_tile_q8_sign<5>(w, x, t0, y, ldy, r0, r1);
      case 6: return simd_tile_q8_sign<6>(w, x, t0, y, ldy, r0, r1);
      case 7: return simd_tile_q8_sign<7>(w, x, t0, y, ldy, r0, r1);
      default: return simd_tile_q8_sign<8>(w, x, t0, y, ldy, r0, r1);
    }
  }
#endif
  switch (nt) {
    case 1: return simd_tile<kType, 1>(w, x, t0, y, ldy, r0, r1, mrow);
    case 2: return simd_tile<kType, 2>(w, x, t0, y, ldy, r0, r1, mrow);
    case 3: return simd_tile<kType, 3>(w, x, t0, y, ldy, r0, r1, mrow);
    case 4: return simd_tile<kType, 4>(w, x, t0, y, ldy, r0, r1, mrow);
    case 5: return simd_tile<kType, 5>(w, x, t0, y, ldy, r0, r1, mrow);
    case 6: return simd_tile<kType, 6>(w, x, t0, y, ldy, r0, r1, mrow);
    case 7: return simd_tile<kType, 7>(w, x, t0, y, ldy, r0, r1, mrow);
    default: return simd_tile<kType, 8>(w, x, t0, y, ldy, r0, r1, mrow);
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
  thread_local std::vector<float> mrow;
  mrow.resize(static_cast<size_t>(w.cols / 32));
  for (int rc = r0; rc < r1; rc += kRowChunk) {
    const int rc1 = std::min(r1, rc + kRowChunk);
    for (int t0 = 0; t0 < x.rows(); t0 += kTokTile) {
      const int nt = std::min(kTokTile, x.rows() - t0);
      simd_rows_tile<kType>(w, x, t0, nt, y, ldy, rc, rc1, mrow.data());
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

void matmul(MatmulKernel kernel, const QuantMatrix& w, const QuantizedActs& x, float* y, int ldy,
            int r0, int r1) {
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
  }
}

}  // namespace speclab::cpu
