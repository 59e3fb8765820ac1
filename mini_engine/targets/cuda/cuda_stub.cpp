// The CUDA backend's entry points in a build without it (no nvcc, or -DSPECLAB_NO_CUDA=ON): they
// exist, and say why.
#include <stdexcept>

#include "mini_engine/targets/cuda/cuda_llama.h"

namespace speclab {

bool cuda_backend_built() { return false; }

// SPECLAB_CUDA_LEFT_OUT (set by mini_engine/CMakeLists.txt): 1 when -DSPECLAB_NO_CUDA=ON left the
// backend out, 0 when nvcc was not found.
std::string cuda_unavailable_reason() {
#if SPECLAB_CUDA_LEFT_OUT
  return "this build of SpecLab has no CUDA backend (it was left out with -DSPECLAB_NO_CUDA=ON); "
         "reconfigure with -DSPECLAB_NO_CUDA=OFF, with the CUDA toolkit installed, to build it";
#else
  return "this build of SpecLab has no CUDA backend (nvcc was not found when CMake configured "
         "it); install the CUDA toolkit and reconfigure";
#endif
}

std::unique_ptr<Target> make_cuda_llama(const std::string&, const CudaLlamaOptions&) {
  throw std::runtime_error("--device cuda: " + cuda_unavailable_reason());
}

}  // namespace speclab
