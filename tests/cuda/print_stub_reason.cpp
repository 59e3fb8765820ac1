// Prints the CUDA stub's cuda_unavailable_reason(): tests/CMakeLists.txt builds it with the stub
// compiled both ways (nvcc missing, or the backend left out with -DSPECLAB_NO_CUDA=ON).
#include <cstdio>

#include "mini_engine/targets/cuda/cuda_llama.h"

int main() {
  std::printf("%s\n", speclab::cuda_unavailable_reason().c_str());
  return speclab::cuda_backend_built() ? 1 : 0;
}
