// The row-major -> cuBLAS mapping (mini_engine/targets/cuda/gemm_layout.h), checked on the host.
// reference_cublas_gemm implements cuBLAS's column-major semantics with Eigen, including its
// argument checks, so a wrong transpose or leading dimension fails here as it would on a GPU.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "mini_engine/sampling/rng.h"
#include "mini_engine/targets/cuda/gemm_layout.h"
#include "mini_engine/targets/cuda/kernel_math.h"

using namespace speclab;

namespace {

using ColMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using Strided = Eigen::Map<const ColMajor, 0, Eigen::OuterStride<>>;

// C = op(A) * op(B), column-major, with cuBLAS's rules for leading dimensions.
void reference_cublas_gemm(const CublasGemmArgs& g, const float* A, size_t a_size, const float* B,
                           size_t b_size, float* C, size_t c_size) {
  const int a_rows = g.transa ? g.k : g.m, a_cols = g.transa ? g.m : g.k;
  const int b_rows = g.transb ? g.n : g.k, b_cols = g.transb ? g.k : g.n;
  if (g.lda < std::max(1, a_rows) || g.ldb < std::max(1, b_rows) || g.ldc < std::max(1, g.m)) {
    throw std::invalid_argument("CUBLAS_STATUS_INVALID_VALUE: leading dimension too small");
  }
  if (static_cast<size_t>(g.lda) * (a_cols - 1) + a_rows > a_size ||
      static_cast<size_t>(g.ldb) * (b_cols - 1) + b_rows > b_size ||
      static_cast<size_t>(g.ldc) * (g.n - 1) + g.m > c_size) {
    throw std::out_of_range("the GEMM would read or write outside its buffers");
  }
  const Strided a(A, a_rows, a_cols, Eigen::OuterStride<>(g.lda));
  const Strided b(B, b_rows, b_cols, Eigen::OuterStride<>(g.ldb));
  ColMajor opa = g.transa ? ColMajor(a.transpose()) : ColMajor(a);
  ColMajor opb = g.transb ? ColMajor(b.transpose()) : ColMajor(b);
  const ColMajor c = opa * opb;
  for (int j = 0; j < g.n; ++j) {
    for (int i = 0; i < g.m; ++i) C[static_cast<size_t>(j) * g.ldc + i] = c(i, j);
  }
}

std::vector<float> random_vec(size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(uniform01(seed, 1, i) - 0.5);
  return v;
}

// Y = X W^T through the cuBLAS mapping and the reference GEMM, all row-major.
std::vector<float> xwt(const std::vector<float>& X, const std::vector<float>& W, int tokens, int in,
                       int out) {
  std::vector<float> Y(static_cast<size_t>(tokens) * out, 0.0f);
  const CublasGemmArgs g = rowmajor_xwt(tokens, in, out);
  const auto& A = g.a_is_weights ? W : X;
  const auto& B = g.a_is_weights ? X : W;
  reference_cublas_gemm(g, A.data(), A.size(), B.data(), B.size(), Y.data(), Y.size());
  return Y;
}

// The rows of each matrix, one after the other: the fused weight CudaLlama uploads.
std::vector<float> stack_rows(std::initializer_list<const std::vector<float>*> parts) {
  std::vector<float> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

}  // namespace

TEST_SUITE("cuda-host / GEMM layout") {
  TEST_CASE("Y = X W^T through the cuBLAS mapping equals the row-major product") {
    // Shapes of SmolLM2's projections with a verify block of 1..9 tokens; 576 -> 192 has
    // out != in, so a swapped transpose or leading dimension cannot cancel out.
    for (int tokens : {1, 6, 9}) {
      for (auto [in, out] : {std::pair{576, 192}, std::pair{576, 1536}, std::pair{1536, 576}}) {
        const auto X = random_vec(static_cast<size_t>(tokens) * in, 10 + tokens);
        const auto W = random_vec(static_cast<size_t>(out) * in, 20 + out);
        std::vector<float> Y(static_cast<size_t>(tokens) * out, 0.0f);
        const CublasGemmArgs g = rowmajor_xwt(tokens, in, out);
        INFO("tokens=", tokens, " in=", in, " out=", out);
        const float* A = g.a_is_weights ? W.data() : X.data();
        const float* B = g.a_is_weights ? X.data() : W.data();
        REQUIRE_NOTHROW(reference_cublas_gemm(g, A, g.a_is_weights ? W.size() : X.size(), B,
                                              g.a_is_weights ? X.size() : W.size(), Y.data(),
                                              Y.size()));
        using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        const Eigen::Map<const RowMajor> x(X.data(), tokens, in), w(W.data(), out, in);
        const RowMajor want = x * w.transpose();
        int bad = 0;
        for (int t = 0; t < tokens; ++t) {
          for (int o = 0; o < out; ++o) {
            const float got = Y[static_cast<size_t>(t) * out + o];
            if (std::abs(got - want(t, o)) > 1e-4f + 1e-4f * std::abs(want(t, o))) {
              if (bad++ < 5) std::printf("Y[%d][%d] = %g, want %g\n", t, o, got, want(t, o));
            }
          }
        }
        CHECK(bad == 0);
      }
    }
  }

  TEST_CASE("the reference rejects a leading dimension cuBLAS would reject") {
    CublasGemmArgs g = rowmajor_xwt(2, 8, 4);
    g.lda = 3;
    std::vector<float> a(64), b(64), c(64);
    CHECK_THROWS_AS(
        reference_cublas_gemm(g, a.data(), a.size(), b.data(), b.size(), c.data(), c.size()),
        std::invalid_argument);
  }

  TEST_CASE("stacked Q|K|V and Gate|Up weights put each projection at the kernels' offsets") {
    // SmolLM2's shapes: 9 query heads and 3 KV heads of 64, dim 576, n_ff 1536; 5 tokens.
    const int tokens = 5, dim = 576, heads = 9, kv = 3, hd = 64, ff = 1536;
    const auto X = random_vec(static_cast<size_t>(tokens) * dim, 1);
    const auto Wq = random_vec(static_cast<size_t>(heads) * hd * dim, 2);
    const auto Wk = random_vec(static_cast<size_t>(kv) * hd * dim, 3);
    const auto Wv = random_vec(static_cast<size_t>(kv) * hd * dim, 4);
    const kmath::QkvLayout l = kmath::qkv_layout(heads, kv, hd);
    REQUIRE(l.row == (heads + 2 * kv) * hd);
    const auto fused = xwt(X, stack_rows({&Wq, &Wk, &Wv}), tokens, dim, l.row);
    const auto q = xwt(X, Wq, tokens, dim, heads * hd), k = xwt(X, Wk, tokens, dim, kv * hd),
               v = xwt(X, Wv, tokens, dim, kv * hd);
    int bad = 0;
    for (int t = 0; t < tokens; ++t) {
      const float* row = &fused[static_cast<size_t>(t) * l.row];
      for (int i = 0; i < heads * hd; ++i)
        bad += row[l.q + i] != q[static_cast<size_t>(t) * heads * hd + i];
      for (int i = 0; i < kv * hd; ++i) {
        bad += row[l.k + i] != k[static_cast<size_t>(t) * kv * hd + i];
        bad += row[l.v + i] != v[static_cast<size_t>(t) * kv * hd + i];
      }
    }
    CHECK(bad == 0);

    const auto Wg = random_vec(static_cast<size_t>(ff) * dim, 5);
    const auto Wu = random_vec(static_cast<size_t>(ff) * dim, 6);
    const auto gu = xwt(X, stack_rows({&Wg, &Wu}), tokens, dim, 2 * ff);
    const auto g = xwt(X, Wg, tokens, dim, ff), u = xwt(X, Wu, tokens, dim, ff);
    bad = 0;
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(tokens) * ff; ++i) {
      bad += gu[static_cast<size_t>(kmath::gate_index(i, ff))] != g[static_cast<size_t>(i)];
      bad += gu[static_cast<size_t>(kmath::up_index(i, ff))] != u[static_cast<size_t>(i)];
    }
    CHECK(bad == 0);
  }
}
