// `speclab trace`: one JSON line per verify round of a speculative run, for plots and debugging.
// The fields of each line: trace_record.h. Any model, drafter and verify rule the other
// subcommands take works here (factory.h).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "factory.h"
#include "output_file.h"
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

void run_trace(const TraceOptions& o) {
  if (o.out.empty()) throw UsageError("--out '': give a file, or - for standard output");
  if (o.out != "-") {  // the trace must not land on what the run reads
    check_outputs_spare_inputs(
        {{o.out, "--out"}},
        {{model_file_given(o.target), "--model"},
         {o.prompt.prompt_file == "-" ? std::string() : o.prompt.prompt_file, "--prompt-file"}});
  }
  OnePromptRun run = prepare_one_prompt_run(o.target, o.drafter, o.decode, o.prompt);

  // The lines go to --out through an OutputFile: a run that fails half-way, or is interrupted,
  // leaves --out as it was (an earlier trace is not lost) and nothing half-written.
  // Opened before the run: an unwritable --out is said now, not after it.
  std::optional<OutputFile> file;
  if (o.out != "-") file.emplace(o.out, "--out");
  std::ostream& out = file ? file->stream() : std::cout;
  std::int64_t index = 0;
  run.config.on_round = [&](const RoundRecord& r) {
    out << trace_record(index++, r, *run.model.codec)
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
        << '\n';
  };
  const GenerationResult result =
      run_decode(*run.model.target, run.drafter.get(), run.verify, run.prompt, run.config);
  if (file) {
    file->commit();
  } else {
    out.flush();
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
