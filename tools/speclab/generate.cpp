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

void run_generate(GenerateOptions o) {
  o.target.toy_seed = o.decode.seed;
  o.target.toy_length_hint = o.prompt.toy_prompt_len + o.decode.max_new_tokens;
  Model model = load_model(o.target);
  const std::vector<Token> prompt = resolve_prompt(o.prompt, model);
  o.drafter.stop_tokens = model.codec->stop_tokens();
  std::unique_ptr<Drafter> drafter = make_drafter(o.drafter, o.decode.k);
  if (drafter) check_n_fits(o.drafter, *model.target, prompt.size(), o.decode.max_new_tokens);
  check_fits_context(*model.target, prompt.size(), o.decode.max_new_tokens);
  DecodeConfig dc = decode_config(o.decode);
  dc.stop_tokens = model.codec->stop_tokens();
  const VerifyRule verify = drafter ? make_verify_rule(dc.sampling) : VerifyRule{};

  const bool color = !o.no_color && color_wanted(stdout);
  std::fprintf(stderr, "speclab generate: %s, drafter %s, k=%d, %s\n", model.description.c_str(),
               drafter ? drafter->name().c_str() : "none (plain decoding)", o.decode.k,
               o.decode.temperature == 0.0 ? "greedy" : "sampled");
  if (color) {
    std::fprintf(stderr, "%saccepted draft tokens look like this%s; the rest came from the target\n",
                 TokenPrinter::kHighlight, TokenPrinter::kReset);
  }
  if (!model.codec->is_text()) std::fprintf(stderr, "(the toy target's text is token ids)\n");
  std::fflush(stderr);

  TokenPrinter printer(*model.codec, stdout, color, dc.stop_tokens);
  dc.on_round = [&](const RoundRecord& r) { printer.print_round(r); };
  const GenerationResult result = run_decode(*model.target, drafter.get(), verify, prompt, dc);
  printer.finish();
  std::fputc('\n', stdout);
  std::fflush(stdout);
  std::fprintf(stderr, "stats: %s%s\n", result.stats.summary().c_str(),
               result.stopped ? " (stopped at end of turn)" : "");
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
  cmd->callback([o]() { run_generate(*o); });
}

}  // namespace speclab::cli
