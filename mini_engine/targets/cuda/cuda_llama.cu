// CudaLlama: weights dequantized once to fp16 on upload, cuBLAS for every projection, and small
// kernels whose arithmetic lives in kernel_math.h (tested on the host).
//
// Why fp16 weights rather than dequantize-in-kernel: the GEMMs then go to cuBLAS (tensor cores,
// no custom GEMM to get right without a GPU to test on), and fp16 halves the bytes per token
// against fp32. SmolLM2-135M in fp16 is about 270 MB, small for any CUDA GPU. The cost is
// rounding each dequantized Q4_1/Q8_0 weight to fp16 (relative error <= 2^-11), far below the
// quantization error already in the file.
//
// Why the rest looks as it does: a decode step of a 135M model is a few microseconds of work
// per kernel, so the step's time is mostly launches. Q|K|V and Gate|Up are each one GEMM over
// stacked weights, the residual add is fused into the next RMSNorm (8 launches per layer), the
// activations live in buffers kept between calls, and blocks of up to kShortBlock tokens
// (decode steps, verify passes) replay a CUDA graph captured once per block size: the kernels
// read the block's position from device memory, so one graph serves every position. Such a
// block has only n_heads x T queries, so its attention is split over chunks of kKeyChunk keys,
// each a block of its own, and merged (kmath::chunk_rescale); a prefill attends in one chunk.
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

constexpr int kThreads = 256;       // element-wise and per-row kernels
constexpr int kAttnThreads = 1024;  // attention: one block per (head, query, chunk of keys)
// Blocks of up to this many tokens (decode steps and verify passes, k <= 15) are "short": they
// replay a captured CUDA graph and split attention into chunks of kKeyChunk keys. Longer ones
// (prefills) have blocks enough, launch their kernels one by one and attend in one chunk.
constexpr int kShortBlock = 16;
constexpr int kKeyChunk = 256;
constexpr size_t kCublasWorkspaceBytes = 32u << 20;  // what NVIDIA advises for Hopper
int blocks_for(std::int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// ---- block reductions (blockDim.x a multiple of 32, at most 1024) ----

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Every thread gets the block's sum (or max) of v. `red` holds 32 floats of shared memory.
template <bool kMax>
__device__ float block_reduce(float v, float* red) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  v = kMax ? warp_max(v) : warp_sum(v);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < n_warps ? red[lane] : (kMax ? -INFINITY : 0.0f);
    w = kMax ? warp_max(w) : warp_sum(w);
    if (lane == 0) red[0] = w;
  }
  __syncthreads();
  const float out = red[0];
  __syncthreads();  // red may be reused right after
  return out;
}

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

// One block per row: x += delta (when delta is not null), then y = rmsnorm(x) * w, written as
// fp16 for the next GEMM. Each thread owns the elements i = threadIdx.x (mod blockDim.x).
__global__ void add_rmsnorm_kernel(float* x, const float* delta, const float* w, __half* y, int dim,
                                   float eps) {
  __shared__ float red[32];
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * dim;
  float s = 0.0f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = delta ? x[base + i] + delta[base + i] : x[base + i];
    if (delta) x[base + i] = v;
    s += v * v;
  }
  const float inv = kmath::rms_inverse(block_reduce<false>(s, red), dim, eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    y[base + i] = __float2half(kmath::rmsnorm_element(x[base + i], w[i], inv));
  }
}

// Token blockIdx.x of the fused Q|K|V output: RoPE on its q and k heads in place, then its k
// and v copied into the cache at position *pos0_ptr + blockIdx.x.
__global__ void rope_store_kernel(float* qkv, float* kc, float* vc, int layer, const int* pos0_ptr,
                                  int n_heads, int n_kv, int head_dim, int rot_dim, int max_len,
                                  float freq_base) {
  const int t = blockIdx.x;
  const int pos0 = *pos0_ptr;
  const kmath::QkvLayout L = kmath::qkv_layout(n_heads, n_kv, head_dim);
  float* row = qkv + static_cast<std::int64_t>(t) * L.row;
  const int pairs = rot_dim / 2;
  for (int idx = threadIdx.x; idx < (n_heads + n_kv) * pairs; idx += blockDim.x) {
    const int head = idx / pairs, pair = idx % pairs;
    float* v =
        head < n_heads ? row + L.q + head * head_dim : row + L.k + (head - n_heads) * head_dim;
    const int l0 = kmath::rope_lane0(pair, rot_dim), l1 = kmath::rope_lane1(pair, rot_dim);
    float y0, y1;
    kmath::rope_rotate(v[l0], v[l1], kmath::rope_angle(pos0 + t, pair, rot_dim, freq_base), &y0,
                       &y1);
    v[l0] = y0;
    v[l1] = y1;
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < n_kv * head_dim; idx += blockDim.x) {
    const int h = idx / head_dim, d = idx % head_dim;
    const std::size_t at = kmath::kv_index(layer, h, pos0 + t, d, n_kv, max_len, head_dim);
    kc[at] = row[L.k + idx];
    vc[at] = row[L.v + idx];
  }
}

// Value groups of the attention kernel: its threads split the chunk's keys into this many
// strided groups, head_dim threads per group, and sum the groups' partial outputs at the end.
__host__ __device__ inline int attention_groups(int head_dim) {
  return head_dim >= kAttnThreads ? 1 : kAttnThreads / head_dim;
}
// Dynamic shared memory of the attention kernel for chunks of `chunk` keys: the scores, the
// groups' partial outputs, the query.
inline size_t attention_smem_bytes(int chunk, int head_dim) {
  return (static_cast<size_t>(chunk) + attention_groups(head_dim) * head_dim + head_dim) *
         sizeof(float);
}

// One block of kAttnThreads per (head, query, chunk): T = gridDim.y queries appended at
// *pos0_ptr, chunk blockIdx.z covering keys [z * chunk, (z + 1) * chunk) of the pos0 + T keys.
// Scores (one warp per key, its lanes across head_dim), masked causally, then the chunk's
// (m, l, acc) of kmath::chunk_rescale's comment, written at index (t * n_heads + h) *
// gridDim.z + z of part_ml (m, l pairs) and part_acc (head_dim each). A chunk past the last key
// returns at once (the merge reads only active_chunks()). Dynamic shared memory:
// attention_smem_bytes(chunk, ...).
__global__ void attention_chunk_kernel(const float* qkv, const float* kc, const float* vc,
                                       float* part_ml, float* part_acc, int layer,
                                       const int* pos0_ptr, int chunk, int n_heads, int n_kv,
                                       int head_dim, int max_len, float scale) {
  extern __shared__ float smem[];
  __shared__ float red[32];
  const int groups = attention_groups(head_dim);
  float* scores = smem;                     // chunk
  float* partial = scores + chunk;          // groups x head_dim
  float* qv = partial + groups * head_dim;  // head_dim
  const int h = blockIdx.x, t = blockIdx.y, c = blockIdx.z;
  const int pos0 = *pos0_ptr;
  const int qpos = pos0 + t;
  const int first = c * chunk;
  const int count = min(chunk, pos0 + static_cast<int>(gridDim.y) - first);  // <= 0: inactive
  const std::int64_t part = (static_cast<std::int64_t>(t) * n_heads + h) * gridDim.z + c;
  if (count <= 0) return;  // the same for the whole block, so no thread waits at a barrier
  const int kvh = kmath::kv_head_of(h, n_heads, n_kv);
  const kmath::QkvLayout L = kmath::qkv_layout(n_heads, n_kv, head_dim);
  const float* q = qkv + static_cast<std::int64_t>(t) * L.row + L.q + h * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) qv[d] = q[d];
  __syncthreads();

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  for (int j = warp; j < count; j += n_warps) {
    float dot = 0.0f;
    for (int d = lane; d < head_dim; d += 32) {
      dot += qv[d] * kc[kmath::kv_index(layer, kvh, first + j, d, n_kv, max_len, head_dim)];
    }
    dot = warp_sum(dot);
    if (lane == 0) scores[j] = kmath::attention_score(dot, scale, first + j, qpos);
  }
  __syncthreads();
  float m = -INFINITY;
  for (int j = threadIdx.x; j < count; j += blockDim.x) m = fmaxf(m, scores[j]);
  const float chunk_max = block_reduce<true>(m, red);
  float s = 0.0f;
  for (int j = threadIdx.x; j < count; j += blockDim.x) {
    s += kmath::softmax_weight(scores[j], chunk_max, 1.0f);
  }
  const float chunk_sum = block_reduce<false>(s, red);

  for (int idx = threadIdx.x; idx < groups * head_dim; idx += blockDim.x) {
    const int g = idx / head_dim, d = idx % head_dim;
    float acc = 0.0f;
    for (int j = g; j < count; j += groups) {
      acc += kmath::softmax_weight(scores[j], chunk_max, 1.0f) *
             vc[kmath::kv_index(layer, kvh, first + j, d, n_kv, max_len, head_dim)];
    }
    partial[idx] = acc;
  }
  __syncthreads();
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int g = 0; g < groups; ++g) acc += partial[g * head_dim + d];
    part_acc[part * head_dim + d] = acc;
  }
  if (threadIdx.x == 0) {
    part_ml[2 * part] = chunk_max;
    part_ml[2 * part + 1] = chunk_sum;
  }
}

// The chunks of `chunk` keys that hold at least one of the n_keys keys.
__device__ inline int active_chunks(int n_keys, int chunk) { return (n_keys + chunk - 1) / chunk; }

// One block per (head, query), T = gridDim.y queries appended at *pos0_ptr: merges the active
// chunks' (m, l, acc) into the attention output (kmath::chunk_rescale), written as fp16 for the
// output projection. n_chunks is the launch's chunk count (the stride of the partials).
__global__ void attention_merge_kernel(const float* part_ml, const float* part_acc, __half* out,
                                       const int* pos0_ptr, int chunk, int n_chunks, int n_heads,
                                       int head_dim) {
  const int h = blockIdx.x, t = blockIdx.y;
  const std::int64_t base = (static_cast<std::int64_t>(t) * n_heads + h) * n_chunks;
  n_chunks = min(n_chunks, active_chunks(*pos0_ptr + static_cast<int>(gridDim.y), chunk));
  float M = -INFINITY;
  for (int c = 0; c < n_chunks; ++c) M = fmaxf(M, part_ml[2 * (base + c)]);
  float L = 0.0f;
  for (int c = 0; c < n_chunks; ++c) {
    L += part_ml[2 * (base + c) + 1] * kmath::chunk_rescale(part_ml[2 * (base + c)], M);
  }
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int c = 0; c < n_chunks; ++c) {
      acc += part_acc[(base + c) * head_dim + d] * kmath::chunk_rescale(part_ml[2 * (base + c)], M);
    }
    out[(static_cast<std::int64_t>(t) * n_heads + h) * head_dim + d] = __float2half(acc / L);
  }
}

// The fused Gate|Up output to silu(gate) * up, as fp16 for the down projection.
__global__ void swiglu_kernel(const float* gate_up, __half* out, std::int64_t n, int n_ff) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    out[i] = __float2half(
        kmath::swiglu(gate_up[kmath::gate_index(i, n_ff)], gate_up[kmath::up_index(i, n_ff)]));
  }
}

struct Layer {
  DeviceBuffer<float> attn_norm, ffn_norm;  // (dim)
  DeviceBuffer<__half> w_qkv;               // (q_dim + 2 kv_dim, dim): W_q, W_k, W_v stacked
  DeviceBuffer<__half> wo;                  // (dim, q_dim)
  DeviceBuffer<__half> w_gate_up;           // (2 n_ff, dim): W_gate, W_up stacked
  DeviceBuffer<__half> w_down;              // (dim, n_ff)
};

// The activations of one extend, kept between calls and grown when a longer block comes.
struct Scratch {
  int capacity = 0;  // tokens
  DeviceBuffer<Token> ids;
  DeviceBuffer<int> pos0;                 // (1): where the block starts, read by the kernels
  DeviceBuffer<float> x, delta;           // (T, dim): the residual stream, a sublayer's output
  DeviceBuffer<float> qkv, gate_up;       // (T, qkv row), (T, 2 n_ff)
  DeviceBuffer<__half> h;                 // (T, max(dim, n_ff)): the next GEMM's fp16 input
  DeviceBuffer<float> logits;             // (T, vocab)
  DeviceBuffer<float> part_ml, part_acc;  // attention chunks: (T, heads, chunks) x (2, head_dim)
};

class CudaLlama final : public Target {
 public:
  CudaLlama(const std::string& path, const CudaLlamaOptions& options);
  ~CudaLlama() override {
    drop_graphs();
    if (cublas_) cublasDestroy(cublas_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda-llama(" + path_ + ")"; }
  int vocab_size() const override { return vocab_; }
  int max_length() const override { return max_len_; }
  std::span<const Token> tokens() const override { return tokens_; }
  Logits extend(std::span<const Token> tokens) override;
  void truncate(int new_len) override;

 private:
  // Dequantizes weight matrices to fp16 on the device, each keeping its (rows, cols) row-major
  // layout, and stacks their rows in the order given. They must all have the same cols.
  DeviceBuffer<__half> upload_matrices(std::initializer_list<const QuantMatrix*> parts);
  void dequantize_into(const QuantMatrix& m, __half* out);
  DeviceBuffer<float> upload_vector(const float* host, int n);
  // Makes the scratch buffers hold at least `tokens` tokens (dropping the captured graphs,
  // which hold the old buffers' addresses).
  void reserve(int tokens);
  // Enqueues the forward pass of T tokens on stream_: reads S.ids and *S.pos0, writes the
  // KV cache at pos0..pos0+T-1 and S.logits. Everything it launches depends on T alone, so the
  // same sequence can be captured once into a CUDA graph and replayed at any position.
  void enqueue_forward(int T);
  // The captured forward pass for T tokens, capturing it on first use.
  cudaGraphExec_t graph_for(int T);
  void drop_graphs();
  // y (tokens x out, fp32) = x (tokens x in, fp16) * w (out x in, fp16)^T
  void gemm(const __half* x, const __half* w, float* y, int tokens, int in, int out);

  std::string path_;
  int dim_ = 0, n_layers_ = 0, n_heads_ = 0, n_kv_ = 0, head_dim_ = 0, ffn_ = 0, vocab_ = 0;
  int rot_dim_ = 0, max_len_ = 0;
  int short_chunks_ = 0;  // key chunks of a short block: ceil(max_len / kKeyChunk)
  float eps_ = 1e-5f, freq_base_ = 10000.0f;
  std::vector<Layer> layers_;
  DeviceBuffer<__half> embed_;   // (vocab, dim); also the output projection when tied
  DeviceBuffer<__half> output_;  // (vocab, dim), empty when tied
  DeviceBuffer<float> out_norm_;
  DeviceBuffer<float> k_cache_, v_cache_;  // [layer][kv_head][pos][head_dim]
  Scratch scratch_;
  DeviceBuffer<std::uint8_t> cublas_workspace_;  // fixed, so cuBLAS allocates nothing in a graph
  bool use_graphs_ = true;
  std::vector<cudaGraphExec_t> graphs_;  // [T], null until captured; T <= kShortBlock
  cudaStream_t stream_ = nullptr;
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
  short_chunks_ = (max_len_ + kKeyChunk - 1) / kKeyChunk;
  if (attention_smem_bytes(max_len_, head_dim_) > 48 * 1024) {  // a long block's one chunk
    throw std::runtime_error("CudaLlama: max_length " + std::to_string(max_len_) +
                             " needs more shared memory for attention scores than 48 KiB; "
                             "pass a smaller max_length");
  }

  use_graphs_ = options.graphs;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  CUBLAS_CHECK(cublasCreate(&cublas_));
  CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  cublas_workspace_ = DeviceBuffer<std::uint8_t>(kCublasWorkspaceBytes);
  CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_.get(), cublas_workspace_.size()));
  embed_ = upload_matrices({&w.token_embd});
  if (!w.tied_output) output_ = upload_matrices({&w.output});
  out_norm_ = upload_vector(w.output_norm, dim_);
  for (const LlamaLayer& src : w.layers) {
    Layer L;
    L.attn_norm = upload_vector(src.attn_norm, dim_);
    L.ffn_norm = upload_vector(src.ffn_norm, dim_);
    L.w_qkv = upload_matrices({&src.wq, &src.wk, &src.wv});  // rows as kmath::qkv_layout reads
    L.wo = upload_matrices({&src.wo});
    L.w_gate_up = upload_matrices({&src.w_gate, &src.w_up});  // as kmath::gate_index reads
    L.w_down = upload_matrices({&src.w_down});
    layers_.push_back(std::move(L));
  }
  const size_t cache = static_cast<size_t>(n_layers_) * n_kv_ * max_len_ * head_dim_;
  k_cache_ = DeviceBuffer<float>(cache);
  v_cache_ = DeviceBuffer<float>(cache);
}

DeviceBuffer<__half> CudaLlama::upload_matrices(std::initializer_list<const QuantMatrix*> parts) {
  std::int64_t total = 0;
  for (const QuantMatrix* m : parts) {
    if (m->cols != (*parts.begin())->cols) {
      throw std::logic_error("CudaLlama: stacked matrices differ in width");
    }
    total += static_cast<std::int64_t>(m->rows) * m->cols;
  }
  DeviceBuffer<__half> out(static_cast<size_t>(total));
  std::int64_t at = 0;
  for (const QuantMatrix* m : parts) {
    dequantize_into(*m, out.get() + at);
    at += static_cast<std::int64_t>(m->rows) * m->cols;
  }
  return out;
}

void CudaLlama::dequantize_into(const QuantMatrix& m, __half* out_ptr) {
  const std::int64_t n = static_cast<std::int64_t>(m.rows) * m.cols;
  const std::uint64_t bytes = m.row_bytes * static_cast<std::uint64_t>(m.rows);
  DeviceBuffer<std::uint8_t> raw(bytes);
  CUDA_CHECK(cudaMemcpy(raw.get(), m.data, bytes, cudaMemcpyHostToDevice));
  switch (m.type) {
    case GgmlType::Q4_0:
      dequant_blocks_kernel<BlockQ4_0, dequant_q4_0>
          <<<blocks_for(n), kThreads>>>(reinterpret_cast<const BlockQ4_0*>(raw.get()), out_ptr, n);
      break;
    case GgmlType::Q4_1:
      dequant_blocks_kernel<BlockQ4_1, dequant_q4_1>
          <<<blocks_for(n), kThreads>>>(reinterpret_cast<const BlockQ4_1*>(raw.get()), out_ptr, n);
      break;
    case GgmlType::Q8_0:
      dequant_blocks_kernel<BlockQ8_0, dequant_q8_0>
          <<<blocks_for(n), kThreads>>>(reinterpret_cast<const BlockQ8_0*>(raw.get()), out_ptr, n);
      break;
    case GgmlType::F32:
      f32_to_half_kernel<<<blocks_for(n), kThreads>>>(reinterpret_cast<const float*>(raw.get()),
                                                      out_ptr, n);
      break;
    case GgmlType::F16:
      CUDA_CHECK(cudaMemcpy(out_ptr, raw.get(), bytes, cudaMemcpyDeviceToDevice));
      break;
    case GgmlType::BF16: {
      std::vector<float> host(static_cast<size_t>(n));
      dequantize_row(m.type, m.data, host.data(), n);
      DeviceBuffer<float> tmp(host.size());
      CUDA_CHECK(
          cudaMemcpy(tmp.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
      f32_to_half_kernel<<<blocks_for(n), kThreads>>>(tmp.get(), out_ptr, n);
      CUDA_CHECK(cudaDeviceSynchronize());
      break;
    }
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
}

DeviceBuffer<float> CudaLlama::upload_vector(const float* host, int n) {
  DeviceBuffer<float> out(static_cast<size_t>(n));
  CUDA_CHECK(
      cudaMemcpy(out.get(), host, static_cast<size_t>(n) * sizeof(float), cudaMemcpyHostToDevice));
  return out;
}

void CudaLlama::reserve(int tokens) {
  if (tokens <= scratch_.capacity) return;
  drop_graphs();
  // Grow geometrically (a prefill after decode steps reallocates once), never past max_length.
  const int cap = std::min(max_len_, std::max(tokens, 2 * scratch_.capacity));
  const size_t c = static_cast<size_t>(cap);
  Scratch s;
  s.capacity = cap;
  s.ids = DeviceBuffer<Token>(c);
  s.pos0 = DeviceBuffer<int>(1);
  s.x = DeviceBuffer<float>(c * dim_);
  s.delta = DeviceBuffer<float>(c * dim_);
  s.qkv = DeviceBuffer<float>(c * kmath::qkv_layout(n_heads_, n_kv_, head_dim_).row);
  s.gate_up = DeviceBuffer<float>(c * 2 * ffn_);
  s.h = DeviceBuffer<__half>(c * std::max(dim_, ffn_));
  s.logits = DeviceBuffer<float>(c * vocab_);
  // Short blocks have short_chunks_ chunks per (token, head), long ones a single chunk.
  const size_t parts =
      std::max(static_cast<size_t>(std::min(cap, kShortBlock)) * short_chunks_, c) * n_heads_;
  s.part_ml = DeviceBuffer<float>(parts * 2);
  s.part_acc = DeviceBuffer<float>(parts * head_dim_);
  scratch_ = std::move(s);
}

void CudaLlama::enqueue_forward(int T) {
  Scratch& S = scratch_;
  const kmath::QkvLayout qkv = kmath::qkv_layout(n_heads_, n_kv_, head_dim_);
  const float scale = 1.0f / sqrtf(static_cast<float>(head_dim_));
  const std::int64_t tf = static_cast<std::int64_t>(T) * ffn_;
  // Chunks of keys per (head, query); fixed for a given T, so a captured graph stays valid.
  const int chunk = T <= kShortBlock ? kKeyChunk : max_len_;
  const int n_chunks = T <= kShortBlock ? short_chunks_ : 1;
  embed_kernel<<<T, kThreads, 0, stream_>>>(embed_.get(), S.ids.get(), S.x.get(), dim_);
  // h = norm(x); every later norm also adds the sublayer's output (delta) to x first.
  add_rmsnorm_kernel<<<T, kThreads, 0, stream_>>>(S.x.get(), nullptr, layers_[0].attn_norm.get(),
                                                  S.h.get(), dim_, eps_);
  for (int l = 0; l < n_layers_; ++l) {
    const Layer& L = layers_[l];
    gemm(S.h.get(), L.w_qkv.get(), S.qkv.get(), T, dim_, qkv.row);
    rope_store_kernel<<<T, kThreads, 0, stream_>>>(S.qkv.get(), k_cache_.get(), v_cache_.get(), l,
                                                   S.pos0.get(), n_heads_, n_kv_, head_dim_,
                                                   rot_dim_, max_len_, freq_base_);
    attention_chunk_kernel<<<dim3(n_heads_, T, n_chunks), kAttnThreads,
                             attention_smem_bytes(chunk, head_dim_), stream_>>>(
        S.qkv.get(), k_cache_.get(), v_cache_.get(), S.part_ml.get(), S.part_acc.get(), l,
        S.pos0.get(), chunk, n_heads_, n_kv_, head_dim_, max_len_, scale);
    attention_merge_kernel<<<dim3(n_heads_, T), 64, 0, stream_>>>(S.part_ml.get(), S.part_acc.get(),
                                                                  S.h.get(), S.pos0.get(), chunk,
                                                                  n_chunks, n_heads_, head_dim_);
    gemm(S.h.get(), L.wo.get(), S.delta.get(), T, dim_, dim_);
    add_rmsnorm_kernel<<<T, kThreads, 0, stream_>>>(S.x.get(), S.delta.get(), L.ffn_norm.get(),
                                                    S.h.get(), dim_, eps_);
    gemm(S.h.get(), L.w_gate_up.get(), S.gate_up.get(), T, dim_, 2 * ffn_);
    swiglu_kernel<<<blocks_for(tf), kThreads, 0, stream_>>>(S.gate_up.get(), S.h.get(), tf, ffn_);
    gemm(S.h.get(), L.w_down.get(), S.delta.get(), T, ffn_, dim_);
    const float* next_norm = l + 1 < n_layers_ ? layers_[l + 1].attn_norm.get() : out_norm_.get();
    add_rmsnorm_kernel<<<T, kThreads, 0, stream_>>>(S.x.get(), S.delta.get(), next_norm, S.h.get(),
                                                    dim_, eps_);
  }
  gemm(S.h.get(), output_.size() ? output_.get() : embed_.get(), S.logits.get(), T, dim_, vocab_);
  CUDA_CHECK(cudaGetLastError());
}

cudaGraphExec_t CudaLlama::graph_for(int T) {
  if (graphs_.empty()) graphs_.assign(kShortBlock + 1, nullptr);
  if (graphs_[T]) return graphs_[T];
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    enqueue_forward(T);
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);  // leave the stream usable
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  const cudaError_t err = cudaGraphInstantiate(&graphs_[T], graph, 0);
  cudaGraphDestroy(graph);
  CUDA_CHECK(err);
  return graphs_[T];
}

void CudaLlama::drop_graphs() {
  for (cudaGraphExec_t& g : graphs_) {
    if (g) cudaGraphExecDestroy(g);
    g = nullptr;
  }
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
  reserve(T);
  Scratch& S = scratch_;
  const cudaGraphExec_t graph = use_graphs_ && T <= kShortBlock ? graph_for(T) : nullptr;
  // From pageable memory these copies are staged before they return, so the locals may go.
  CUDA_CHECK(cudaMemcpyAsync(S.ids.get(), tokens.data(), tokens.size() * sizeof(Token),
                             cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemcpyAsync(S.pos0.get(), &pos0, sizeof(int), cudaMemcpyHostToDevice, stream_));
  if (graph) {
    CUDA_CHECK(cudaGraphLaunch(graph, stream_));
  } else {
    enqueue_forward(T);
  }
  Logits out(T, vocab_);
  CUDA_CHECK(cudaMemcpyAsync(out.data(), S.logits.get(),
                             static_cast<size_t>(T) * vocab_ * sizeof(float),
                             cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
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
