#pragma once
// CudaLlama: the Llama forward pass on an NVIDIA GPU, behind the same Target interface as
// CpuLlama and the ToyTarget. Built only when nvcc is found at configure time
// (SPECLAB_HAS_CUDA); otherwise these functions exist and report that the backend is missing.
// The speclab CLI gets them from cuda_loader.cpp, which loads the backend as a plugin on first
// use (cuda_plugin.h); the CUDA tests and speclab_bench_cuda link the backend itself.
#include <memory>
#include <string>

#include "mini_engine/core/target.h"

namespace speclab {

struct CudaLlamaOptions {
  int max_length = 0;  // KV-cache capacity in tokens: the smaller of this and the model's context
                       // length; 0 (or less) = the model's context length
  int device = 0;      // CUDA device ordinal
  bool graphs = true;  // replay decode steps and verify passes (<= 16 tokens) as CUDA graphs
};

// True when this build contains the CUDA backend.
bool cuda_backend_built();

// Empty when a CUDA device can be used; otherwise why not (no CUDA backend in this build, no
// driver, no device), in words fit for an error message.
std::string cuda_unavailable_reason();

// Loads a Llama-family GGUF onto the GPU; the caller owns the Target. Throws std::runtime_error
// naming the cause when no device can be used (checked before the file is read), the file cannot
// be read, max_length needs more shared memory than a block has, or a CUDA or cuBLAS call fails;
// GgufError for a malformed file; ModelError for one that is not a runnable Llama model (as
// CpuLlama::open).
std::unique_ptr<Target> make_cuda_llama(const std::string& gguf_path,
                                        const CudaLlamaOptions& options = {});

}  // namespace speclab
