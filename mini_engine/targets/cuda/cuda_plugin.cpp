// libspeclab_cuda_backend.so: the CUDA backend (cuda_llama.cu) behind the table of cuda_plugin.h.
#include "mini_engine/targets/cuda/cuda_plugin.h"

namespace {

speclab::Target* make(const std::string& gguf_path, const speclab::CudaLlamaOptions& options) {
  return speclab::make_cuda_llama(gguf_path, options).release();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const speclab::CudaBackendTable*
speclab_cuda_backend() {
  static const speclab::CudaBackendTable table{speclab::kCudaBackendVersion,
                                               &speclab::cuda_unavailable_reason, &make};
  return &table;
}
