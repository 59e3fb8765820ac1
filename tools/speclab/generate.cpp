// `speclab generate`: streams one completion, highlighting the tokens that came from accepted
// drafts, and ends with a stats line.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "factory.h"
#include "prompt.h"

namespace speclab::cli {
namespace {

struct GenerateOptions {
  TargetOptions target;
  DrafterOptions drafter;
  DecodeOptions decode;
  PromptOptions prompt;
  bool no_color = false;
};

void run_generate(const GenerateOptions& o) {
  OnePromptRun run = prepare_one_prompt_run(o.target, o.drafter, o.decode, o.prompt);

  const bool color = !o.no_color && color_wanted(stdout);
  std::fprintf(stderr, "speclab generate: %s, drafter %s, k=%d, %s\n",
               run.model.description.c_str(),
               run.drafter ? run.drafter->name().c_str() : "none (plain decoding)", o.decode.k,
               sampling_label(o.decode.temperature, o.decode.seed).c_str());
  if (color && color_wanted(stderr)) {
    std::fprintf(stderr,
                 "%saccepted draft tokens look like this%s; the rest came from the target\n",
                 TokenPrinter::kHighlight, TokenPrinter::kReset);
  } else if (color) {  // stderr is a file or a pipe (2>log): no escape codes there
    std::fprintf(stderr,
                 "accepted draft tokens are shown in bold green; the rest came from the target\n");
  }
  if (!run.model.codec->is_text()) std::fprintf(stderr, "(the toy target's text is token ids)\n");
  std::fflush(stderr);

  TokenPrinter printer(*run.model.codec, stdout, color, run.config.stop_tokens);
  run.config.on_round = [&](const RoundRecord& r) { printer.print_round(r); };
  const GenerationResult result =
      run_decode(*run.model.target, run.drafter.get(), run.verify, run.prompt, run.config);
  printer.finish();
  std::fputc('\n', stdout);
  std::fflush(stdout);
  std::fprintf(stderr, "stats: %s%s\n", result.stats.summary().c_str(), finish_note(result.finish));
}

}  // namespace

void add_generate(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "generate",
      "Stream one completion; tokens from accepted drafts are highlighted on a terminal, and a "
      "stats line (on stderr) ends the run");
  add_prompt_flags(*cmd, o->prompt);
  add_target_flags(*cmd, o->target);
  add_drafter_flags(*cmd, o->drafter);
  add_decode_flags(*cmd, o->decode);
  cmd->add_flag("--no-color", o->no_color, "Plain text even on a terminal");
  cmd->callback([o, cmd]() {
    warn_ignored_flags(*cmd, one_prompt_flag_context(o->target, o->drafter, o->prompt, o->decode));
    run_generate(*o);
  });
}

}  // namespace speclab::cli
