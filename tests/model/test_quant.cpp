// Reference dequantizers on hand-built blocks.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "mini_engine/model/quant.h"

using namespace speclab;

TEST_SUITE("model / quantization") {
  TEST_CASE("fp16 and bf16 decode normal, subnormal, zero and infinite values") {
    CHECK(fp16_to_fp32(0x3c00) == 1.0f);
    CHECK(fp16_to_fp32(0xc000) == -2.0f);
    CHECK(fp16_to_fp32(0x3555) == doctest::Approx(0.333251953125));
    CHECK(fp16_to_fp32(0x0001) == doctest::Approx(5.960464477539063e-08));  // smallest subnormal
    CHECK(fp16_to_fp32(0x0000) == 0.0f);
    CHECK(std::isinf(fp16_to_fp32(0x7c00)));
    CHECK(bf16_to_fp32(0x3f80) == 1.0f);
    CHECK(bf16_to_fp32(0xc040) == -3.0f);
  }

  TEST_CASE("fp32 to fp16 rounds to nearest even and round-trips every half") {
    CHECK(fp32_to_fp16(1.0f) == 0x3c00);
    CHECK(fp32_to_fp16(-2.0f) == 0xc000);
    CHECK(fp32_to_fp16(65504.0f) == 0x7bff);
    CHECK(fp32_to_fp16(65520.0f) == 0x7c00);  // the halfway point to 2^16 rounds to infinity
    CHECK(fp32_to_fp16(1e-8f) == 0x0000);
    CHECK(fp32_to_fp16(-0.0f) == 0x8000);
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);         // smallest subnormal
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);         // a tie: rounds to even (zero)
    CHECK(fp32_to_fp16(std::ldexp(3.0f, -25)) == 0x0002);         // 1.5 ulps: ties to even (2)
    CHECK(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie: even mantissa stays
    CHECK(fp32_to_fp16(1.0f + std::ldexp(3.0f, -11)) == 0x3c02);  // tie: odd mantissa rounds up
    CHECK(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3c01);
    CHECK(fp32_to_fp16(std::numeric_limits<float>::infinity()) == 0x7c00);
    CHECK(std::isnan(fp16_to_fp32(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()))));
    int bad = 0;
    for (std::uint32_t h = 0; h < 0x10000u; ++h) {
      if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) continue;  // NaNs
      bad += fp32_to_fp16(fp16_to_fp32(static_cast<std::uint16_t>(h))) != h;
    }
    CHECK(bad == 0);
  }

  TEST_CASE("Q4_0 block: low nibbles are weights 0..15, high nibbles 16..31, offset -8") {
    BlockQ4_0 b{};
    b.d = 0x3800;  // 0.5
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
    std::vector<float> out(32);
    dequantize_row(GgmlType::Q4_0, &b, out.data(), 32);
    for (int j = 0; j < 16; ++j) {
      CHECK(out[j] == 0.5f * static_cast<float>(j - 8));
      CHECK(out[j + 16] == 0.5f * static_cast<float>(15 - j - 8));
    }
  }

  TEST_CASE("Q4_1 block: w = d * q + m") {
    BlockQ4_1 b{};
    b.d = 0x3400;  // 0.25
    b.m = 0xbc00;  // -1
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>((j % 16) | (3 << 4));
    std::vector<float> out(32);
    dequantize_row(GgmlType::Q4_1, &b, out.data(), 32);
    for (int j = 0; j < 16; ++j) {
      CHECK(out[j] == 0.25f * static_cast<float>(j) - 1.0f);
      CHECK(out[j + 16] == 0.25f * 3.0f - 1.0f);
    }
  }

  TEST_CASE("Q8_0 blocks: w = d * q over several blocks") {
    std::vector<BlockQ8_0> blocks(2);
    blocks[0].d = 0x3c00;  // 1
    blocks[1].d = 0x4000;  // 2
    for (int i = 0; i < 32; ++i) {
      blocks[0].qs[i] = static_cast<std::int8_t>(i - 16);
      blocks[1].qs[i] = static_cast<std::int8_t>(-i);
    }
    std::vector<float> out(64);
    dequantize_row(GgmlType::Q8_0, blocks.data(), out.data(), 64);
    for (int i = 0; i < 32; ++i) {
      CHECK(out[i] == static_cast<float>(i - 16));
      CHECK(out[32 + i] == -2.0f * static_cast<float>(i));
    }
  }

  TEST_CASE("F16, BF16 and F32 rows decode element by element") {
    const std::uint16_t h[3] = {0x3c00, 0xc000, 0x0000};
    const std::uint16_t bf[2] = {0x3f80, 0x4040};
    const float f[2] = {1.5f, -7.0f};
    std::vector<float> out(3);
    dequantize_row(GgmlType::F16, h, out.data(), 3);
    CHECK(out == std::vector<float>{1.0f, -2.0f, 0.0f});
    out.resize(2);
    dequantize_row(GgmlType::BF16, bf, out.data(), 2);
    CHECK(out == std::vector<float>{1.0f, 3.0f});
    dequantize_row(GgmlType::F32, f, out.data(), 2);
    CHECK(out == std::vector<float>{1.5f, -7.0f});
  }

  TEST_CASE("row sizes and bad element counts") {
    CHECK(ggml_row_bytes(GgmlType::Q4_1, 576) == 18 * 20);
    CHECK(ggml_row_bytes(GgmlType::Q8_0, 64) == 68);
    CHECK(ggml_row_bytes(GgmlType::F16, 3) == 6);
    std::vector<float> out(40);
    CHECK_THROWS_AS(dequantize_row(GgmlType::Q4_0, out.data(), out.data(), 40),
                    std::invalid_argument);
    CHECK(ggml_type_info(6) == nullptr);  // Q5_0 is not supported
    CHECK(ggml_type_name(6) == "type 6");
    CHECK_THROWS_WITH_AS(ggml_row_bytes(GgmlType::Q8_0, 33), doctest::Contains("block size 32"),
                         std::invalid_argument);
    CHECK_THROWS_AS(ggml_row_bytes(GgmlType::F32, -4), std::invalid_argument);
    CHECK_THROWS_WITH_AS(ggml_row_bytes(static_cast<GgmlType>(6), 32),
                         doctest::Contains("unsupported ggml type type 6"), std::invalid_argument);
    CHECK_THROWS_AS(dequantize_row(static_cast<GgmlType>(6), out.data(), out.data(), 32),
                    std::invalid_argument);
    CHECK_THROWS_AS(dequantize_row(GgmlType::F32, out.data(), out.data(), -1),
                    std::invalid_argument);
  }

  TEST_CASE("first_nonfinite_block finds the first block whose scale or offset is inf or NaN") {
    std::vector<BlockQ4_1> q41(4);
    for (BlockQ4_1& b : q41) {
      b.d = fp32_to_fp16(0.5f);
      b.m = fp32_to_fp16(-1.0f);
    }
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(q41.data());
    CHECK(first_nonfinite_block(GgmlType::Q4_1, bytes, 4) == -1);
    q41[2].m = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());  // the offset counts too
    q41[3].d = fp32_to_fp16(std::numeric_limits<float>::infinity());
    CHECK(first_nonfinite_block(GgmlType::Q4_1, bytes, 4) == 2);
    CHECK(first_nonfinite_block(GgmlType::Q4_1, bytes, 2) == -1);  // only n_blocks are read
    std::vector<BlockQ8_0> q8(3);
    for (BlockQ8_0& b : q8) b.d = fp32_to_fp16(1.0f);
    q8[1].d = fp32_to_fp16(-std::numeric_limits<float>::infinity());
    CHECK(first_nonfinite_block(GgmlType::Q8_0, reinterpret_cast<const std::uint8_t*>(q8.data()),
                                3) == 1);
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
      CAPTURE(static_cast<int>(t));
      CHECK_THROWS_WITH_AS(first_nonfinite_block(t, bytes, 1),
                           doctest::Contains("not a block-quantized type"), std::invalid_argument);
    }
  }
}
