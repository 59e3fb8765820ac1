#include "user_files.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    // The system's reason where it left one (permission denied, a loop of links), as an output
    // file's message gives it.
    throw UsageError(named + ": cannot open it for reading" +
                     (errno != 0 ? " (" + std::string(std::strerror(errno)) + ")" : ""));
  }
  return in;
}

std::string read_capped(std::istream& in, const std::string& named, std::size_t limit) {
  std::string out;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > limit) throw UsageError(named + " holds more than " + mib(limit));
  }
  if (in.bad()) throw UsageError(named + ": reading it failed");
  return out;
}

bool read_line_capped(std::istream& in, std::string& line, const std::string& what,
                      std::size_t limit) {
  line.clear();
  std::istream::sentry ok(in, true);  // no whitespace skipped
  if (!ok) return false;
  std::streambuf& sb = *in.rdbuf();
  for (;;) {
    const int c = sb.sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      if (line.empty()) in.setstate(std::ios::failbit);
      return !line.empty();
    }
    if (c == '\n') return true;
    line.push_back(static_cast<char>(c));
    if (line.size() > limit) throw UsageError(what + " of more than " + mib(limit));
  }
}

void require_stdin_not_a_folder(const std::string& named) {
  struct stat st {};
  errno = 0;
  if (::fstat(STDIN_FILENO, &st) != 0) {
    if (errno == EBADF) throw UsageError(named + ": standard input is closed (`<&-`?)");
    return;
  }
  if (S_ISDIR(st.st_mode)) throw UsageError(named + ": standard input is a directory, not a file");
}

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

namespace {

// The status of output `path`; throws UsageError when it names a folder: one that exists, or a
// name that ends in '/'.
fs::file_status refuse_folder(const std::string& path, const std::string& named) {
  if (path.ends_with('/')) {
    throw UsageError(named + " names a folder (it ends with '/'); give a file name");
  }
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::directory) {
    throw UsageError(named + " is a directory, not a file");
  }
  return st;
}

// refuse_folder(), then creates the missing parent folders.
void prepare_output_path(const std::string& path, const std::string& named) {
  refuse_folder(path, named);
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) {
      throw UsageError(named + ": cannot create its folder '" + parent.string() +
                       "': " + ec.message());
    }
  }
}

std::string open_failure(const std::string& named) {
  return named + ": cannot open it for writing (" + std::strerror(errno) + ")";
}

}  // namespace

void check_output_file(const std::string& path, const std::string& what) {
  if (path.empty()) return;
  const std::string named = what + " '" + path + "'";
  const fs::file_status st = refuse_folder(path, named);
  if (st.type() != fs::file_type::not_found) {
    errno = 0;
    std::ofstream probe(path, std::ios::app);  // append: an existing file keeps its contents
    if (!probe) throw UsageError(open_failure(named));
    return;
  }
  // A new file: its nearest existing folder must be a folder we can write in. Nothing is
  // created now (a run refused later must leave nothing behind); the write creates the rest.
  std::error_code ec;
  fs::path folder = fs::absolute(path, ec).parent_path();
  while (!folder.empty() && !fs::exists(fs::symlink_status(folder, ec)) &&
         folder != folder.root_path()) {
    folder = folder.parent_path();
  }
  const fs::file_status fst = fs::status(folder, ec);
  if (fst.type() != fs::file_type::directory) {
    throw UsageError(named + ": cannot create it: '" + folder.string() + "' is not a folder");
  }
  // Whether a file can be made there is known by making one: access() says yes to root
  // everywhere, /proc included. The probe is removed at once.
  const std::string probe = (folder / ".speclab-probe-XXXXXX").string();
  std::vector<char> name(probe.begin(), probe.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw UsageError(named + ": cannot create it in '" + folder.string() + "' (" +
                     std::strerror(errno) + ")");
  }
  ::close(fd);
  ::unlink(name.data());
}

namespace {

// `path` as the system resolves it when the file is opened: absolute, with ".", ".." and the
// links of the part that exists resolved, and a last link followed even when what it names does
// not exist yet (opening it for writing creates that).
fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) return fs::path(path).lexically_normal();
  for (int hops = 0; hops < 40; ++hops) {  // 40: the kernel's own limit on links in a path
    const fs::path canonical = fs::weakly_canonical(p, ec);
    p = ec ? p.lexically_normal() : canonical;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) break;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) break;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return p;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) || resolved(a) == resolved(b);
}

void check_outputs_spare_inputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                                const std::vector<std::pair<std::string, std::string>>& inputs) {
  for (const auto& [out, what_out] : outputs) {
    for (const auto& [in, what_in] : inputs) {
      if (out.empty() || in.empty() || !same_file(out, in)) continue;
      throw UsageError(what_out + " '" + out + "' is the input " + what_in + " '" + in +
                       "': writing it would replace what this run reads; give another path");
    }
  }
}

namespace {

// Whether resolved path `inner` lies inside the folder `outer` names ("o/a.csv/b.json" inside
// "o/a.csv"), `outer` itself excluded.
bool lies_inside(const fs::path& outer, const fs::path& inner) {
  auto o = outer.begin();
  auto i = inner.begin();
  for (; o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *o != *i) return false;
  }
  return i != inner.end();
}

}  // namespace

void check_output_files(const std::vector<std::pair<std::string, std::string>>& outputs) {
  const auto each_pair = [&](const auto& check) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      for (size_t j = i + 1; j < outputs.size(); ++j) {
        if (!outputs[i].first.empty() && !outputs[j].first.empty()) check(outputs[i], outputs[j]);
      }
    }
  };
  each_pair([](const auto& first, const auto& second) {
    const auto& [a, what_a] = first;
    const auto& [b, what_b] = second;
    if (!same_file(a, b)) return;
    throw UsageError(what_a + " '" + a + "' and " + what_b + " '" + b + "' are the same file (" +
                     resolved(a).string() + "): the " + what_b + " output would overwrite the " +
                     what_a + " output; give two different paths, or '' to leave one out");
  });
  for (const auto& [path, what] : outputs) check_output_file(path, what);
  // One inside the other ("--csv o/x.csv --json o/x.csv/y.json"): each passed its own check
  // while neither existed, and the run ended in a failed write, with nothing written and the
  // folder made for one of them left behind.
  each_pair([](const auto& first, const auto& second) {
    const fs::path ra = resolved(first.first);
    const fs::path rb = resolved(second.first);
    const bool second_inside = lies_inside(ra, rb);
    if (!second_inside && !lies_inside(rb, ra)) return;
    const auto& [file, what_file] = second_inside ? first : second;
    const auto& [inner, what_inner] = second_inside ? second : first;
    throw UsageError(what_inner + " '" + inner + "' lies inside " + what_file + " '" + file +
                     "', which names a file: both cannot be written; give paths where neither "
                     "is inside the other");
  });
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
