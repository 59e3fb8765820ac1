#pragma once
// Every GEMM in CudaLlama is Y = X * W^T with row-major X (tokens x in), W (out x in, as stored
// in GGUF: each output feature is one contiguous row) and Y (tokens x out). cuBLAS is
// column-major, so each call's transposes and leading dimensions come from this one function;
// tests/cuda/test_gemm_layout.cpp checks it on the host against a reference column-major GEMM
// with cuBLAS's exact semantics.

namespace speclab {

// The arguments of one cublas<t>gemm / cublasGemmEx call: C = op(A) * op(B), all column-major.
struct CublasGemmArgs {
  bool transa = false;  // CUBLAS_OP_T when true, else CUBLAS_OP_N
  bool transb = false;
  int m = 0, n = 0, k = 0;  // op(A): m x k, op(B): k x n, C: m x n
  int lda = 0, ldb = 0, ldc = 0;
  bool a_is_weights = true;  // A is W (else A is X)
};

// Maps Y(tokens x out) = X(tokens x in) * W(out x in)^T, all row-major, to cuBLAS.
// A row-major R (r x c) is the column-major R^T (c x r) with leading dimension c, so
// Y^T (out x tokens, col-major) = W (out x in) * X^T (in x tokens):
//   A = W buffer seen as col-major (in x out), op = T  ->  out x in,   lda = in
//   B = X buffer seen as col-major (in x tokens), op = N,              ldb = in
//   C = Y buffer seen as col-major (out x tokens),                     ldc = out
constexpr CublasGemmArgs rowmajor_xwt(int tokens, int in, int out) {
  CublasGemmArgs g;
  g.transa = true;
  g.transb = false;
  g.m = out;
  g.n = tokens;
  g.k = in;
  g.lda = in;
  g.ldb = in;
  g.ldc = out;
  g.a_is_weights = true;
  return g;
}

}  // namespace speclab
