// The CPU kernels against their plain references: activation quantization, and the scalar and
// SIMD quantized matrix products against dequantize-and-sum-in-double.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "mini_engine/sampling/rng.h"
#include "mini_engine/targets/cpu_attention.h"
#include "mini_engine/targets/cpu_kernels.h"
#include "tiny_llama.h"

using namespace speclab;
using namespace speclab::cpu;
using speclab::testing::make_matrix;
using speclab::testing::random_matrix_bytes;

namespace {

std::vector<float> random_floats(int n, std::uint64_t seed, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] =
        (2.0f * static_cast<float>(uniform01(seed, 3, static_cast<std::uint64_t>(i))) - 1.0f) *
        scale;
  }
  return v;
}

struct Mismatch {
  int count = 0;
  std::string first;  // the first few, "t=.. r=..: got .. want .. (tol ..)"
};

// |got - want| <= atol + rtol * magnitude, where magnitude = sum |w_c x_c| of that entry: the
// size of the terms that were summed, which is what float rounding scales with.
Mismatch compare(const std::vector<float>& got, const std::vector<float>& want,
                 const std::vector<float>& magnitude, int rows, int ldy, double rtol, double atol) {
  Mismatch m;
  for (size_t i = 0; i < want.size(); ++i) {
    const double tol = atol + rtol * magnitude[i];
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol)) {
      if (++m.count <= 5) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "  t=%d r=%d: got %.7g want %.7g (tol %.3g)\n",
                      static_cast<int>(i) / ldy, static_cast<int>(i) % ldy, got[i], want[i], tol);
        m.first += buf;
      }
    }
  }
  (void)rows;
  return m;
}

// sum_c |W[r][c] * x[t][c]| for every (t, r), from the dequantized values.
std::vector<float> magnitudes(const QuantMatrix& w, const QuantizedActs& x) {
  std::vector<float> out(static_cast<size_t>(x.rows()) * w.rows);
  std::vector<float> wr(static_cast<size_t>(w.cols));
  for (int r = 0; r < w.rows; ++r) {
    dequantize_matrix_row(w, r, wr.data());
    for (int t = 0; t < x.rows(); ++t) {
      double s = 0;
      for (int c = 0; c < w.cols; ++c) s += std::fabs(wr[c] * x.q(t)[c] * x.d(t)[c / 32]);
      out[static_cast<size_t>(t) * w.rows + r] = static_cast<float>(s);
    }
  }
  return out;
}

const char* type_name(std::uint32_t t) { return t == 2 ? "Q4_0" : t == 3 ? "Q4_1" : "Q8_0"; }

}  // namespace

TEST_SUITE("engine_forward / quantized matrix products") {
  TEST_CASE("activation quantization: codes within 127 and error at most half a step") {
    const std::vector<float> x = random_floats(3 * 96, 5, 4.0f);
    std::vector<float> xx = x;
    for (int i = 64; i < 96; ++i) xx[static_cast<size_t>(i)] = 0.0f;  // an all-zero block
    QuantizedActs q;
    q.quantize(xx.data(), 3, 96, 96);
    REQUIRE(q.rows() == 3);
    REQUIRE(q.blocks() == 3);
    CHECK(q.d(0)[2] == 0.0f);
    CHECK(q.s(0)[2] == 0.0f);
    int worst = 0;
    for (int r = 0; r < 3; ++r) {
      CHECK(reinterpret_cast<std::uintptr_t>(q.q(r)) % 32 == 0);
      for (int b = 0; b < 3; ++b) {
        int sum = 0;
        for (int i = 0; i < 32; ++i) {
          const int c = q.q(r)[b * 32 + i];
          worst = std::max(worst, std::abs(c));
          sum += c;
          // Half a step, plus the fp16 rounding of the scale (2^-11 relative) times |c| <= 127.
          const float back = static_cast<float>(c) * q.d(r)[b];
          CHECK(std::fabs(back - xx[static_cast<size_t>(r * 96 + b * 32 + i)]) <=
                (0.5f + 127.0f / 2048.0f) * q.d(r)[b] * 1.0001f + 1e-7f);
        }
        CHECK(q.s(r)[b] == doctest::Approx(q.d(r)[b] * static_cast<float>(sum)));
      }
    }
    CHECK(worst == 127);  // the largest |x| of a block maps to +-127
  }

  TEST_CASE("activation quantization gives exactly the codes and scales of ggml's formula") {
    // The SIMD quantizer must round like the scalar definition (nearest, ties to even), so the
    // engine's results do not depend on which one was compiled in; and both like llama.cpp's
    // quantize_row_q8_0 / q8_1: multiplier 127 / max|x|, d and (q8_1) s stored as fp16. Values
    // at exact half steps exercise the ties.
    std::vector<float> x = random_floats(2 * 64, 9, 2.0f);
    for (int i = 0; i < 32; ++i) x[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i - 16);
    x[31] = 127.0f;  // so d = 1 and the block's values sit on half steps
    QuantizedActs q, q1;
    q.quantize(x.data(), 2, 64, 64);  // ActFormat::q8_0
    q1.quantize(x.data(), 2, 64, 64, ActFormat::q8_1);
    int mismatches = 0;
    for (int r = 0; r < 2; ++r) {
      for (int b = 0; b < 2; ++b) {
        const float* xb = x.data() + r * 64 + b * 32;
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
        const float d = amax / 127.0f;
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        int sum = 0;
        for (int i = 0; i < 32; ++i) {
          const int v = std::clamp(static_cast<int>(std::nearbyint(xb[i] * id)), -127, 127);
          mismatches += q.q(r)[b * 32 + i] != v;
          mismatches += q1.q(r)[b * 32 + i] != v;
          sum += v;
        }
        CHECK(q.d(r)[b] == round_to_fp16(d));
        CHECK(q1.d(r)[b] == round_to_fp16(d));
        CHECK(q.s(r)[b] == round_to_fp16(d) * static_cast<float>(sum));
        CHECK(q1.s(r)[b] == round_to_fp16(d * static_cast<float>(sum)));
      }
    }
    CHECK(q.q(0)[1] == -8);  // -7.5 rounds to the even -8
    CHECK(q.q(0)[3] == -6);  // -6.5 rounds to the even -6
    CHECK(mismatches == 0);
    CHECK(act_format_for(GgmlType::Q4_1) == ActFormat::q8_1);
    CHECK(act_format_for(GgmlType::Q4_0) == ActFormat::q8_0);
    CHECK(act_format_for(GgmlType::Q8_0) == ActFormat::q8_0);
  }

  TEST_CASE("scalar and simd and packed kernels match the reference for Q4_0 Q4_1 and Q8_0") {
    INFO("simd kernel: ", simd_kernel_name());
    INFO("packed kernel: ", packed_kernel_name());
    int checked = 0;
    for (std::uint32_t type : {2u, 3u, 8u}) {
      for (int cols : {32, 96, 576}) {
        for (int rows : {1, 17, 40}) {
          for (int tokens : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 20}) {
            const auto bytes = random_matrix_bytes(type, rows, cols, 100 + cols + rows, 1.0f);
            const QuantMatrix w = make_matrix(type, rows, cols, bytes);
            const std::vector<float> xf = random_floats(tokens * cols, 7 + tokens, 3.0f);
            QuantizedActs x;
            x.quantize(xf.data(), tokens, cols, cols);
            const size_t n = static_cast<size_t>(tokens) * rows;
            std::vector<float> ref(n), scal(n), simd(n), pack(n), pack_pre(n);
            matmul(MatmulKernel::reference, w, x, ref.data(), rows, 0, rows);
            matmul(MatmulKernel::scalar, w, x, scal.data(), rows, 0, rows);
            matmul(MatmulKernel::simd, w, x, simd.data(), rows, 0, rows);
            matmul(MatmulKernel::packed, w, x, pack.data(), rows, 0, rows);
            const PackedMatrix pw(w);  // packed once, as the forward pass does
            matmul(pw, x, pack_pre.data(), rows, 0, rows);
            const std::vector<float> mag = magnitudes(w, x);
            // float sums of cols / 32 block terms: a few ulps of the magnitude per block.
            const double rtol = 2e-6 * (cols / 32 + 4), atol = 1e-6;
            const Mismatch ms = compare(scal, ref, mag, rows, rows, rtol, atol);
            const Mismatch mv = compare(simd, ref, mag, rows, rows, rtol, atol);
            const Mismatch mp = compare(pack, ref, mag, rows, rows, rtol, atol);
            INFO(std::string(type_name(type)), " rows=", rows, " cols=", cols, " tokens=", tokens);
            INFO("scalar mismatches: ", ms.count, "\n", ms.first);
            INFO("simd mismatches: ", mv.count, "\n", mv.first);
            INFO("packed mismatches: ", mp.count, "\n", mp.first);
            CHECK(ms.count == 0);
            CHECK(mv.count == 0);
            CHECK(mp.count == 0);
            CHECK(pack_pre == pack);
            ++checked;
          }
        }
      }
    }
    CHECK(checked == 3 * 3 * 3 * 11);
  }

  TEST_CASE("the packed kernel gives an activation row the same bits whatever tile it shares") {
    // A prefill and the same tokens one at a time must give identical logits: each row's sum is
    // formed in the same order whether it shares a tile of 1, 5, 8 rows or several tiles.
    int differing = 0, compared = 0;
    for (std::uint32_t type : {2u, 3u, 8u}) {
      const int rows = 33, cols = 96;
      const auto bytes = random_matrix_bytes(type, rows, cols, 11 + type, 1.0f);
      const QuantMatrix w = make_matrix(type, rows, cols, bytes);
      const PackedMatrix pw(w);
      for (int tokens : {2, 6, 8, 9, 17}) {
        const std::vector<float> xf = random_floats(tokens * cols, 50 + tokens, 2.0f);
        QuantizedActs all;
        all.quantize(xf.data(), tokens, cols, cols);
        std::vector<float> y_all(static_cast<size_t>(tokens) * rows);
        matmul(pw, all, y_all.data(), rows, 0, rows);
        for (int t = 0; t < tokens; ++t) {
          QuantizedActs one;
          one.quantize(xf.data() + static_cast<size_t>(t) * cols, 1, cols, cols);
          std::vector<float> y_one(static_cast<size_t>(rows));
          matmul(pw, one, y_one.data(), rows, 0, rows);
          for (int r = 0; r < rows; ++r) {
            differing += y_one[static_cast<size_t>(r)] != y_all[static_cast<size_t>(t) * rows + r];
            ++compared;
          }
        }
      }
    }
    CHECK(compared == 3 * 33 * (2 + 6 + 8 + 9 + 17));
    CHECK(differing == 0);
  }

  TEST_CASE("a row range writes exactly those output rows") {
    const int rows = 50, cols = 64, tokens = 4;
    const auto bytes = random_matrix_bytes(3, rows, cols, 3, 1.0f);
    const QuantMatrix w = make_matrix(3, rows, cols, bytes);
    const std::vector<float> xf = random_floats(tokens * cols, 4, 1.0f);
    QuantizedActs x;
    x.quantize(xf.data(), tokens, cols, cols);
    for (MatmulKernel k : {MatmulKernel::reference, MatmulKernel::scalar, MatmulKernel::simd,
                           MatmulKernel::packed}) {
      std::vector<float> y(static_cast<size_t>(tokens) * rows, -777.0f);
      matmul(k, w, x, y.data(), rows, 13, 29);
      int written = 0, stray = 0;
      for (int t = 0; t < tokens; ++t) {
        for (int r = 0; r < rows; ++r) {
          const bool inside = r >= 13 && r < 29;
          const bool changed = y[static_cast<size_t>(t) * rows + r] != -777.0f;
          written += inside && changed;
          stray += !inside && changed;
        }
      }
      CHECK(written == tokens * 16);
      CHECK(stray == 0);
    }
  }

  TEST_CASE("mismatched shapes and unsupported types are rejected with the shapes named") {
    const auto bytes = random_matrix_bytes(3, 8, 64, 3, 1.0f);
    QuantMatrix w = make_matrix(3, 8, 64, bytes);
    const std::vector<float> xf = random_floats(2 * 32, 4, 1.0f);
    QuantizedActs x;
    x.quantize(xf.data(), 2, 32, 32);
    std::vector<float> y(64);
    CHECK_THROWS_WITH_AS(matmul(MatmulKernel::simd, w, x, y.data(), 8, 0, 8),
                         doctest::Contains("activations 2 x 32"), std::invalid_argument);
    QuantizedActs x64;
    const std::vector<float> xf64 = random_floats(2 * 64, 4, 1.0f);
    x64.quantize(xf64.data(), 2, 64, 64);
    CHECK_THROWS_AS(matmul(MatmulKernel::simd, w, x64, y.data(), 8, 0, 9), std::invalid_argument);
    const PackedMatrix pw(w);
    CHECK_THROWS_WITH_AS(matmul(pw, x, y.data(), 8, 0, 8), doctest::Contains("activations 2 x 32"),
                         std::invalid_argument);
    CHECK_THROWS_AS(matmul(pw, x64, y.data(), 8, 0, 9), std::invalid_argument);
    w.type = GgmlType::F16;
    CHECK_THROWS_WITH_AS(PackedMatrix{w}, doctest::Contains("F16"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(matmul(MatmulKernel::scalar, w, x64, y.data(), 8, 0, 8),
                         doctest::Contains("F16"), std::invalid_argument);
    CHECK_THROWS_AS(x.quantize(xf.data(), 1, 33, 33), std::invalid_argument);
    // A kernel outside the enum returned without writing y.
    w.type = GgmlType::Q4_1;
    CHECK_THROWS_WITH_AS(matmul(static_cast<MatmulKernel>(9), w, x64, y.data(), 8, 0, 8),
                         doctest::Contains("kernel 9 is not a MatmulKernel"),
                         std::invalid_argument);
    // So is one with no work to do: the header promises the check, not only when rows are read.
    CHECK_THROWS_WITH_AS(matmul(static_cast<MatmulKernel>(9), w, x64, y.data(), 8, 0, 0),
                         doctest::Contains("kernel 9 is not a MatmulKernel"),
                         std::invalid_argument);
  }

  TEST_CASE("activations, packing and the kernel choice refuse what their header refuses") {
    const std::vector<float> xf = random_floats(2 * 64, 4, 1.0f);
    QuantizedActs x;
    x.quantize(xf.data(), 0, 64, 64);  // no rows is fine
    CHECK_THROWS_WITH_AS(x.quantize(xf.data(), 2, 64, 32), doctest::Contains("ldx 32 < cols 64"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(x.quantize(xf.data(), -1, 64, 64), doctest::Contains("rows=-1"),
                         std::invalid_argument);
    CHECK_THROWS_AS(x.reset(1, 0), std::invalid_argument);
    CHECK_THROWS_AS(x.reset(1, 48), std::invalid_argument);
    CHECK(x.rows() == 0);  // the refused calls changed nothing
    CHECK(x.cols() == 64);
    const auto bytes = random_matrix_bytes(8, 8, 64, 3, 1.0f);
    QuantMatrix w = make_matrix(8, 8, 64, bytes);
    x.quantize(xf.data(), 2, 64, 64);
    std::vector<float> y(2 * 8);
    CHECK_THROWS_WITH_AS(matmul(MatmulKernel::scalar, w, x, y.data(), 7, 0, 8),
                         doctest::Contains("ldy 7"), std::invalid_argument);
    CHECK_THROWS_AS(matmul(MatmulKernel::scalar, w, x, y.data(), 8, 5, 4), std::invalid_argument);
    CHECK_THROWS_AS(matmul(MatmulKernel::scalar, w, x, y.data(), 8, -1, 4), std::invalid_argument);
    QuantMatrix narrow = w;
    narrow.cols = 48;
    CHECK_THROWS_WITH_AS(PackedMatrix{narrow}, doctest::Contains("cols=48"), std::invalid_argument);
    for (MatmulKernel k : {MatmulKernel::reference, MatmulKernel::scalar, MatmulKernel::simd,
                           MatmulKernel::packed}) {
      CHECK_NOTHROW(check_kernel(k, "test"));
    }
    CHECK_THROWS_WITH_AS(check_kernel(static_cast<MatmulKernel>(-1), "a config file"),
                         doctest::Contains("a config file: kernel -1 is not a MatmulKernel"),
                         std::invalid_argument);
  }

  TEST_CASE("dequantize_matrix_row refuses a row outside the matrix") {
    // Row rows + 10^7 crashed (SEGV) and row -1 read the bytes before the tensor.
    const auto bytes = random_matrix_bytes(3, 8, 64, 3, 1.0f);
    const QuantMatrix w = make_matrix(3, 8, 64, bytes);
    std::vector<float> out(64);
    for (int bad : {-1, 8, 8 + 10000000}) {
      CAPTURE(bad);
      const std::string want = "row " + std::to_string(bad) + " of a matrix of 8 rows";
      CHECK_THROWS_WITH_AS(dequantize_matrix_row(w, bad, out.data()),
                           doctest::Contains(want.c_str()), std::out_of_range);
    }
    dequantize_matrix_row(w, 7, out.data());
  }
}

TEST_SUITE("engine_forward / the SwiGLU feed-forward") {
  TEST_CASE("silu_mul matches the std::exp formula within a few ulps and is the same in pieces") {
    // Values over the whole useful range, and past it, where exp overflows to inf (silu -> -0)
    // or to 1 (silu -> g).
    std::vector<float> g = random_floats(45, 21, 12.0f), u = random_floats(45, 22, 3.0f);
    g[0] = 0.0f;
    g[1] = -100.0f;
    g[2] = 100.0f;
    g[3] = -87.5f;
    g[4] = 1e-30f;
    int bad = 0;
    std::string first;
    for (int n : {0, 1, 7, 8, 9, 15, 16, 17, 45}) {
      std::vector<float> want(g.begin(), g.begin() + n), got = want;
      silu_mul_reference(want.data(), u.data(), n);
      silu_mul(got.data(), u.data(), n);
      for (int i = 0; i < n; ++i) {
        const float tol = 4e-7f * std::fabs(want[static_cast<size_t>(i)]) + 1e-30f;
        if (!(std::fabs(got[static_cast<size_t>(i)] - want[static_cast<size_t>(i)]) <= tol)) {
          if (++bad <= 5) {
            first += "  n=" + std::to_string(n) + " i=" + std::to_string(i) +
                     " g=" + std::to_string(g[static_cast<size_t>(i)]) + ": got " +
                     std::to_string(got[static_cast<size_t>(i)]) + " want " +
                     std::to_string(want[static_cast<size_t>(i)]) + "\n";
          }
        }
      }
    }
    INFO(first);
    CHECK(bad == 0);
    // Split at any point, the pieces give the same bits as one call.
    std::vector<float> whole = g;
    silu_mul(whole.data(), u.data(), 45);
    int split_diff = 0;
    for (int at : {1, 7, 9, 16, 30}) {
      std::vector<float> parts = g;
      silu_mul(parts.data(), u.data(), at);
      silu_mul(parts.data() + at, u.data() + at, 45 - at);
      for (int i = 0; i < 45; ++i)
        split_diff += parts[static_cast<size_t>(i)] != whole[static_cast<size_t>(i)];
    }
    CHECK(split_diff == 0);
  }
}

TEST_SUITE("engine_forward / attention arithmetic") {
  TEST_CASE("rope rotates adjacent pairs by pos times theta_scale to the i") {
    const int hd = 64, pos = 37;
    const float theta_scale = std::pow(10000.0f, -2.0f / hd);
    std::vector<float> x(hd), want(hd);
    for (int i = 0; i < hd; ++i) x[i] = static_cast<float>(uniform01(5, 1, i) * 2 - 1);
    for (int i = 0; i < hd / 2; ++i) {  // in double, pairs (2i, 2i+1)
      const double th = pos * std::pow(10000.0, -2.0 * i / hd);
      want[2 * i] = static_cast<float>(x[2 * i] * std::cos(th) - x[2 * i + 1] * std::sin(th));
      want[2 * i + 1] = static_cast<float>(x[2 * i] * std::sin(th) + x[2 * i + 1] * std::cos(th));
    }
    cpu::rope(x.data(), hd, pos, theta_scale);
    // theta is formed in float as ggml does: a few float ulps of angle, times pos.
    for (int i = 0; i < hd; ++i) CHECK(x[i] == doctest::Approx(want[i]).epsilon(1e-4));
    {  // the shared-angles form gives the same bits
      std::vector<float> y(hd), cs(hd);
      for (int i = 0; i < hd; ++i) y[i] = static_cast<float>(uniform01(5, 1, i) * 2 - 1);
      cpu::rope_angles(hd, pos, theta_scale, cs.data());
      cpu::rope_apply(y.data(), hd, cs.data());
      CHECK(y == x);
    }
    std::vector<float> zero_pos = want;
    cpu::rope(zero_pos.data(), hd, 0, theta_scale);
    CHECK(zero_pos == want);  // position 0 is the identity
  }

  TEST_CASE("attend_fp16 is softmax attention in double up to the fp16 roundings") {
    // hd 64: the AVX-512 path; 48, 16, 8: the scalar path. The lengths cover partial, whole and
    // several 16-key blocks.
    for (const int hd : {64, 48, 16, 8}) {
      for (const int len : {1, 7, 16, 17, 40}) {
        std::vector<float> kf(static_cast<size_t>(len) * hd), vf(kf.size()), q(hd);
        for (size_t i = 0; i < kf.size(); ++i) {
          kf[i] = static_cast<float>(uniform01(6, 1, i) * 2 - 1);
          vf[i] = static_cast<float>(uniform01(6, 2, i) * 2 - 1);
        }
        for (int i = 0; i < hd; ++i) q[i] = static_cast<float>(uniform01(6, 3, i) * 4 - 2);
        // Keys in their 16-position blocks, values as rows.
        std::vector<std::uint16_t> k16(static_cast<size_t>(cpu::key_slots(len)) * hd),
            v16(vf.size());
        for (int j = 0; j < len; ++j) cpu::store_key_fp16(&kf[j * hd], hd, j, k16.data());
        cpu::to_fp16(vf.data(), static_cast<int>(vf.size()), v16.data());
        cpu::round_fp16_inplace(q.data(), hd);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        std::vector<float> out(hd);
        const cpu::AttentionQuery query{q.data(), len, out.data()};
        cpu::AlignedVector<float> p(cpu::attend_scratch_floats(&query, 1));
        REQUIRE(p.size() == static_cast<size_t>(cpu::key_slots(len)));
        cpu::attend_fp16(k16.data(), v16.data(), hd, scale, &query, 1, p.data());
        // Reference in double over the same fp16 K, V and q.
        std::vector<double> s(static_cast<size_t>(len));
        double mx = -1e300, z = 0;
        for (int j = 0; j < len; ++j) {
          double dot = 0;
          for (int i = 0; i < hd; ++i) dot += round_to_fp16(kf[j * hd + i]) * double{q[i]};
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        for (double& e : s) z += (e = std::exp(e - mx));
        INFO("hd ", hd, " len ", len);
        for (int j = 0; j < len; ++j) CHECK(p[j] == doctest::Approx(s[j] / z).epsilon(1e-3));
        for (int i = 0; i < hd; ++i) {
          double acc = 0;
          for (int j = 0; j < len; ++j) acc += s[j] / z * round_to_fp16(vf[j * hd + i]);
          // The weights are rounded to fp16 (2^-11 relative each) before they multiply V.
          CHECK(std::fabs(out[i] - acc) <= 2e-3);
        }
      }
    }
  }

  TEST_CASE("attend_fp16: a query's bits do not depend on the queries that share the call") {
    // What makes a prefill, a verify pass and single decode steps agree: the engine hands
    // attend_fp16 up to 6 queries of a KV head at once, of different lengths. Each must come out
    // exactly as it does alone, and exactly as the scalar path (which spells out the order of
    // operations) computes it.
    for (const int hd : {64, 128, 48}) {
      // Many queries and keys: an ulp of difference in a score survives the fp16 rounding of
      // its weight only now and then, so the check needs many weights to see a wrong order.
      const int longest = 300, nq = 48;
      std::vector<float> kf(static_cast<size_t>(longest) * hd), q(static_cast<size_t>(nq) * hd);
      for (size_t i = 0; i < kf.size(); ++i) kf[i] = static_cast<float>(uniform01(7, 1, i) * 2 - 1);
      for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(uniform01(7, 2, i) * 6 - 3);
      cpu::round_fp16_inplace(q.data(), static_cast<int>(q.size()));
      std::vector<std::uint16_t> k16(static_cast<size_t>(cpu::key_slots(longest)) * hd),
          v16(kf.size());
      for (int j = 0; j < longest; ++j) cpu::store_key_fp16(&kf[j * hd], hd, j, k16.data());
      std::vector<float> vf(kf.size());
      for (size_t i = 0; i < vf.size(); ++i) vf[i] = static_cast<float>(uniform01(7, 3, i) * 2 - 1);
      cpu::to_fp16(vf.data(), static_cast<int>(vf.size()), v16.data());
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      // Lengths as in a verify pass (consecutive), short and whole-block ones, and random ones.
      int lens[nq] = {40, 41, 42, 43, 44, 45, 1, 16, 17, 32, 300, 5, 33};
      for (int i = 13; i < nq; ++i) lens[i] = 1 + static_cast<int>(uniform01(7, 4, i) * 299.99);
      std::vector<float> together(static_cast<size_t>(nq) * hd), alone(together.size()),
          scalar(together.size());
      std::vector<cpu::AttentionQuery> queries(nq);
      for (int i = 0; i < nq; ++i) queries[i] = {&q[i * hd], lens[i], &together[i * hd]};
      cpu::AlignedVector<float> p(cpu::attend_scratch_floats(queries.data(), nq));
      cpu::attend_fp16(k16.data(), v16.data(), hd, scale, queries.data(), nq, p.data());
      for (int i = 0; i < nq; ++i) {
        const cpu::AttentionQuery one{&q[i * hd], lens[i], &alone[i * hd]};
        cpu::AlignedVector<float> p1(cpu::attend_scratch_floats(&one, 1));
        cpu::attend_fp16(k16.data(), v16.data(), hd, scale, &one, 1, p1.data());
      }
      for (int i = 0; i < nq; ++i) queries[i].out = &scalar[i * hd];
      cpu::attend_fp16_scalar(k16.data(), v16.data(), hd, scale, queries.data(), nq, p.data());
      INFO("hd ", hd);
      for (size_t i = 0; i < together.size(); ++i) {
        INFO("query ", i / hd, " dimension ", i % hd);
        REQUIRE(together[i] == alone[i]);
        REQUIRE(together[i] == scalar[i]);
      }
    }
  }

  TEST_CASE("attend_fp16's scores have the scalar path's bits, sum for sum") {
    // The check above sees a score's order of sums only through the fp16-rounded weights, which
    // hide most ulps (a score chain added as ((a0 + a1) + a2) + a3 passed it on AArch64). The
    // raw scores show every one.
    for (const int hd : {64, 128, 48, 16}) {
      const int longest = 70, nq = 7;
      std::vector<float> kf(static_cast<size_t>(longest) * hd), q(static_cast<size_t>(nq) * hd);
      for (size_t i = 0; i < kf.size(); ++i) kf[i] = static_cast<float>(uniform01(8, 1, i) * 2 - 1);
      for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(uniform01(8, 2, i) * 6 - 3);
      cpu::round_fp16_inplace(q.data(), static_cast<int>(q.size()));
      std::vector<std::uint16_t> k16(static_cast<size_t>(cpu::key_slots(longest)) * hd);
      for (int j = 0; j < longest; ++j) cpu::store_key_fp16(&kf[j * hd], hd, j, k16.data());
      const int lens[nq] = {70, 1, 16, 17, 33, 5, 64};
      std::vector<float> out(static_cast<size_t>(nq) * hd);
      std::vector<cpu::AttentionQuery> queries(nq);
      for (int i = 0; i < nq; ++i) queries[i] = {&q[i * hd], lens[i], &out[i * hd]};
      cpu::AlignedVector<float> vec(cpu::attend_scratch_floats(queries.data(), nq)),
          ref(vec.size());
      cpu::attend_scores_fp16(k16.data(), hd, queries.data(), nq, vec.data(), true);
      cpu::attend_scores_fp16(k16.data(), hd, queries.data(), nq, ref.data(), false);
      const size_t stride = static_cast<size_t>(cpu::key_slots(longest));
      int differ = 0;
      for (int i = 0; i < nq; ++i) {
        for (int j = 0; j < lens[i]; ++j) {
          const size_t at = i * stride + j;
          if (vec[at] != ref[at] && differ++ == 0) {
            INFO("hd ", hd, ": query ", i, " key ", j, ": ", vec[at], " against ", ref[at]);
            CHECK(vec[at] == ref[at]);
          }
          // The scores themselves, in double: a path that computed something else entirely
          // would agree with itself.
          double want = 0.0;
          for (int d = 0; d < hd; ++d) {
            want += static_cast<double>(q[i * hd + d]) * round_to_fp16(kf[j * hd + d]);
          }
          if (std::fabs(ref[at] - want) > 1e-4 * (1.0 + std::fabs(want)) && differ++ == 0) {
            INFO("hd ", hd, ": query ", i, " key ", j, ": ", ref[at], " against ", want);
            CHECK(ref[at] == doctest::Approx(want));
          }
        }
      }
      INFO("hd ", hd, ": ", differ, " scores differ");
      CHECK(differ == 0);
    }
  }
}
