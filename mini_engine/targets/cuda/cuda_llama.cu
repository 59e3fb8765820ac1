// CudaLlama: weights dequantized once to fp16 on upload, cuBLAS for every projection, and small
// kernels whose arithmetic lives in kernel_math.h (tested on the host).
//
// Why fp16 weights rather than dequantize-in-kernel: the GEMMs then go to cuBLAS (tensor cores,
// no custom GEMM to get right without a GPU to test on), and fp16 halves the bytes per token
// against fp32. SmolLM2-135M in fp16 is about 270 MB, small for any CUDA GPU. The cost is
// rounding each dequantized Q4_1/Q8_0 weight to fp16 (relative error <= 2^-11), far below the
// quantization error already in the file.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini_engine/model/gguf.h"
#include "mini_engine/model/llama_weights.h"
#include "mini_engine/targets/cuda/cuda_llama.h"
#include "mini_engine/targets/cuda/gemm_layout.h"
#include "mini_engine/targets/cuda/kernel_math.h"

#define CUDA_CHECK(expr)                                                                       \
  do {                                                                                         \
    const cudaError_t err_ = (expr);                                                           \
    if (err_ != cudaSuccess) {                                                                 \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + \
                               #expr + ": " + cudaGetErrorString(err_));                       \
    }                                                                                          \
  } while (0)

#define CUBLAS_CHECK(expr)                                                                     \
  do {                                                                                         \
    const cublasStatus_t st_ = (expr);                                                         \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                        \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + \
                               #expr + ": " + cublasGetStatusString(st_));                     \
    }                                                                                          \
  } while (0)

namespace speclab {
namespace {

// Owns one device allocation. Move-only.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n > 0) CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), n * sizeof(T)));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(n_, o.n_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  T* get() const { return ptr_; }
  size_t size() const { return n_; }

 private:
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

constexpr int kThreads = 256;
int blocks_for(std::int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// ---- kernels: thin launchers around kernel_math.h ----

template <typename Block, float (*Dequant)(const Block&, int)>
__global__ void dequant_blocks_kernel(const Block* blocks, __half* out, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    out[i] = __float2half(Dequant(blocks[i / kQuantBlock], static_cast<int>(i % kQuantBlock)));
}

__global__ void f32_to_half_kernel(const float* in, __half* out, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = __float2half(in[i]);
}

__global__ void embed_kernel(const __half* table, const Token* tokens, float* x, int dim) {
  const int t = blockIdx.x;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    x[t * dim + i] = __half2float(table[static_cast<std::int64_t>(tokens[t]) * dim + i]);
  }
}

// One block per row: y = rmsnorm(x) * w, written as fp16 for the next GEMM.
__global__ void rmsnorm_kernel(const float* x, const float* w, __half* y, int dim, float eps) {
  __shared__ float red[kThreads];
  const float* row = x + static_cast<std::int64_t>(blockIdx.x) * dim;
  float s = 0.0f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) s += row[i] * row[i];
  red[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) red[threadIdx.x] += red[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv = kmath::rms_inverse(red[0], dim, eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    y[static_cast<std::int64_t>(blockIdx.x) * dim + i] =
        __float2half(kmath::rmsnorm_element(row[i], w[i], inv));
  }
}

// RoPE on the q heads and k heads of token blockIdx.x, in place; one thread per pair.
__global__ void rope_kernel(float* q, float* k, int pos0, int n_heads, int n_kv, int head_dim,
                            int rot_dim, float freq_base) {
  const int t = blockIdx.x;
  const int pairs = rot_dim / 2;
  const int total = (n_heads + n_kv) * pairs;
  for (int idx = threadIdx.x; idx < total; idx += blockDim.x) {
    const int head = idx / pairs, pair = idx % pairs;
    float* v = head < n_heads
                   ? q + (static_cast<std::int64_t>(t) * n_heads + head) * head_dim
                   : k + (static_cast<std::int64_t>(t) * n_kv + head - n_heads) * head_dim;
    const int l0 = kmath::rope_lane0(pair, rot_dim), l1 = kmath::rope_lane1(pair, rot_dim);
    float y0, y1;
    kmath::rope_rotate(v[l0], v[l1], kmath::rope_angle(pos0 + t, pair, rot_dim, freq_base), &y0,
                       &y1);
    v[l0] = y0;
    v[l1] = y1;
  }
}

// Copies the block's keys and values into the cache at positions pos0..pos0+T-1.
__global__ void store_kv_kernel(const float* k, const float* v, float* kc, float* vc, int layer,
                                int pos0, int n_kv, int head_dim, int max_len) {
  const int t = blockIdx.x;
  for (int idx = threadIdx.x; idx < n_kv * head_dim; idx += blockDim.x) {
    const int h = idx / head_dim, d = idx % head_dim;
    const std::size_t at = kmath::kv_index(layer, h, pos0 + t, d, n_kv, max_len, head_dim);
    kc[at] = k[static_cast<std::int64_t>(t) * n_kv * head_dim + idx];
    vc[at] = v[static_cast<std::int64_t>(t) * n_kv * head_dim + idx];
  }
}

// One block per (head, query): scores over every cached key, masked causally, softmax, and the
// weighted sum of values, written as fp16 for the output projection.
__global__ void attention_kernel(const float* q, const float* kc, const float* vc, __half* out,
                                 int layer, int pos0, int n_keys, int n_heads, int n_kv,
                                 int head_dim, int max_len, float scale) {
  extern __shared__ float scores[];  // n_keys floats
  __shared__ float red[kThreads];
  const int h = blockIdx.x, t = blockIdx.y;
  const int qpos = pos0 + t;
  const int kvh = kmath::kv_head_of(h, n_heads, n_kv);
  const float* qv = q + (static_cast<std::int64_t>(t) * n_heads + h) * head_dim;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) {
    float dot = 0.0f;
    for (int d = 0; d < head_dim; ++d) {
      dot += qv[d] * kc[kmath::kv_index(layer, kvh, j, d, n_kv, max_len, head_dim)];
    }
    scores[j] = kmath::attention_score(dot, scale, j, qpos);
  }
  __syncthreads();
  float m = -INFINITY;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) m = fmaxf(m, scores[j]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + stride]);
    __syncthreads();
  }
  const float row_max = red[0];
  __syncthreads();
  float s = 0.0f;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) {
    s += scores[j] == -INFINITY ? 0.0f : expf(scores[j] - row_max);
  }
  red[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) red[threadIdx.x] += red[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv_sum = 1.0f / red[0];
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < n_keys; ++j) {
      acc += kmath::softmax_weight(scores[j], row_max, inv_sum) *
             vc[kmath::kv_index(layer, kvh, j, d, n_kv, max_len, head_dim)];
    }
    out[(static_cast<std::int64_t>(t) * n_heads + h) * head_dim + d] = __float2half(acc);
  }
}

__global__ void add_kernel(float* x, const float* y, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += y[i];
}

__global__ void swiglu_kernel(const float* gate, const float* up, __half* out, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = __float2half(kmath::swiglu(gate[i], up[i]));
}

struct Layer {
  DeviceBuffer<float> attn_norm, ffn_norm;                    // (dim)
  DeviceBuffer<__half> wq, wk, wv, wo, w_gate, w_up, w_down;  // (out, in), row-major
};

class CudaLlama final : public Target {
 public:
  CudaLlama(const std::string& path, const CudaLlamaOptions& options);
  ~CudaLlama() override {
    if (cublas_) cublasDestroy(cublas_);
  }

  std::string name() const override { return "cuda-llama(" + path_ + ")"; }
  int vocab_size() const override { return vocab_; }
  int max_length() const override { return max_len_; }
  std::span<const Token> tokens() const override { return tokens_; }
  Logits extend(std::span<const Token> tokens) override;
  void truncate(int new_len) override;

 private:
  // Dequantizes a weight matrix to fp16 on the device; keeps its (rows, cols) row-major layout.
  DeviceBuffer<__half> upload_matrix(const QuantMatrix& m);
  DeviceBuffer<float> upload_vector(const float* host, int n);
  // y (tokens x out, fp32) = x (tokens x in, fp16) * w (out x in, fp16)^T
  void gemm(const __half* x, const __half* w, float* y, int tokens, int in, int out);

  std::string path_;
  int dim_ = 0, n_layers_ = 0, n_heads_ = 0, n_kv_ = 0, head_dim_ = 0, ffn_ = 0, vocab_ = 0;
  int rot_dim_ = 0, max_len_ = 0;
  float eps_ = 1e-5f, freq_base_ = 10000.0f;
  std::vector<Layer> layers_;
  DeviceBuffer<__half> embed_;   // (vocab, dim); also the output projection when tied
  DeviceBuffer<__half> output_;  // (vocab, dim), empty when tied
  DeviceBuffer<float> out_norm_;
  DeviceBuffer<float> k_cache_, v_cache_;  // [layer][kv_head][pos][head_dim]
  cublasHandle_t cublas_ = nullptr;
  std::vector<Token> tokens_;
};

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

CudaLlama::CudaLlama(const std::string& path, const CudaLlamaOptions& options)
    : path_(base_name(path)) {
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) throw std::runtime_error("--device cuda: " + why);
  CUDA_CHECK(cudaSetDevice(options.device));
  const GgufFile f = GgufFile::open(path);
  const LlamaWeights w = load_llama_weights(f);  // the same checks and views as CpuLlama
  const LlamaHParams& hp = w.hp;
  dim_ = hp.n_embd;
  n_layers_ = hp.n_layer;
  n_heads_ = hp.n_head;
  n_kv_ = hp.n_head_kv;
  head_dim_ = hp.head_dim;
  ffn_ = hp.n_ff;
  vocab_ = hp.n_vocab;
  eps_ = hp.rms_eps;
  freq_base_ = hp.rope_base;
  rot_dim_ = hp.head_dim;
  max_len_ = options.max_length > 0 ? std::min(options.max_length, hp.n_ctx_train) : hp.n_ctx_train;
  if (static_cast<size_t>(max_len_) * sizeof(float) > 48 * 1024 - kThreads * sizeof(float)) {
    throw std::runtime_error("CudaLlama: max_length " + std::to_string(max_len_) +
                             " needs more shared memory for attention scores than 48 KiB; "
                             "pass a smaller max_length");
  }

  CUBLAS_CHECK(cublasCreate(&cublas_));
  embed_ = upload_matrix(w.token_embd);
  if (!w.tied_output) output_ = upload_matrix(w.output);
  out_norm_ = upload_vector(w.output_norm, dim_);
  for (const LlamaLayer& src : w.layers) {
    Layer L;
    L.attn_norm = upload_vector(src.attn_norm, dim_);
    L.ffn_norm = upload_vector(src.ffn_norm, dim_);
    L.wq = upload_matrix(src.wq);
    L.wk = upload_matrix(src.wk);
    L.wv = upload_matrix(src.wv);
    L.wo = upload_matrix(src.wo);
    L.w_gate = upload_matrix(src.w_gate);
    L.w_up = upload_matrix(src.w_up);
    L.w_down = upload_matrix(src.w_down);
    layers_.push_back(std::move(L));
  }
  const size_t cache = static_cast<size_t>(n_layers_) * n_kv_ * max_len_ * head_dim_;
  k_cache_ = DeviceBuffer<float>(cache);
  v_cache_ = DeviceBuffer<float>(cache);
}

DeviceBuffer<__half> CudaLlama::upload_matrix(const QuantMatrix& m) {
  const std::int64_t n = static_cast<std::int64_t>(m.rows) * m.cols;
  const std::uint64_t bytes = m.row_bytes * static_cast<std::uint64_t>(m.rows);
  DeviceBuffer<__half> out(static_cast<size_t>(n));
  DeviceBuffer<std::uint8_t> raw(bytes);
  CUDA_CHECK(cudaMemcpy(raw.get(), m.data, bytes, cudaMemcpyHostToDevice));
  switch (m.type) {
    case GgmlType::Q4_0:
      dequant_blocks_kernel<BlockQ4_0, dequant_q4_0><<<blocks_for(n), kThreads>>>(
          reinterpret_cast<const BlockQ4_0*>(raw.get()), out.get(), n);
      break;
    case GgmlType::Q4_1:
      dequant_blocks_kernel<BlockQ4_1, dequant_q4_1><<<blocks_for(n), kThreads>>>(
          reinterpret_cast<const BlockQ4_1*>(raw.get()), out.get(), n);
      break;
    case GgmlType::Q8_0:
      dequant_blocks_kernel<BlockQ8_0, dequant_q8_0><<<blocks_for(n), kThreads>>>(
          reinterpret_cast<const BlockQ8_0*>(raw.get()), out.get(), n);
      break;
    case GgmlType::F32:
      f32_to_half_kernel<<<blocks_for(n), kThreads>>>(reinterpret_cast<const float*>(raw.get()),
                                                      out.get(), n);
      break;
    case GgmlType::F16:
      CUDA_CHECK(cudaMemcpy(out.get(), raw.get(), bytes, cudaMemcpyDeviceToDevice));
      break;
    case GgmlType::BF16: {
      std::vector<float> host(static_cast<size_t>(n));
      dequantize_row(m.type, m.data, host.data(), n);
      DeviceBuffer<float> tmp(host.size());
      CUDA_CHECK(
          cudaMemcpy(tmp.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
      f32_to_half_kernel<<<blocks_for(n), kThreads>>>(tmp.get(), out.get(), n);
      CUDA_CHECK(cudaDeviceSynchronize());
      break;
    }
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  return out;
}

DeviceBuffer<float> CudaLlama::upload_vector(const float* host, int n) {
  DeviceBuffer<float> out(static_cast<size_t>(n));
  CUDA_CHECK(
      cudaMemcpy(out.get(), host, static_cast<size_t>(n) * sizeof(float), cudaMemcpyHostToDevice));
  return out;
}

void CudaLlama::gemm(const __half* x, const __half* w, float* y, int tokens, int in, int out) {
  const CublasGemmArgs g = rowmajor_xwt(tokens, in, out);
  const float alpha = 1.0f, beta = 0.0f;
  const __half* a = g.a_is_weights ? w : x;
  const __half* b = g.a_is_weights ? x : w;
  CUBLAS_CHECK(cublasGemmEx(cublas_, g.transa ? CUBLAS_OP_T : CUBLAS_OP_N,
                            g.transb ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &alpha, a,
                            CUDA_R_16F, g.lda, b, CUDA_R_16F, g.ldb, &beta, y, CUDA_R_32F, g.ldc,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

Logits CudaLlama::extend(std::span<const Token> tokens) {
  if (tokens.empty()) throw std::invalid_argument("CudaLlama::extend: no tokens to append");
  for (Token t : tokens) {
    if (t < 0 || t >= vocab_) {
      throw std::invalid_argument("CudaLlama::extend: token id " + std::to_string(t) +
                                  " is outside the vocabulary [0, " + std::to_string(vocab_) + ")");
    }
  }
  if (tokens_.size() + tokens.size() > static_cast<size_t>(max_len_)) {
    throw ContextOverflow("CudaLlama: appending " + std::to_string(tokens.size()) + " tokens to " +
                          std::to_string(tokens_.size()) + " would exceed max_length " +
                          std::to_string(max_len_));
  }
  const int T = static_cast<int>(tokens.size());
  const int pos0 = static_cast<int>(tokens_.size());
  const int kv_dim = n_kv_ * head_dim_;
  DeviceBuffer<Token> ids(tokens.size());
  CUDA_CHECK(
      cudaMemcpy(ids.get(), tokens.data(), tokens.size() * sizeof(Token), cudaMemcpyHostToDevice));
  DeviceBuffer<float> x(static_cast<size_t>(T) * dim_), tmp(static_cast<size_t>(T) * dim_);
  DeviceBuffer<__half> h(static_cast<size_t>(T) * std::max(dim_, ffn_));
  DeviceBuffer<float> q(static_cast<size_t>(T) * dim_), k(static_cast<size_t>(T) * kv_dim),
      v(static_cast<size_t>(T) * kv_dim);
  DeviceBuffer<float> gate(static_cast<size_t>(T) * ffn_), up(static_cast<size_t>(T) * ffn_);
  embed_kernel<<<T, kThreads>>>(embed_.get(), ids.get(), x.get(), dim_);
  const float scale = 1.0f / sqrtf(static_cast<float>(head_dim_));
  const int n_keys = pos0 + T;
  const std::int64_t td = static_cast<std::int64_t>(T) * dim_;
  const std::int64_t tf = static_cast<std::int64_t>(T) * ffn_;
  for (int l = 0; l < n_layers_; ++l) {
    const Layer& L = layers_[l];
    rmsnorm_kernel<<<T, kThreads>>>(x.get(), L.attn_norm.get(), h.get(), dim_, eps_);
    gemm(h.get(), L.wq.get(), q.get(), T, dim_, dim_);
    gemm(h.get(), L.wk.get(), k.get(), T, dim_, kv_dim);
    gemm(h.get(), L.wv.get(), v.get(), T, dim_, kv_dim);
    rope_kernel<<<T, kThreads>>>(q.get(), k.get(), pos0, n_heads_, n_kv_, head_dim_, rot_dim_,
                                 freq_base_);
    store_kv_kernel<<<T, kThreads>>>(k.get(), v.get(), k_cache_.get(), v_cache_.get(), l, pos0,
                                     n_kv_, head_dim_, max_len_);
    attention_kernel<<<dim3(n_heads_, T), kThreads, n_keys * sizeof(float)>>>(
        q.get(), k_cache_.get(), v_cache_.get(), h.get(), l, pos0, n_keys, n_heads_, n_kv_,
        head_dim_, max_len_, scale);
    gemm(h.get(), L.wo.get(), tmp.get(), T, dim_, dim_);
    add_kernel<<<blocks_for(td), kThreads>>>(x.get(), tmp.get(), td);
    rmsnorm_kernel<<<T, kThreads>>>(x.get(), L.ffn_norm.get(), h.get(), dim_, eps_);
    gemm(h.get(), L.w_gate.get(), gate.get(), T, dim_, ffn_);
    gemm(h.get(), L.w_up.get(), up.get(), T, dim_, ffn_);
    swiglu_kernel<<<blocks_for(tf), kThreads>>>(gate.get(), up.get(), h.get(), tf);
    gemm(h.get(), L.w_down.get(), tmp.get(), T, ffn_, dim_);
    add_kernel<<<blocks_for(td), kThreads>>>(x.get(), tmp.get(), td);
  }
  rmsnorm_kernel<<<T, kThreads>>>(x.get(), out_norm_.get(), h.get(), dim_, eps_);
  DeviceBuffer<float> logits(static_cast<size_t>(T) * vocab_);
  gemm(h.get(), output_.size() ? output_.get() : embed_.get(), logits.get(), T, dim_, vocab_);
  CUDA_CHECK(cudaGetLastError());
  Logits out(T, vocab_);
  CUDA_CHECK(
      cudaMemcpy(out.data(), logits.get(), logits.size() * sizeof(float), cudaMemcpyDeviceToHost));
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  return out;
}

void CudaLlama::truncate(int new_len) {
  if (new_len < 0 || new_len > length()) {
    throw std::out_of_range("CudaLlama::truncate(" + std::to_string(new_len) + "): sequence has " +
                            std::to_string(length()) + " tokens");
  }
  tokens_.resize(static_cast<size_t>(new_len));  // cache rows past new_len are overwritten later
}

}  // namespace

bool cuda_backend_built() { return true; }

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return std::string("no usable CUDA device: cudaGetDeviceCount failed with ") +
           cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  }
  if (count == 0) return "no CUDA device is present on this machine";
  return "";
}

std::unique_ptr<Target> make_cuda_llama(const std::string& gguf_path,
                                        const CudaLlamaOptions& options) {
  return std::make_unique<CudaLlama>(gguf_path, options);
}

}  // namespace speclab
