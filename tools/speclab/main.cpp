// speclab: the command-line front end. Subcommands live in their own files; the flags they share
// are built in factory.cpp. This main() is linked twice: into speclab-solution (the labs'
// reference solutions) and speclab-starter (the student's starters). build/bin/speclab picks one
// by LAB_IMPL (launcher.cpp).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "commands.h"
#include "factory.h"

int main(int argc, char** argv) {
  using namespace speclab::cli;
  const std::string impl = lab_impl();
  CLI::App app{
      "speclab: n-gram speculative decoding, from the SpecLab course.\n"
      "Drafters and verify rules: the labs' " +
          std::string(impl == "starter" ? "starters (your code)" : "reference solutions") +
          " (LAB_IMPL=" + impl + ").",
      "speclab"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "speclab 0.1.0 (LAB_IMPL=" + impl + ")");
  add_demo(app);
  add_generate(app);
  add_chat(app);
  add_bench(app);
  add_trace(app);
  std::string names;  // "demo, generate, chat, bench, trace"
  for (CLI::App* sub : app.get_subcommands({})) {
    sub->footer("Drafters and verify rules come from LAB_IMPL=" + impl + ".");
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  // CLI11 takes a mistyped subcommand for a stray argument and says only "A subcommand is
  // required": name the word and the choices instead.
  if (argc > 1 && argv[1][0] != '-' &&
      app.get_subcommands([&](CLI::App* sub) { return sub->check_name(argv[1]); }).empty()) {
    std::fprintf(stderr, "speclab: error: %s\n",
                 UsageError(std::string("unknown subcommand '") + argv[1] +
                            "'; the subcommands are " + names + " (speclab --help)")
                     .what());
    return 2;
  }
  // An option before the subcommand that speclab itself does not take ("speclab --model toy
  // generate"): CLI11 said only "A subcommand is required". Name it, and where options go.
  if (argc > 1 && argv[1][0] == '-' &&
      app.get_option_no_throw(std::string(argv[1]).substr(0, std::string(argv[1]).find('='))) ==
          nullptr) {
    std::fprintf(stderr,
                 "speclab: error: unknown option '%s': speclab takes only --help and --version "
                 "before the subcommand (%s), and the subcommand's options after it "
                 "(speclab SUBCOMMAND --help)\n",
                 argv[1], names.c_str());
    return 2;
  }
  // CLI11 reads "--csv=" as "--csv" with its value still to come, and takes the next word for
  // it: "--csv= --json=" wrote a file named "--json=". "--name=" is "--name ''", unless --name
  // takes no value at all, which is said by name (CLI11 said "The following argument was not
  // expected: " and named nothing).
  std::vector<std::string> words(argv, argv + argc);
  std::vector<std::string> split;
  const std::vector<CLI::App*> named =
      argc > 1 ? app.get_subcommands([&](CLI::App* s) { return s->check_name(argv[1]); })
               : std::vector<CLI::App*>{};
  const CLI::App* sub = named.empty() ? nullptr : named.front();
  for (const std::string& w : words) {
    if (w.size() > 3 && w.starts_with("--") && w.find('=') == w.size() - 1) {
      const std::string name = w.substr(0, w.size() - 1);
      const CLI::Option* opt = sub != nullptr ? sub->get_option_no_throw(name) : nullptr;
      if (opt != nullptr && opt->get_expected_max() == 0) {  // a flag
        std::fprintf(stderr, "speclab: error: %s takes no value, got '%s'\n", name.c_str(),
                     w.c_str());
        return 2;
      }
      split.push_back(name);
      split.emplace_back();
    } else {
      split.push_back(w);
    }
  }
  std::vector<char*> args;
  for (std::string& w : split) args.push_back(w.data());
  // Text, tables, answers and --help that never reached the standard output (a full disk, a
  // closed file) are a failed run, not a success. The error flag stays set from any earlier
  // write; errno names the cause only when this flush failed (an earlier write's errno is gone).
  const auto output_failed = [] {
    errno = 0;
    if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return false;
    std::fprintf(stderr, "speclab: error: writing to the standard output failed%s%s\n",
                 errno != 0 ? ": " : "", errno != 0 ? std::strerror(errno) : "");
    return true;
  };
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::RuntimeError& e) {  // a subcommand's own failure (bench: outputs differ)
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    // app.exit prints --help or --version (status 0), or the error and a pointer to --help.
    // Every parse error is bad input, so it exits 2 like a UsageError (not CLI11's own codes).
    if (app.exit(e) != 0) return 2;
    return output_failed() ? 1 : 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "speclab: error: %s\n", e.what());
    return 2;
  } catch (const speclab::TodoError& e) {
    std::fprintf(stderr,
                 "speclab: your starter is not finished: %s\n"
                 "  (LAB_IMPL=starter runs labs/*/starter.cpp; unset LAB_IMPL to run the "
                 "reference solutions)\n",
                 e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    // Its what() is "std::bad_alloc" alone: say what it means and what limits memory.
    std::fprintf(stderr,
                 "speclab: error: out of memory (an allocation failed): the model and its KV cache "
                 "need a few hundred MB; check `ulimit -v` and the memory free\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "speclab: error: %s\n", e.what());
    return 1;
  }
  return output_failed() ? 1 : 0;
}
