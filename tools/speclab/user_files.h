#pragma once
// Files the user named on the command line (a prompt, a workload, an output path), with errors
// that name the flag or role, the path and the cause.
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace speclab::cli {

// Opens `path` for reading, in binary mode. Throws UsageError "<what> '<path>' ..." saying
// whether it does not exist, is a directory, or cannot be read.
std::ifstream open_input_file(const std::string& path, const std::string& what);

// Checks, before any work is done, that `path` can be written later: creates its missing parent
// folders, and throws UsageError "<what> '<path>' ..." when it is a directory, a parent is not a
// folder, or the file cannot be opened for writing. Leaves an existing file's contents alone and
// no new file behind. An empty `path` (the "do not write" value) is accepted.
void check_output_file(const std::string& path, const std::string& what);

// check_output_file() for each of `outputs` ({path, what}: "--csv", "--json", ...), after
// checking that no two of them name the same file, which the later write would overwrite. Two
// paths are the same file as the system resolves them: "x", "./x" and "sub/../x", a link and its
// target. Throws UsageError naming both flags and paths; checks the pairs before it creates any
// folder. Empty paths (not written) are skipped.
void check_output_files(const std::vector<std::pair<std::string, std::string>>& outputs);

// Opens `path` for writing (truncating it), creating missing parent folders. Throws UsageError
// as check_output_file does.
std::ofstream open_output_file(const std::string& path, const std::string& what);

}  // namespace speclab::cli
