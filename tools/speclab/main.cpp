// speclab: the command-line front end. Subcommands live in their own files; the flags they share
// are built in factory.cpp. This main() is linked twice: into speclab-solution (the labs'
// reference solutions) and speclab-starter (the student's starters). build/bin/speclab picks one
// by LAB_IMPL (launcher.cpp).
#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "commands.h"
#include "factory.h"

namespace {

// The option of `sub` that `name` misspells by case or by '_' for '-', or nullptr.
const CLI::Option* near_option(const CLI::App& sub, std::string name) {
  // "--max_new_tokens", "--K": the same name with '-' for '_' and in lower case.
  for (char& c : name) c = c == '_' ? '-' : static_cast<char>(std::tolower(c));
  return sub.get_option_no_throw(name);
}

// What to say for a CLI11 parse error whose own message does not name the problem, or "" to let
// CLI11 say it. An option the subcommand does not take: CLI11 listed the words it had not used
// backwards ("The following arguments were not expected: 5 --K") and never said "unknown
// option". An option given twice: "--k: At Most 1 required but received 2".
std::string plainer_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<CLI::App*> subs = app.get_subcommands();
  const CLI::App* sub = subs.empty() ? nullptr : subs.front();
  const std::string command = sub ? "speclab " + sub->get_name() : std::string("speclab");
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    const std::vector<std::string> extra = app.remaining(true);  // in the order given
    if (extra.empty()) return {};
    const std::string& word = extra.front();
    const std::string name = word.substr(0, word.find('='));
    // An option's own name is left over only after "--", where every word is an argument.
    const bool an_option = sub != nullptr && sub->get_option_no_throw(name) != nullptr;
    if (word.size() > 1 && word[0] == '-' && !an_option) {
      std::string hint;
      const CLI::Option* near = sub ? near_option(*sub, name) : nullptr;
      if (near != nullptr && !near->get_name().empty()) {
        hint = "; did you mean " + near->get_name() + "?";
      }
      return "unknown option '" + name + "' for " + command + hint + " (" + command +
             " --help lists its options)";
    }
    return "unexpected argument '" + word + "': " + command +
           " takes options only, each with its value (" + command +
           " --help lists them; quote a value that holds spaces)";
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    const std::string what = e.what();
    const std::string at_most = ": At Most 1 required but received ";
    const size_t at = what.find(at_most);
    if (at != std::string::npos && at > 0) {
      return what.substr(0, at) + " is given " + what.substr(at + at_most.size()) +
             " times; give it once";
    }
  }
  return {};
}

}  // namespace

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
    if (const std::string plainer = plainer_parse_error(app, e); !plainer.empty()) {
      std::fprintf(stderr, "speclab: error: %s\nRun with --help for more information.\n",
                   plainer.c_str());
      return 2;
    }
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
