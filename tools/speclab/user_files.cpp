#include "user_files.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "text.h"

namespace speclab::cli {

namespace fs = std::filesystem;

std::ifstream open_input_file(const std::string& path, const std::string& what) {
  const std::string named = what + " '" + path + "'";
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) {
    throw UsageError(named + ": no such file");
  }
  if (st.type() == fs::file_type::directory) {
    throw UsageError(named + " is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(named + ": cannot open it for reading");
  return in;
}

namespace {

// Refuses a directory and creates the missing parent folders; returns whether the file exists.
bool prepare_output_path(const std::string& path, const std::string& named) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::directory) {
    throw UsageError(named + " is a directory, not a file");
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) {
      throw UsageError(named + ": cannot create its folder '" + parent.string() +
                       "': " + ec.message());
    }
  }
  return st.type() != fs::file_type::not_found;
}

std::string open_failure(const std::string& named) {
  return named + ": cannot open it for writing (" + std::strerror(errno) + ")";
}

}  // namespace

void check_output_file(const std::string& path, const std::string& what) {
  if (path.empty()) return;
  const std::string named = what + " '" + path + "'";
  const bool existed = prepare_output_path(path, named);
  errno = 0;
  {
    std::ofstream probe(path, std::ios::app);  // append: an existing file keeps its contents
    if (!probe) throw UsageError(open_failure(named));
  }
  if (!existed) {
    std::error_code ec;
    fs::remove(path, ec);  // the real write comes after the run
  }
}

namespace {

// `path` as the system resolves it when the file is opened: absolute, with ".", ".." and the
// links of the part that exists resolved.
fs::path resolved(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  if (ec) return fs::path(path).lexically_normal();
  const fs::path canonical = fs::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : canonical;
}

}  // namespace

void check_output_files(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [a, what_a] = outputs[i];
      const auto& [b, what_b] = outputs[j];
      if (a.empty() || b.empty()) continue;
      std::error_code ec;
      const bool same = fs::equivalent(a, b, ec) || resolved(a) == resolved(b);
      if (!same) continue;
      throw UsageError(what_a + " '" + a + "' and " + what_b + " '" + b + "' are the same file (" +
                       resolved(a).string() + "): the " + what_b + " output would overwrite the " +
                       what_a + " output; give two different paths, or '' to leave one out");
    }
  }
  for (const auto& [path, what] : outputs) check_output_file(path, what);
}

std::ofstream open_output_file(const std::string& path, const std::string& what) {
  const std::string named = what + " '" + path + "'";
  prepare_output_path(path, named);
  errno = 0;
  std::ofstream out(path);
  if (!out) throw UsageError(open_failure(named));
  return out;
}

}  // namespace speclab::cli
