// build/bin/speclab: runs the CLI with the lab implementations LAB_IMPL selects.
//
//   LAB_IMPL unset or "solution"  ->  speclab-solution (the reference solutions; always built)
//   LAB_IMPL=starter              ->  speclab-starter (the student's labs/*/starter.cpp), brought
//                                     up to date with `cmake --build` first, so an edit is picked
//                                     up at once, as ctest does for the lab tests
// Anything else is an error that lists the valid values. Both binaries sit next to this one.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

fs::path own_directory(const char* argv0) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv0);
  return self.parent_path();
}

// Runs `cmake --build <build_dir> --target <target>` with its output in `log`. Says what it is
// doing on stderr only when the build takes long enough for a user to wonder. Returns the status.
int build_target(const fs::path& build_dir, const std::string& target, const fs::path& log) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    const std::string dir = build_dir.string();
    execlp("cmake", "cmake", "--build", dir.c_str(), "--target", target.c_str(),
           static_cast<char*>(nullptr));
    std::perror("cmake");
    _exit(127);
  }
  int status = 0;
  const auto start = std::chrono::steady_clock::now();
  bool announced = false;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (!announced && std::chrono::steady_clock::now() - start > std::chrono::seconds(2)) {
      std::fprintf(stderr,
                   "speclab: LAB_IMPL=starter: building your starters (cmake --build %s "
                   "--target %s)...\n",
                   build_dir.c_str(), target.c_str());
      announced = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("LAB_IMPL");
  const std::string impl = env == nullptr || env[0] == '\0' ? "solution" : env;
  if (impl != "solution" && impl != "starter") {
    std::fprintf(stderr,
                 "speclab: LAB_IMPL='%s' is not valid; valid values: solution (the default: the "
                 "reference solutions), starter (your labs/*/starter.cpp)\n",
                 impl.c_str());
    return 2;
  }
  const fs::path dir = own_directory(argv[0]);
  const fs::path exe = dir / ("speclab-" + impl);
  const fs::path build_dir = dir.parent_path();
  const bool in_build_tree = fs::exists(build_dir / "CMakeCache.txt");

  if (impl == "starter" && in_build_tree) {
    const fs::path log = build_dir / "speclab-starter-build.log";
    const int rc = build_target(build_dir, "speclab-starter", log);
    if (rc != 0) {
      std::ifstream in(log);
      std::cerr << in.rdbuf();
      std::fprintf(stderr,
                   "\nspeclab: LAB_IMPL=starter: building speclab-starter failed (see above); fix "
                   "the compile error in your starter, or unset LAB_IMPL to run the reference "
                   "solutions\n");
      return 1;
    }
  }
  std::vector<char*> args(argv, argv + argc);
  args.push_back(nullptr);
  const std::string path = exe.string();
  execv(path.c_str(), args.data());
  std::fprintf(stderr,
               "speclab: cannot run %s: %s\n  build it with: cmake --build %s --target %s\n",
               path.c_str(), std::strerror(errno), build_dir.c_str(), exe.filename().c_str());
  return 1;
}
