#include "output_file.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <stdexcept>

#include "user_files.h"

namespace speclab::cli {
namespace {

namespace fs = std::filesystem;

// A name beside `target` that no file has yet, for a file being written:
// "<target>.partial-<pid>", with "-2", "-3"... added while that is taken, so that no file of the
// user's is overwritten or removed.
std::string partial_name(const std::string& target) {
  const std::string base = target + ".partial-" + std::to_string(::getpid());
  std::string name = base;
  std::error_code ec;
  for (int n = 2; fs::exists(fs::symlink_status(name, ec)); ++n) {
    name = base + "-" + std::to_string(n);
  }
  return name;
}

// The scratch files of the OutputFiles alive now. While one is listed, SIGINT (Ctrl-C), SIGTERM
// and SIGHUP first remove every listed file, then end the program as the signal would have.
constexpr int kSlots = 8;
const char* volatile g_scratch[kSlots] = {};
int g_listed = 0;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_earlier[std::size(kSignals)];

void remove_scratch_and_raise(int sig) {  // only async-signal-safe calls
  for (const char* volatile& path : g_scratch) {
    if (path != nullptr) ::unlink(path);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when this handler returns
}

int list_scratch(const char* path) {
  for (int i = 0; i < kSlots; ++i) {
    if (g_scratch[i] != nullptr) continue;
    if (g_listed++ == 0) {
      struct sigaction action {};
      action.sa_handler = &remove_scratch_and_raise;
      sigemptyset(&action.sa_mask);
      for (size_t s = 0; s < std::size(kSignals); ++s) {
        sigaction(kSignals[s], &action, &g_earlier[s]);
      }
    }
    g_scratch[i] = path;
    return i;
  }
  throw std::logic_error("OutputFile: more than 8 open at a time");
}

void unlist_scratch(int slot) {
  g_scratch[slot] = nullptr;
  if (--g_listed == 0) {
    for (size_t s = 0; s < std::size(kSignals); ++s) sigaction(kSignals[s], &g_earlier[s], nullptr);
  }
}

}  // namespace

OutputFile::OutputFile(const std::string& path, const std::string& what)
    : path_(path), what_(what) {
  std::error_code ec;
  const fs::file_type type = fs::status(path, ec).type();
  if (type == fs::file_type::regular || type == fs::file_type::not_found) {
    check_output_file(path, what);  // its errors name the user's path, not the scratch file's
    const fs::path real = fs::weakly_canonical(path, ec);
    target_ = ec ? path : real.string();
    partial_ = partial_name(target_);
    slot_ = list_scratch(partial_.c_str());
  }
  // The folders open_output_file() is about to make, deepest first, to be removed if the file
  // is not committed.
  for (fs::path dir = fs::path(path).parent_path();
       !dir.empty() && fs::status(dir, ec).type() == fs::file_type::not_found;
       dir = dir.parent_path()) {
    made_folders_.push_back(dir.string());
    if (dir == dir.parent_path()) break;
  }
  try {
    out_ = open_output_file(partial_.empty() ? path : partial_, what);
  } catch (...) {
    discard();
    throw;
  }
  // The scratch file replaces the user's: it takes that file's permissions, or a trace kept
  // private (chmod 600) came back readable by everyone (0644, from the umask).
  if (type == fs::file_type::regular) {
    std::error_code perms_ec;
    const fs::perms perms = fs::status(target_, perms_ec).permissions();
    if (!perms_ec) fs::permissions(partial_, perms, perms_ec);
  }
}

OutputFile::~OutputFile() {
  if (!committed_) discard();
}

void OutputFile::discard() {
  if (out_.is_open()) out_.close();
  if (!partial_.empty()) {
    std::error_code ec;
    fs::remove(partial_, ec);
  }
  if (slot_ >= 0) unlist_scratch(slot_);
  slot_ = -1;
  for (const std::string& dir : made_folders_) {
    std::error_code ec;
    fs::remove(dir, ec);  // only while empty: a file put there meanwhile keeps it
  }
  made_folders_.clear();
}

void OutputFile::fail(const std::string& cause) {
  discard();
  committed_ = true;  // nothing is left to remove
  throw std::runtime_error(what_ + ": writing '" + path_ + "' failed" + cause);
}

void OutputFile::finish() {
  if (!out_.is_open()) return;
  out_.close();  // a full disk shows only when the buffer is flushed
  if (!out_) fail("");
}

void OutputFile::commit() {
  finish();
  if (!partial_.empty()) {
    std::error_code ec;
    fs::rename(partial_, target_, ec);
    if (ec) fail(" (" + ec.message() + ")");
  }
  if (slot_ >= 0) unlist_scratch(slot_);
  slot_ = -1;
  committed_ = true;
}

void write_outputs(const std::vector<OutputWriter>& outputs) {
  std::vector<std::unique_ptr<OutputFile>> files;
  for (const OutputWriter& o : outputs) {
    if (o.path.empty()) continue;
    files.push_back(std::make_unique<OutputFile>(o.path, o.what));
    o.write(files.back()->stream());
    files.back()->finish();
  }
  for (auto& f : files) f->commit();
}

}  // namespace speclab::cli
