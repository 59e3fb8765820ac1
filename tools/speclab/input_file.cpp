#include "input_file.h"

#include <filesystem>
#include <system_error>

#include "text.h"

namespace speclab::cli {

std::ifstream open_input_file(const std::string& path, const std::string& what) {
  const std::string named = what + " '" + path + "'";
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) {
    throw UsageError(named + ": no such file");
  }
  if (st.type() == std::filesystem::file_type::directory) {
    throw UsageError(named + " is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(named + ": cannot open it for reading");
  return in;
}

}  // namespace speclab::cli
