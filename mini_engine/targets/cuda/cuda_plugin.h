#pragma once
// The CUDA backend as a plugin. The speclab CLI does not link the CUDA runtime and cuBLAS:
// mapping them costs some 70 ms at every start, even for commands that never touch a GPU, and a
// binary linked to them will not start at all on a machine without them. Instead
// cuda_loader.cpp implements cuda_llama.h by loading libspeclab_cuda_backend.so (cuda_plugin.cpp
// on top of the real backend) the first time a command asks for --device cuda, and calls it
// through this table. The CUDA tests and speclab_bench_cuda link the backend directly.
//
// Both sides are built from these sources by one compiler in one build, so C++ types
// (std::string, Target, exceptions) cross between them as they are; the version guards against a
// plugin left over from another build.
#include <string>

#include "mini_engine/core/target.h"
#include "mini_engine/targets/cuda/cuda_llama.h"

namespace speclab {

constexpr int kCudaBackendVersion = 2;  // 2: CudaLlamaOptions::graphs

struct CudaBackendTable {
  int version;  // kCudaBackendVersion of the build that made the plugin
  std::string (*unavailable_reason)();
  // make_cuda_llama; the caller owns the result. Throws as make_cuda_llama does.
  Target* (*make)(const std::string& gguf_path, const CudaLlamaOptions& options);
};

}  // namespace speclab

// The plugin's one exported symbol.
extern "C" const speclab::CudaBackendTable* speclab_cuda_backend();
inline constexpr char kCudaBackendSymbol[] = "speclab_cuda_backend";
