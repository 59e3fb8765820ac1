#include "mini_engine/model/quant.h"

#include <cstring>
#include <stdexcept>

namespace speclab {
namespace {

constexpr GgmlTypeInfo kTypes[] = {
    {GgmlType::F32, "F32", 1, 4},     {GgmlType::F16, "F16", 1, 2},
    {GgmlType::Q4_0, "Q4_0", 32, 18}, {GgmlType::Q4_1, "Q4_1", 32, 20},
    {GgmlType::Q8_0, "Q8_0", 32, 34}, {GgmlType::BF16, "BF16", 1, 2},
};

const GgmlTypeInfo& info_or_throw(GgmlType type) {
  const GgmlTypeInfo* info = ggml_type_info(static_cast<std::uint32_t>(type));
  if (!info)
    throw std::invalid_argument("unsupported ggml type " +
                                ggml_type_name(static_cast<std::uint32_t>(type)));
  return *info;
}

template <typename Block, float (*Dequant)(const Block&, int)>
void dequant_blocks(const void* src, float* dst, std::int64_t n) {
  const auto* blocks = static_cast<const Block*>(src);
  for (std::int64_t b = 0; b < n / kQuantBlock; ++b) {
    for (int i = 0; i < kQuantBlock; ++i) dst[b * kQuantBlock + i] = Dequant(blocks[b], i);
  }
}

}  // namespace

const GgmlTypeInfo* ggml_type_info(std::uint32_t id) {
  for (const auto& t : kTypes) {
    if (static_cast<std::uint32_t>(t.type) == id) return &t;
  }
  return nullptr;
}

std::string ggml_type_name(std::uint32_t id) {
  const GgmlTypeInfo* info = ggml_type_info(id);
  return info ? info->name : "type " + std::to_string(id);
}

std::int64_t first_nonfinite_block(GgmlType type, const std::uint8_t* data, std::int64_t n_blocks) {
  if (type != GgmlType::Q4_0 && type != GgmlType::Q4_1 && type != GgmlType::Q8_0) {
    throw std::invalid_argument(
        "first_nonfinite_block: " + ggml_type_name(static_cast<std::uint32_t>(type)) +
        " is not a block-quantized type");
  }
  const int bytes = info_or_throw(type).type_size;
  const int halves = type == GgmlType::Q4_1 ? 2 : 1;  // d, then (Q4_1) m, first in the block
  for (std::int64_t b = 0; b < n_blocks; ++b) {
    for (int i = 0; i < halves; ++i) {
      std::uint16_t h;
      std::memcpy(&h, data + b * bytes + 2 * i, 2);
      if ((h & 0x7c00u) == 0x7c00u) return b;  // exponent all ones: inf or NaN
    }
  }
  return -1;
}

std::uint64_t ggml_row_bytes(GgmlType type, std::int64_t n) {
  const GgmlTypeInfo& info = info_or_throw(type);
  if (n < 0 || n % info.block_size != 0) {
    throw std::invalid_argument(std::string(info.name) + ": " + std::to_string(n) +
                                " elements is not a multiple of the block size " +
                                std::to_string(info.block_size));
  }
  return static_cast<std::uint64_t>(n / info.block_size) * info.type_size;
}

void dequantize_row(GgmlType type, const void* src, float* dst, std::int64_t n) {
  ggml_row_bytes(type, n);  // validates type and n
  switch (type) {
    case GgmlType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case GgmlType::F16: {
      const auto* h = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      return;
    }
    case GgmlType::BF16: {
      const auto* h = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      return;
    }
    case GgmlType::Q4_0: dequant_blocks<BlockQ4_0, dequant_q4_0>(src, dst, n); return;
    case GgmlType::Q4_1: dequant_blocks<BlockQ4_1, dequant_q4_1>(src, dst, n); return;
    case GgmlType::Q8_0: dequant_blocks<BlockQ8_0, dequant_q8_0>(src, dst, n); return;
  }
}

}  // namespace speclab
