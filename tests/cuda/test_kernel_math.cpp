// CudaLlama's kernel arithmetic (mini_engine/targets/cuda/kernel_math.h), run on the host over
// whole tensors exactly as the kernels run it, and compared with plain double-precision
// references written from the formulas. No GPU needed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "mini_engine/sampling/rng.h"
#include "mini_engine/targets/cuda/kernel_math.h"

using namespace speclab;

namespace {

std::vector<float> random_vec(size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = scale * static_cast<float>(2.0 * uniform01(seed, 0, i) - 1.0);
  }
  return v;
}

// |got - want| <= atol + rtol * |want| for every element; prints the first few mismatches.
bool all_close(const std::vector<float>& got, const std::vector<double>& want, double rtol,
               double atol, const char* what) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > atol + rtol * std::fabs(want[i])) {
      if (bad < 5) {
        std::printf("%s: mismatch at %zu: got %.7g want %.7g\n", what, i, got[i], want[i]);
      }
      ++bad;
    }
  }
  if (bad) std::printf("%s: %d of %zu elements out of tolerance\n", what, bad, want.size());
  return bad == 0;
}

// A verify block of 6 queries after 20 cached tokens, with SmolLM2's head shapes (9 query heads,
// 3 KV heads of 64), over random keys, values and queries in layer 1 of a 2-layer cache.
struct AttentionCase {
  static constexpr int n_heads = 9, n_kv = 3, head_dim = 64, max_len = 40, layers = 2, layer = 1;
  static constexpr int past = 20, block = 6, total = past + block;
  std::vector<float> cache_k, cache_v, q;  // q: (block, n_heads, head_dim)

  explicit AttentionCase(std::uint64_t seed)
      : cache_k(random_vec(static_cast<size_t>(layers) * n_kv * max_len * head_dim, seed)),
        cache_v(random_vec(cache_k.size(), seed + 1)),
        q(random_vec(static_cast<size_t>(block) * n_heads * head_dim, seed + 2)) {}

  // What the kernels compute, through kernel_math.h: the masked score of key j for query t of
  // head h, and element d of value j as head h reads it.
  float score(int t, int h, int j) const {
    const float* qv = &q[(t * n_heads + h) * head_dim];
    const int kvh = kmath::kv_head_of(h, n_heads, n_kv);
    float dot = 0;
    for (int d = 0; d < head_dim; ++d) {
      dot += qv[d] * cache_k[kmath::kv_index(layer, kvh, j, d, n_kv, max_len, head_dim)];
    }
    return kmath::attention_score(dot, 1.0f / std::sqrt(static_cast<float>(head_dim)), j, past + t);
  }
  float value(int h, int j, int d) const {
    return cache_v[kmath::kv_index(layer, kmath::kv_head_of(h, n_heads, n_kv), j, d, n_kv, max_len,
                                   head_dim)];
  }

  // The reference, in double precision: explicit GQA group, explicit layout, keys 0..past+t.
  std::vector<double> reference() const {
    std::vector<double> out(q.size());
    for (int t = 0; t < block; ++t) {
      const int qpos = past + t;
      for (int h = 0; h < n_heads; ++h) {
        const float* qv = &q[(t * n_heads + h) * head_dim];
        const int g = h / (n_heads / n_kv);
        auto K = [&](int j, int d) {
          return static_cast<double>(cache_k[(((layer * n_kv) + g) * max_len + j) * head_dim + d]);
        };
        auto V = [&](int j, int d) {
          return static_cast<double>(cache_v[(((layer * n_kv) + g) * max_len + j) * head_dim + d]);
        };
        std::vector<double> s(qpos + 1);
        double smax = -1e300;
        for (int j = 0; j <= qpos; ++j) {
          double dot = 0;
          for (int d = 0; d < head_dim; ++d) dot += qv[d] * K(j, d);
          s[j] = dot / std::sqrt(static_cast<double>(head_dim));
          smax = std::max(smax, s[j]);
        }
        double z = 0;
        for (double& v : s) z += (v = std::exp(v - smax));
        for (int d = 0; d < head_dim; ++d) {
          double acc = 0;
          for (int j = 0; j <= qpos; ++j) acc += s[j] / z * V(j, d);
          out[(t * n_heads + h) * head_dim + d] = acc;
        }
      }
    }
    return out;
  }
};

}  // namespace

TEST_SUITE("cuda-host / kernel arithmetic") {
  TEST_CASE("RMSNorm rows match the formula within 1e-5 relative") {
    const int rows = 5, n = 576;
    const auto x = random_vec(rows * n, 1, 3.0f);
    const auto w = random_vec(n, 2);
    std::vector<float> got(x.size());
    std::vector<double> want(x.size());
    const float eps = 1e-5f;
    for (int r = 0; r < rows; ++r) {
      float sum_sq = 0;  // the kernel's block reduction
      for (int i = 0; i < n; ++i) sum_sq += x[r * n + i] * x[r * n + i];
      const float inv = kmath::rms_inverse(sum_sq, n, eps);
      for (int i = 0; i < n; ++i) got[r * n + i] = kmath::rmsnorm_element(x[r * n + i], w[i], inv);
      double ss = 0;
      for (int i = 0; i < n; ++i) ss += static_cast<double>(x[r * n + i]) * x[r * n + i];
      const double ref_inv = 1.0 / std::sqrt(ss / n + eps);
      for (int i = 0; i < n; ++i) want[r * n + i] = x[r * n + i] * ref_inv * w[i];
    }
    CHECK(all_close(got, want, 1e-5, 1e-6, "rmsnorm"));
  }

  TEST_CASE("RoPE rotates adjacent lane pairs (2i, 2i+1) by pos * base^(-2i/d)") {
    const int heads = 3, head_dim = 64, positions = 7;
    const float base = 100000.0f;
    const auto x = random_vec(positions * heads * head_dim, 3);
    std::vector<float> got(x.size());
    std::vector<double> want(x.size());
    for (int p = 0; p < positions; ++p) {
      const int pos = 100 + 37 * p;  // absolute positions, as in a verify block
      for (int h = 0; h < heads; ++h) {
        const float* in = &x[(p * heads + h) * head_dim];
        float* out = &got[(p * heads + h) * head_dim];
        double* ref = &want[(p * heads + h) * head_dim];
        for (int i = 0; i < head_dim / 2; ++i) {  // the kernel: one thread per pair
          const int l0 = kmath::rope_lane0(i, head_dim), l1 = kmath::rope_lane1(i, head_dim);
          kmath::rope_rotate(in[l0], in[l1], kmath::rope_angle(pos, i, head_dim, base), &out[l0],
                             &out[l1]);
          const double theta = pos * std::pow(static_cast<double>(base), -2.0 * i / head_dim);
          ref[2 * i] = in[2 * i] * std::cos(theta) - in[2 * i + 1] * std::sin(theta);
          ref[2 * i + 1] = in[2 * i] * std::sin(theta) + in[2 * i + 1] * std::cos(theta);
        }
      }
    }
    // float angles at positions ~300 lose ~1e-5 relative; 1e-4 absolute covers it.
    CHECK(all_close(got, want, 1e-4, 1e-4, "rope"));
  }

  TEST_CASE("SwiGLU matches silu(gate) * up") {
    const auto g = random_vec(1536, 4, 6.0f), u = random_vec(1536, 5, 2.0f);
    std::vector<float> got(g.size());
    std::vector<double> want(g.size());
    for (size_t i = 0; i < g.size(); ++i) {
      got[i] = kmath::swiglu(g[i], u[i]);
      want[i] = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
    }
    CHECK(all_close(got, want, 1e-5, 1e-6, "swiglu"));
  }

  TEST_CASE("attention with GQA, the KV-cache layout and the causal mask inside the block") {
    const AttentionCase c(6);
    std::vector<float> got(c.q.size());
    for (int t = 0; t < c.block; ++t) {
      for (int h = 0; h < c.n_heads; ++h) {
        // The kernel: scores, block max, sum, weighted sum of V.
        std::vector<float> score(c.total);
        float mx = -INFINITY;
        for (int j = 0; j < c.total; ++j) {
          score[j] = c.score(t, h, j);
          mx = std::fmax(mx, score[j]);
        }
        float sum = 0;
        for (int j = 0; j < c.total; ++j)
          sum += score[j] == -INFINITY ? 0.0f : std::exp(score[j] - mx);
        for (int d = 0; d < c.head_dim; ++d) {
          float acc = 0;
          for (int j = 0; j < c.total; ++j) {
            acc += kmath::softmax_weight(score[j], mx, 1.0f / sum) * c.value(h, j, d);
          }
          got[(t * c.n_heads + h) * c.head_dim + d] = acc;
        }
      }
    }
    CHECK(all_close(got, c.reference(), 1e-4, 1e-5, "attention"));
  }

  TEST_CASE("attention split into chunks of keys and merged equals one pass") {
    // 26 keys in chunks of 8: the last chunk is short, and for the first query (position 20)
    // the chunk of keys 24..25 is wholly masked.
    const AttentionCase c(16);
    const int chunk = 8, n_chunks = (c.total + chunk - 1) / chunk;
    std::vector<float> got(c.q.size());
    for (int t = 0; t < c.block; ++t) {
      for (int h = 0; h < c.n_heads; ++h) {
        // Each chunk on its own, as one block of the chunk kernel does it.
        std::vector<float> m(n_chunks, -INFINITY), l(n_chunks, 0.0f);
        std::vector<std::vector<float>> acc(n_chunks, std::vector<float>(c.head_dim, 0.0f));
        for (int k = 0; k < n_chunks; ++k) {
          const int first = k * chunk, count = std::min(chunk, c.total - first);
          for (int j = first; j < first + count; ++j) m[k] = std::fmax(m[k], c.score(t, h, j));
          for (int j = first; j < first + count; ++j) {
            const float w = kmath::softmax_weight(c.score(t, h, j), m[k], 1.0f);
            l[k] += w;
            for (int d = 0; d < c.head_dim; ++d) acc[k][d] += w * c.value(h, j, d);
          }
        }
        // The merge kernel.
        float M = -INFINITY, L = 0.0f;
        for (int k = 0; k < n_chunks; ++k) M = std::fmax(M, m[k]);
        for (int k = 0; k < n_chunks; ++k) L += l[k] * kmath::chunk_rescale(m[k], M);
        for (int d = 0; d < c.head_dim; ++d) {
          float o = 0.0f;
          for (int k = 0; k < n_chunks; ++k) o += acc[k][d] * kmath::chunk_rescale(m[k], M);
          got[(t * c.n_heads + h) * c.head_dim + d] = o / L;
        }
      }
    }
    CHECK(all_close(got, c.reference(), 1e-4, 1e-5, "chunked attention"));
  }

  TEST_CASE("the mask hides exactly the keys after the query, nothing else") {
    CHECK(kmath::key_visible(5, 5));
    CHECK(kmath::key_visible(0, 5));
    CHECK_FALSE(kmath::key_visible(6, 5));
    CHECK(kmath::attention_score(2.0f, 0.5f, 6, 5) == -INFINITY);
    CHECK(kmath::softmax_weight(-INFINITY, 1.0f, 1.0f) == 0.0f);
    CHECK(kmath::kv_head_of(8, 9, 3) == 2);
    CHECK(kmath::kv_head_of(2, 9, 3) == 0);
  }
}
