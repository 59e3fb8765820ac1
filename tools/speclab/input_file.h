#pragma once
// Opening a file the user named (a prompt, a workload) with an error that names the cause.
#include <fstream>
#include <string>

namespace speclab::cli {

// Opens `path` for reading, in binary mode. Throws UsageError "<what> '<path>' ..." saying
// whether it does not exist, is a directory, or cannot be read.
std::ifstream open_input_file(const std::string& path, const std::string& what);

}  // namespace speclab::cli
