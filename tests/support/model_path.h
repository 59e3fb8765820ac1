#pragma once
// Where the real model file is, for tests that need it (tokenizer, CpuLlama). Tests call
// speclab::testing::skip(...) with the reason when it is absent, so a machine without the model
// reports SKIPPED, never passed. tools/fetch_model downloads it into the cache.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace speclab::testing {

inline constexpr const char* kSmolLM2File = "SmolLM2-135M-Instruct.Q4_1.gguf";

// $SPECLAB_MODEL if set (it must exist), else $SPECLAB_CACHE/<file>, else ~/.cache/speclab/<file>.
inline std::optional<std::string> find_smollm2() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* explicit_path = std::getenv("SPECLAB_MODEL"); explicit_path && *explicit_path) {
    if (fs::is_regular_file(explicit_path, ec)) return std::string(explicit_path);
    return std::nullopt;
  }
  fs::path dir;
  if (const char* cache = std::getenv("SPECLAB_CACHE"); cache && *cache) {
    dir = cache;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = fs::path(home) / ".cache" / "speclab";
  } else {
    return std::nullopt;
  }
  const fs::path file = dir / kSmolLM2File;
  if (fs::is_regular_file(file, ec)) return file.string();
  return std::nullopt;
}

// The reason to give when find_smollm2() finds nothing.
inline std::string smollm2_missing_reason() {
  return std::string("model file ") + kSmolLM2File +
         " not found (set SPECLAB_MODEL, or run tools/fetch_model to cache it in "
         "$SPECLAB_CACHE or ~/.cache/speclab)";
}

}  // namespace speclab::testing
