#pragma once
// ggml tensor types and their block layouts, with reference dequantizers.
//
// The per-block functions are plain arithmetic marked SPECLAB_HD, so the CUDA kernels call the
// very same code on the device that the host tests check here.
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__CUDACC__)
#define SPECLAB_HD __host__ __device__
#else
#define SPECLAB_HD
#endif

namespace speclab {

// The ggml type ids that SpecLab reads (values as stored in GGUF tensor infos).
enum class GgmlType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 8,
  BF16 = 30,
};

struct GgmlTypeInfo {
  GgmlType type;
  const char* name;
  int block_size;  // elements per block (1 for the float types)
  int type_size;   // bytes per block
};

// Returns the layout of a supported type id, or nullptr for any other id.
const GgmlTypeInfo* ggml_type_info(std::uint32_t id);
// "Q4_1", or "type 14" for an unknown id.
std::string ggml_type_name(std::uint32_t id);

// The first of n_blocks consecutive blocks of `type` at `data` whose fp16 scale d (or, in Q4_1,
// offset m) is infinite or NaN, or -1 when there is none. Any such block makes every product with
// the matrix NaN, so a loader refuses the file. Requires type Q4_0, Q4_1 or Q8_0 (throws
// std::invalid_argument otherwise) and n_blocks whole blocks readable at data.
std::int64_t first_nonfinite_block(GgmlType type, const std::uint8_t* data, std::int64_t n_blocks);

// Q4_0: 32 weights as 4-bit codes q in [0, 15]; w = d * (q - 8).
// Byte j of qs holds weight j in its low nibble and weight j + 16 in its high nibble.
struct BlockQ4_0 {
  std::uint16_t d;  // fp16 scale
  std::uint8_t qs[16];
};
// Q4_1: like Q4_0 but w = d * q + m (an offset instead of the fixed -8).
struct BlockQ4_1 {
  std::uint16_t d;  // fp16 scale
  std::uint16_t m;  // fp16 minimum
  std::uint8_t qs[16];
};
// Q8_0: 32 signed 8-bit codes; w = d * q.
struct BlockQ8_0 {
  std::uint16_t d;  // fp16 scale
  std::int8_t qs[32];
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ8_0) == 34,
              "ggml block layouts are packed");
constexpr int kQuantBlock = 32;

// IEEE half -> float, including subnormals, infinities and NaN.
SPECLAB_HD inline float fp16_to_fp32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// float -> IEEE half, rounded to nearest (ties to even) like F16C's vcvtps2ph and ggml's
// GGML_FP32_TO_FP16: overflow gives infinity, tiny values subnormals or zero, NaN stays NaN.
SPECLAB_HD inline std::uint16_t fp32_to_fp16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf or NaN (NaN keeps a quiet payload bit)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  }
  if (ax >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (ax < 0x38800000u) {               // below 2^-14: a subnormal half (or zero)
    if (ax < 0x33000000u) return sign;  // below half the smallest subnormal: rounds to zero
    const std::uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(ax >> 23);  // 14..24 bits to drop
    std::uint32_t h = mant >> shift;
    const std::uint32_t rest = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits (a carry may bump the
  // exponent, which is still the right result).
  std::uint32_t h = ((ax >> 13) - ((127u - 15u) << 10));
  const std::uint32_t rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

// f rounded to the nearest half-precision value, as a float.
SPECLAB_HD inline float round_to_fp16(float f) { return fp16_to_fp32(fp32_to_fp16(f)); }

// bfloat16 -> float: the top half of a float.
SPECLAB_HD inline float bf16_to_fp32(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Weight i (0 <= i < 32, unchecked) of one block.
SPECLAB_HD inline float dequant_q4_0(const BlockQ4_0& b, int i) {
  const int q = i < 16 ? (b.qs[i] & 0x0f) : (b.qs[i - 16] >> 4);
  return fp16_to_fp32(b.d) * static_cast<float>(q - 8);
}
SPECLAB_HD inline float dequant_q4_1(const BlockQ4_1& b, int i) {
  const int q = i < 16 ? (b.qs[i] & 0x0f) : (b.qs[i - 16] >> 4);
  return fp16_to_fp32(b.d) * static_cast<float>(q) + fp16_to_fp32(b.m);
}
SPECLAB_HD inline float dequant_q8_0(const BlockQ8_0& b, int i) {
  return fp16_to_fp32(b.d) * static_cast<float>(b.qs[i]);
}

// Reference dequantizer: writes n floats decoded from `src` (raw tensor bytes of `type`).
// Requires a type ggml_type_info knows and n >= 0 a multiple of its block size (throws
// std::invalid_argument otherwise), ggml_row_bytes(type, n) bytes at src and n floats at dst.
void dequantize_row(GgmlType type, const void* src, float* dst, std::int64_t n);

// Bytes that n elements of `type` occupy. Requires a type ggml_type_info knows and n >= 0 a
// multiple of its block size; throws std::invalid_argument otherwise.
std::uint64_t ggml_row_bytes(GgmlType type, std::int64_t n);

}  // namespace speclab
