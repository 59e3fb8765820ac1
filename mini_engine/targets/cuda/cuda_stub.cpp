// The CUDA backend's entry points in a build without nvcc: they exist, and say so.
#include <stdexcept>

#include "mini_engine/targets/cuda/cuda_llama.h"

namespace speclab {

bool cuda_backend_built() { return false; }

std::string cuda_unavailable_reason() {
  return "this build of SpecLab has no CUDA backend (nvcc was not found when CMake configured "
         "it); install the CUDA toolkit and reconfigure";
}

std::unique_ptr<Target> make_cuda_llama(const std::string&, const CudaLlamaOptions&) {
  throw std::runtime_error("--device cuda: " + cuda_unavailable_reason());
}

}  // namespace speclab
