#pragma once
// CPU kernels for the Llama forward pass: 8-bit activation quantization and quantized matrix x
// (several activation rows) products.
//
// Why quantize the activations: the weights stay in their ggml blocks (Q4_1, Q8_0, ...), and a
// dot product of 4-bit weight codes with 8-bit activation codes is an *integer* dot product, which
// AVX2 / AVX-VNNI do 32 lanes at a time (NEON's sdot 16). The block scales are applied once per
// block of 32. llama.cpp does the same (its Q8_1 activation blocks), so our logits and its logits
// differ only by rounding.
//
// Why several activation rows at once: a weight block is read from memory and unpacked once, then
// dotted with every row (every token of a prefill or a verify pass). On a memory-bound CPU that
// makes a pass over k+1 tokens cost about as much as a pass over one.
//
// Every fast kernel has a plain reference beside it; tests/model/test_cpu_kernels.cpp compares
// them.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "mini_engine/model/llama_weights.h"
#include "mini_engine/targets/weight_arena.h"

namespace speclab::cpu {

// Allocates on 64-byte boundaries. The forward pass keeps every buffer row 64-byte aligned so
// that vectorized loops (ours and Eigen's) never split a row differently from one call to the
// next: the same inputs then give bit-identical logits wherever the buffers happen to live.
template <typename T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <typename U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{64}); }
  template <typename U>
  bool operator==(const Aligned64<U>&) const {
    return true;
  }
};
template <typename T>
using AlignedVector = std::vector<T, Aligned64<T>>;

// How activation blocks are rounded: like the ggml block type that llama.cpp's CPU backend
// quantizes activations to before a product with weights of a given type (its vec_dot_type).
// Both store the scale d in fp16; they differ in the block sum s.
enum class ActFormat {
  q8_0,  // for Q4_0 / Q8_0 weights: block_q8_0 has no sum, ggml applies those weights' offsets in
         // integer arithmetic, so s = d * sum(q) in float (d already rounded): exact offsets.
  q8_1,  // for Q4_1 weights: block_q8_1's s, the float d times sum(q) rounded to fp16.
};
// The ActFormat llama.cpp uses for weights of `type` (q8_1 for Q4_1, q8_0 otherwise).
ActFormat act_format_for(GgmlType type);

// Activation rows quantized in blocks of 32, like ggml's Q8_0 / Q8_1 (its AVX2 quantizer):
//   d = max|x| / 127,  q_i = round(x_i * (127 / max|x|)) in [-127, 127] (ties to even),
//   stored: fp16(d) and s as ActFormat says.
// d and s are rounded to fp16 but kept as floats (the kernels read floats): llama.cpp computes
// with exactly these values, a systematic difference of up to 2^-11 per block otherwise.
// Row r's codes are q(r)[0..cols), its block scales d(r)[0..cols/32) and sums s(r)[...].
// The codes of each row start 32-byte aligned.
class QuantizedActs {
 public:
  // Quantizes `rows` rows of `cols` floats (row r starts at x + r * ldx): reset() then
  // quantize_rows() over every row.
  // Requires rows >= 0, cols > 0 a multiple of 32 and ldx >= cols; throws std::invalid_argument
  // otherwise, changing nothing.
  void quantize(const float* x, int rows, int cols, int ldx, ActFormat format = ActFormat::q8_0);
  // Sizes the buffers for `rows` x `cols` (same requirements and errors); the contents are
  // unspecified.
  void reset(int rows, int cols);
  // Quantizes rows [r0, r1) of x (row r at x + r * ldx). Requires 0 <= r0 <= r1 <= rows() and
  // ldx >= cols() (unchecked: called per thread in the forward pass). Threads may quantize
  // disjoint row ranges at the same time.
  void quantize_rows(const float* x, int ldx, int r0, int r1, ActFormat format = ActFormat::q8_0);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  int blocks() const { return cols_ / 32; }
  // Row r's codes, scales and sums. Require 0 <= r < rows() (unchecked); the pointers are valid
  // until the next reset() or quantize().
  const std::int8_t* q(int r) const {
    return q_.data() + q_offset_ + static_cast<size_t>(r) * q_stride_;
  }
  const float* d(int r) const { return d_.data() + static_cast<size_t>(r) * blocks(); }
  const float* s(int r) const { return s_.data() + static_cast<size_t>(r) * blocks(); }

 private:
  int rows_ = 0, cols_ = 0;
  size_t q_stride_ = 0;         // bytes between rows' codes: cols rounded up to 32
  size_t q_offset_ = 0;         // first 32-byte aligned byte of q_
  std::vector<std::int8_t> q_;  // (rows, q_stride_), plus 32 bytes of slack for the alignment
  std::vector<float> d_;        // (rows, cols / 32)
  std::vector<float> s_;        // (rows, cols / 32)
};

enum class MatmulKernel {
  reference,  // dequantize weights and activations to float, sum in double: the ground truth
  scalar,     // integer block dot products in portable C++ (the fallback on any CPU)
  simd,       // AVX2 (+ VNNI where compiled in); the scalar kernel when built without AVX2
  packed,     // on a PackedMatrix (below): AVX-512 VNNI (16 rows per instruction), AVX2 (8
              // rows per instruction) or, on AArch64, NEON (4 rows per sdot, emulated without the
              // dot-product extension); the scalar kernel on other CPUs and on x86 without AVX2.
              // matmul() with a QuantMatrix packs a temporary copy first (tests only); the
              // forward pass packs its weights once at load time.
};

// Throws std::invalid_argument, naming `who`, unless `kernel` is one of the values above (a
// number cast to MatmulKernel, say from a configuration file, may not be).
void check_kernel(MatmulKernel kernel, const char* who);

// A quantized weight matrix repacked for the packed kernel. Rows go in groups of 16 (the last
// group padded with zero rows); for each group and each block of 32 columns the codes of the 16
// rows are interleaved so that a 64-byte vector holds 4 consecutive codes of every row: one
// vpdpbusd with 4 activation bytes broadcast to all lanes then yields 16 rows' partial sums
// (with AVX2, each 32-byte half and one vpmaddubsw: 8 rows; with NEON, each 16-byte quarter and
// one sdot: 4 rows), and the float work (scales, corrections) is done once per 16 (8, 4) rows
// instead of once per row.
//   Q4_0 / Q4_1: 256 bytes of nibbles per (group, block): vector k (k < 4) holds columns
//                4k..4k+3 in its low nibbles and 16+4k..16+4k+3 in its high ones; then the 16
//                fp16 scales d, then (Q4_1 only) the 16 fp16 offsets m.
//   Q8_0:        512 bytes: vector k (k < 8) holds columns 4k..4k+3 as code ^ 0x80 (unsigned);
//                then the 16 fp16 scales d.
// Each (group, block) is padded to a multiple of 64 bytes, so every vector load is aligned. A
// packed Q4_1 matrix is exactly as large as the original (plus the padding rows), Q8_0 6% and
// Q4_0 11% larger: a decode step reads about the same number of bytes.
class PackedMatrix {
 public:
  PackedMatrix() = default;
  // Repacks w (which must outlive this object: the fallback kernels read it) into memory of its
  // own, shared by the copies of this object.
  // Requires w.type one of Q4_0, Q4_1, Q8_0 and w.cols a multiple of 32; throws
  // std::invalid_argument otherwise.
  explicit PackedMatrix(const QuantMatrix& w);
  // The same, into arena.take(packed_bytes(w)): a model packs all its matrices into one arena
  // (weight_arena.h says why). The arena must outlive this object and its copies. Also throws
  // std::length_error, taking nothing, when the arena has too little left.
  PackedMatrix(const QuantMatrix& w, WeightArena& arena);
  // The bytes a packed copy of w takes. Same requirements and errors as the constructors.
  static size_t packed_bytes(const QuantMatrix& w);

  const QuantMatrix& source() const { return src_; }
  int rows() const { return src_.rows; }
  int cols() const { return src_.cols; }
  int blocks() const { return src_.cols / 32; }
  size_t group_block_bytes() const { return gbb_; }
  // The bytes of (row group g, block b). Requires g < (rows() + 15) / 16 and b < blocks()
  // (unchecked).
  const std::uint8_t* at(int g, int b) const {
    return data_ + (static_cast<size_t>(g) * blocks() + b) * gbb_;
  }

 private:
  void pack(std::uint8_t* dst);  // fills packed_bytes(src_) zeroed bytes at dst

  QuantMatrix src_;
  size_t gbb_ = 0;
  std::shared_ptr<WeightArena> own_;  // the memory when the matrix has its own; null in a model's
  std::uint8_t* data_ = nullptr;      // packed_bytes(src_) bytes, 64-byte aligned
};

// Same contract and errors as matmul() below, on a packed matrix: y[t * ldy + r] for rows
// [r0, r1). w.source()'s data must still be alive (the scalar fallback reads it).
void matmul(const PackedMatrix& w, const QuantizedActs& x, float* y, int ldy, int r0, int r1);

// The SIMD instruction set the simd kernel was compiled for, e.g. "avx2+avx512vnni" or
// "none (scalar fallback)".
const char* simd_kernel_name();
// The same for the packed kernel, e.g. "avx512+vnni+gfni (16 rows per instruction)" or
// "neon+dotprod (4 rows per instruction)".
const char* packed_kernel_name();

// y[t * ldy + r] = sum_c W[r][c] * x[t][c]  for every activation row t < x.rows() and weight row
// r in [r0, r1). The activations are x's dequantized values (q * d).
// Requires a valid kernel (check_kernel), x.cols() == w.cols, 0 <= r0 <= r1 <= w.rows,
// ldy >= w.rows, and w.type one of Q4_0, Q4_1, Q8_0; throws std::invalid_argument otherwise. Writes
// only those entries of y. Thread-safe for disjoint row ranges: that is how the forward pass splits
// work between threads.
void matmul(MatmulKernel kernel, const QuantMatrix& w, const QuantizedActs& x, float* y, int ldy,
            int r0, int r1);

// SwiGLU's elementwise step: g[i] = silu(g[i]) * u[i] = g[i] / (1 + exp(-g[i])) * u[i], i < n.
// With AVX-512 (AVX2, NEON), exp is a range-reduced polynomial (a few ulps from std::exp) on 16
// (8, 4) lanes, with a masked tail, so every element goes through the same arithmetic whatever n
// and its place in a row: a prefill and the same tokens one at a time stay bit-identical. On
// other CPUs, and on x86 without AVX2, std::exp. Requires n >= 0.
void silu_mul(float* g, const float* u, int n);
// The same with std::exp, one element at a time: the reference silu_mul is tested against.
void silu_mul_reference(float* g, const float* u, int n);

// Decodes row r of w (any type dequantize_row knows) into out[0..w.cols). Throws
// std::out_of_range unless 0 <= r < w.rows, and what dequantize_row throws.
void dequantize_matrix_row(const QuantMatrix& w, int r, float* out);

}  // namespace speclab::cpu
