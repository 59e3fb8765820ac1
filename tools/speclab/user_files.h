#pragma once
// Files the user named on the command line (a prompt, a workload, an output path), with errors
// that name the flag or role, the path and the cause.
#include <cstddef>
#include <fstream>
#include <istream>
#include <string>
#include <utility>
#include <vector>

namespace speclab::cli {

// Opens `path` for reading, in binary mode. Throws UsageError "<what> '<path>' ..." saying
// whether it does not exist, is a directory, or cannot be read (then with the system's reason).
std::ifstream open_input_file(const std::string& path, const std::string& what);

// The most bytes a prompt or a chat message may hold: far more than any context holds (SmolLM2's
// 8192 tokens are about 40 KB of text), so more is a mistake (/dev/zero, the wrong file).
inline constexpr std::size_t kMaxInputBytes = std::size_t{16} << 20;

// Reads all of `in`. Throws UsageError "<named> holds more than N MiB" past `limit` bytes (read
// no further: /dev/zero ends there), and "<named>: reading it failed" on a read error.
std::string read_capped(std::istream& in, const std::string& named, std::size_t limit);

// Reads one line of `in` into `line`, without its '\n'; returns false at the end of the input
// (a last line without '\n' is still a line). Throws UsageError "<what> of more than N MiB" when
// the line passes `limit` bytes (an endless line is not read into memory).
bool read_line_capped(std::istream& in, std::string& line, const std::string& what,
                      std::size_t limit);

// Throws UsageError "<named>: standard input is a directory, not a file" when it is one (a shell's
// `< folder`), and "<named>: standard input is closed" when it is (`<&-`): reading either fails,
// and the failure used to read as empty input.
void require_stdin_not_a_folder(const std::string& named);

// "16 MiB" for 16 << 20.
std::string mib(std::size_t bytes);

// Checks, before any work is done, that `path` can be written later, and leaves nothing behind:
// throws UsageError "<what> '<path>' ..." when it is a directory or ends in '/', when its nearest
// existing parent is not a folder or no file can be created there (tried with a probe file that
// is removed at once), or when an existing file cannot be opened for writing. Leaves an existing
// file's contents alone. An empty `path` (the "do not write" value) is accepted.
void check_output_file(const std::string& path, const std::string& what);

// check_output_file() for each of `outputs` ({path, what}: "--csv", "--json", ...), after
// checking that no two of them name the same file, which the later write would overwrite, and
// that none lies inside another ("o/x.csv" and "o/x.csv/y.json": one would have to be a folder).
// Two paths are the same file as the system resolves them: "x", "./x" and "sub/../x", a link and
// its target. Throws UsageError naming both flags and paths. Creates nothing (open_output_file
// makes the folders when a file is written). Empty paths (not written) are skipped.
void check_output_files(const std::vector<std::pair<std::string, std::string>>& outputs);

// Whether paths a and b name one file: the same file where both exist, otherwise the same path
// as the system resolves it ("x", "./x" and "sub/../x", a link, even to a file not yet written,
// and its target).
bool same_file(const std::string& a, const std::string& b);

// Throws UsageError "<what_out> '<out>' is the input <what_in> '<in>' ..." when an output names
// the same file as an input (as check_output_files decides sameness): writing it would replace
// what the run reads (a workload, a prompt file, the model). Empty paths are skipped. Call it
// before the run, and before the model is loaded (a bad model file is then not the first error).
void check_outputs_spare_inputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                                const std::vector<std::pair<std::string, std::string>>& inputs);

// Opens `path` for writing (truncating it), creating missing parent folders. Throws UsageError
// as check_output_file does.
std::ofstream open_output_file(const std::string& path, const std::string& what);

}  // namespace speclab::cli
