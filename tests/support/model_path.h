#pragma once
// Where the real model file is, for tests that need it (they skip when it is absent).
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace speclab::testing {

// The SmolLM2-135M-Instruct GGUF: $SPECLAB_MODEL if set, else
// ($SPECLAB_CACHE or ~/.cache/speclab)/SmolLM2-135M-Instruct.Q4_1.gguf; nullopt when that file
// does not exist (tools/fetch_model downloads it).
inline std::optional<std::string> find_smollm2() {
  namespace fs = std::filesystem;
  std::string path;
  if (const char* m = std::getenv("SPECLAB_MODEL"); m && *m) {
    path = m;
  } else {
    std::string dir;
    if (const char* c = std::getenv("SPECLAB_CACHE"); c && *c) {
      dir = c;
    } else if (const char* h = std::getenv("HOME"); h && *h) {
      dir = std::string(h) + "/.cache/speclab";
    } else {
      return std::nullopt;
    }
    path = dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  }
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  return path;
}

}  // namespace speclab::testing
