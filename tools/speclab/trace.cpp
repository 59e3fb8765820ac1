// `speclab trace`: one JSON line per verify round of a speculative run, for plots and debugging.
// The fields of each line: trace_record.h. Any model, drafter and verify rule the other
// subcommands take works here (factory.h).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "factory.h"
#include "prompt.h"
#include "trace_record.h"
#include "user_files.h"

namespace speclab::cli {
namespace {

struct TraceOptions {
  TargetOptions target;
  DrafterOptions drafter;
  DecodeOptions decode;
  PromptOptions prompt;
  std::string out;  // "-" = standard output
};

// A name beside `target` that no file has yet, for the lines of a run in progress:
// "<target>.partial-<pid>", with "-2", "-3"... added while that is taken, so that no file of the
// user's is overwritten or removed.
std::string partial_name(const std::string& target) {
  namespace fs = std::filesystem;
  const std::string base = target + ".partial-" + std::to_string(::getpid());
  std::string name = base;
  std::error_code ec;
  for (int n = 2; fs::exists(fs::symlink_status(name, ec)); ++n) {
    name = base + "-" + std::to_string(n);
  }
  return name;
}

// While one lives, SIGINT (Ctrl-C), SIGTERM and SIGHUP first remove `path`, then end the program
// as the signal would have: an interrupted run leaves no scratch file behind. The destructor puts
// the earlier handlers back. One at a time; `path` must outlive it.
class RemoveOnSignal {
 public:
  explicit RemoveOnSignal(const std::string& path) {
    path_ = path.c_str();
    struct sigaction action {};
    action.sa_handler = &RemoveOnSignal::handle;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &action, &earlier_[i]);
  }
  ~RemoveOnSignal() {
    for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &earlier_[i], nullptr);
    path_ = nullptr;
  }
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;

 private:
  static constexpr int kCount = 3;
  static constexpr int kSignals[kCount] = {SIGINT, SIGTERM, SIGHUP};
  static inline const char* volatile path_ = nullptr;

  static void handle(int sig) {  // only async-signal-safe calls
    if (path_ != nullptr) ::unlink(path_);
    ::signal(sig, SIG_DFL);
    ::raise(sig);  // delivered when this handler returns
  }

  struct sigaction earlier_[kCount];
};

void run_trace(const TraceOptions& o) {
  if (o.out.empty()) throw UsageError("--out '': give a file, or - for standard output");
  if (o.out != "-") {  // the trace must not land on what the run reads
    check_outputs_spare_inputs(
        {{o.out, "--out"}},
        {{model_file_given(o.target), "--model"},
         {o.prompt.prompt_file == "-" ? std::string() : o.prompt.prompt_file, "--prompt-file"}});
  }
  OnePromptRun run = prepare_one_prompt_run(o.target, o.drafter, o.decode, o.prompt);

  // The lines go to a file beside --out (beside the file a link names), renamed over it once
  // the run is done: a run that fails half-way leaves --out as it was (an earlier trace is not
  // lost) and nothing half-written. Anything but a regular file (/dev/null, a pipe) is written
  // directly: a rename would replace the device or the pipe itself.
  namespace fs = std::filesystem;
  std::ofstream file;
  std::ostream* out = &std::cout;
  std::string target = o.out;  // what the partial file is renamed to; "" = written directly
  std::string partial;         // the file the lines go to until then
  if (o.out != "-") {
    std::error_code ec;
    const fs::file_type type = fs::status(o.out, ec).type();
    if (type == fs::file_type::regular || type == fs::file_type::not_found) {
      check_output_file(o.out, "--out");  // unwritable: said now, not after the run
      const fs::path real = fs::weakly_canonical(o.out, ec);
      if (!ec) target = real.string();
    } else {
      target.clear();  // opened once only: a pipe's reader sees a single writer
    }
    if (!target.empty()) partial = partial_name(target);
  }
  const bool via_partial = !partial.empty();
  std::optional<RemoveOnSignal> remove_on_signal;  // Ctrl-C or a kill removes it too
  if (via_partial) remove_on_signal.emplace(partial);
  if (o.out != "-") {
    file = open_output_file(via_partial ? partial : o.out, "--out");
    out = &file;
  }
  const auto discard = [&] {
    if (!via_partial) return;
    file.close();
    std::error_code ec;
    fs::remove(partial, ec);
  };
  std::int64_t index = 0;
  run.config.on_round = [&](const RoundRecord& r) {
    *out << trace_record(index++, r, *run.model.codec)
                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
         << '\n';
  };
  GenerationResult result;
  try {
    result = run_decode(*run.model.target, run.drafter.get(), run.verify, run.prompt, run.config);
  } catch (...) {
    discard();
    throw;
  }
  out->flush();
  if (o.out != "-") file.close();
  if (!*out) {
    discard();
    throw std::runtime_error("trace: writing '" + o.out + "' failed");
  }
  if (via_partial) {
    std::error_code ec;
    fs::rename(partial, target, ec);
    if (ec) {
      discard();
      throw std::runtime_error("trace: writing '" + o.out + "' failed: " + ec.message());
    }
    remove_on_signal.reset();  // the name is no longer the scratch file's
  }
  std::fprintf(stderr, "trace: %s, %s, k=%d: %s%s\n", run.model.description.c_str(),
               run.drafter ? run.drafter->name().c_str() : "none (plain decoding)", o.decode.k,
               result.stats.summary().c_str(), finish_note(result.finish));
}

}  // namespace

void add_trace(CLI::App& app) {
  auto o = std::make_shared<TraceOptions>();
  o->drafter.n = 2;  // the book's traces use bigrams
  o->decode.max_new_tokens = 256;
  CLI::App* cmd = app.add_subcommand(
      "trace", "Run speculative decoding and write one JSON line per verify round");
  add_prompt_flags(*cmd, o->prompt);
  cmd->add_option("--prompt-len", o->prompt.toy_prompt_len,
                  "Toy target only: the length of its own prompt, when no --prompt is given")
      ->check(int_in(1, 4096, "prompt tokens"))
      ->capture_default_str()
      ->group("Toy target");
  add_target_flags(*cmd, o->target);
  add_drafter_flags(*cmd, o->drafter);
  add_decode_flags(*cmd, o->decode);
  cmd->add_option(
         "--out", o->out,
         "Output file (JSON Lines; its folder is created; written in full when the run ends, "
         "so a run that fails or is interrupted leaves it as it was; not the prompt file or the "
         "model), or - for standard output")
      ->required();
  cmd->callback([o, cmd]() {
    warn_ignored_flags(*cmd, one_prompt_flag_context(o->target, o->drafter, o->prompt, o->decode));
    run_trace(*o);
  });
}

}  // namespace speclab::cli
