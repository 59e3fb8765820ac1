#pragma once
// Output files written whole or not at all: bench's --csv, --json and --tokens, trace's --out.
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace speclab::cli {

// The file the user named at `path`, opened for writing. A regular file, or one not there yet, is
// written to a scratch file beside it (beside the file a link names), "<path>.partial-<pid>", that
// commit() renames over it: a run that fails, throws or is interrupted by SIGINT, SIGTERM or SIGHUP
// leaves `path` as it was and no scratch file. A file that exists keeps its permissions. Anything
// else (/dev/null, a pipe, a terminal) is opened once and written directly, since a rename would
// replace the device or the pipe itself. Folders it makes for `path` are removed again, if still
// empty, when the file is not committed. Requires `path` to have passed check_output_file(). Not
// copyable; at most 8 live at a time.
class OutputFile {
 public:
  // Opens it, creating missing parent folders. Throws UsageError as open_output_file() does.
  OutputFile(const std::string& path, const std::string& what);
  ~OutputFile();  // not committed: the scratch file is removed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream() { return out_; }
  // Flushes and closes the file, without renaming it yet. Throws std::runtime_error "<what>:
  // writing '<path>' failed" when a write failed (a full disk shows only when the buffer is
  // flushed); the scratch file is then removed.
  void finish();
  // finish(), then renames the scratch file over `path`. Throws std::runtime_error as finish()
  // does, or "<what>: writing '<path>' failed (<cause>)" when the rename fails; `path` is then
  // unchanged and the scratch file removed.
  void commit();

 private:
  void discard();
  [[noreturn]] void fail(const std::string& cause);

  std::string path_;     // as the user gave it, for messages
  std::string what_;     // the flag, for messages
  std::string target_;   // what the scratch file is renamed to; empty: written directly
  std::string partial_;  // the scratch file; empty: written directly
  int slot_ = -1;        // this file's entry in the signal handler's list, or -1
  std::vector<std::string> made_folders_;  // the folders opening it made, deepest first
  std::ofstream out_;
  bool committed_ = false;
};

// One file of write_outputs(): where, the flag that named it, and what writes its contents.
struct OutputWriter {
  std::string path;  // empty: not written
  std::string what;  // "--csv", ...
  std::function<void(std::ostream&)> write;
};

// Writes each of `outputs` with its writer, then renames them all into place: a write that
// fails (or a writer that throws) leaves every one of them as it was. Throws what OutputFile
// throws, or the writer's exception.
void write_outputs(const std::vector<OutputWriter>& outputs);

}  // namespace speclab::cli
