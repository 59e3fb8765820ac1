// cuda_llama.h for the speclab CLI: loads the CUDA backend as a plugin (cuda_plugin.h) on first
// use. Where it looks, in order: $SPECLAB_CUDA_BACKEND (a path to the plugin), the running
// program's own folder, then where this build put it (SPECLAB_CUDA_BACKEND_PATH).
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini_engine/targets/cuda/cuda_plugin.h"

#ifndef SPECLAB_CUDA_BACKEND_PATH
#error "SPECLAB_CUDA_BACKEND_PATH must name libspeclab_cuda_backend.so (set by CMake)"
#endif

namespace speclab {
namespace {

constexpr char kPluginName[] = "libspeclab_cuda_backend.so";

struct Loaded {
  const CudaBackendTable* table = nullptr;
  std::string error;  // why table is null
};

std::vector<std::string> candidates() {
  if (const char* env = std::getenv("SPECLAB_CUDA_BACKEND"); env && *env) return {env};
  std::vector<std::string> out;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir.resize(dir.rfind('/') + 1);
    out.push_back(dir + kPluginName);
  }
  out.emplace_back(SPECLAB_CUDA_BACKEND_PATH);
  return out;
}

Loaded load() {
  std::string tried;
  for (const std::string& path : candidates()) {
    if (access(path.c_str(), F_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + path + " (missing)";
      continue;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return {nullptr, "the CUDA backend " + path + " could not be loaded: " + dlerror()};
    using Entry = const CudaBackendTable* (*)();
    const auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaBackendSymbol));
    if (!entry)
      return {nullptr, path + " is not a SpecLab CUDA backend (no " + kCudaBackendSymbol + ")"};
    const CudaBackendTable* table = entry();
    if (!table || table->version != kCudaBackendVersion) {
      return {nullptr, path + " was built by another version of SpecLab; rebuild it"};
    }
    return {table, ""};  // the plugin stays loaded until the program exits
  }
  return {nullptr, "the CUDA backend library was not found (looked for " + tried + ")"};
}

const Loaded& backend() {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}

}  // namespace

bool cuda_backend_built() { return true; }

std::string cuda_unavailable_reason() {
  const Loaded& b = backend();
  return b.table ? b.table->unavailable_reason() : b.error;
}

std::unique_ptr<Target> make_cuda_llama(const std::string& gguf_path,
                                        const CudaLlamaOptions& options) {
  const Loaded& b = backend();
  if (!b.table) throw std::runtime_error("--device cuda: " + b.error);
  return std::unique_ptr<Target>(b.table->make(gguf_path, options));
}

}  // namespace speclab
