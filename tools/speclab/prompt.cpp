#include "prompt.h"

#include <fstream>
#include <iostream>

#include "mini_engine/targets/toy_target.h"
#include "user_files.h"

namespace speclab::cli {
namespace {

std::string read_all(const std::string& path) {
  const std::string named = "--prompt-file '" + path + "'";
  if (path == "-") {
    require_stdin_not_a_folder(named);
    return read_capped(std::cin, named, kMaxInputBytes);
  }
  std::ifstream in = open_input_file(path, "--prompt-file");
  return read_capped(in, named, kMaxInputBytes);
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

void add_prompt_flags(CLI::App& cmd, PromptOptions& o) {
  auto* p =
      cmd.add_option("--prompt", o.prompt,
                     "The prompt text (for the toy target: token ids, e.g. \"3 1 4 1 5\"; without "
                     "a prompt the toy target makes its own, real models need one)");
  auto* f = cmd.add_option("--prompt-file", o.prompt_file,
                           "Read the prompt from a file ('-' = standard input); at most 16 MiB");
  p->excludes(f);
  cmd.add_option("--system", o.system,
                 "A system message (real models, in the chat template: not with --raw)");
  cmd.add_flag("--raw", o.raw, "Do not wrap the prompt in the model's chat template");
  o.prompt_flag = p;
  o.file_flag = f;
}

std::vector<Token> resolve_prompt(const PromptOptions& o, const Model& model) {
  if (!o.given()) {
    if (const auto* toy = dynamic_cast<const ToyTarget*>(model.target.get())) {
      return toy->make_prompt(o.toy_prompt_len);
    }
    throw UsageError("no prompt: give one with --prompt TEXT or --prompt-file PATH");
  }
  const bool from_file = o.file_flag && o.file_flag->count() > 0;
  if (from_file && o.prompt_file.empty()) {
    throw UsageError("--prompt-file '': give a file name, or - for standard input");
  }
  const std::string text = from_file ? read_all(o.prompt_file) : o.prompt;
  require_utf8(text, "the prompt");
  require_utf8(o.system, "the system message");
  if (blank(text)) throw UsageError("the prompt is empty: give some text to continue");
  std::vector<Token> tokens;
  if (o.raw || !model.codec->is_text()) {
    tokens = model.codec->encode(text);
  } else {
    tokens = model.codec->system_prompt(o.system);
    const std::vector<Token> user = model.codec->user_turn(text);
    tokens.insert(tokens.end(), user.begin(), user.end());
  }
  if (tokens.empty()) throw UsageError("the prompt is empty: it encodes to no tokens");
  return tokens;
}

FlagContext one_prompt_flag_context(const TargetOptions& target, const DrafterOptions& drafter,
                                    const PromptOptions& prompt, const DecodeOptions& decode) {
  return {.toy = target.model == "toy",
          .cuda = runs_on_gpu(target),
          .drafters = {drafter.drafter},
          .auto_inner = drafter.auto_inner,
          .prompt_given = prompt.given(),
          .raw = prompt.raw,
          .seed_unused = target.model != "toy" && decode.temperature == 0.0};
}

OnePromptRun prepare_one_prompt_run(TargetOptions target, const DrafterOptions& drafter,
                                    const DecodeOptions& decode, const PromptOptions& prompt) {
  target.toy_seed = decode.seed;
  target.toy_length_hint = prompt.toy_prompt_len + decode.max_new_tokens;
  OnePromptRun run;
  run.model = load_model(target);
  run.prompt = resolve_prompt(prompt, run.model);
  DrafterOptions with_stops = drafter;
  with_stops.stop_tokens = run.model.codec->stop_tokens();  // `mine` never drafts past them
  run.drafter = make_drafter(with_stops, decode.k);
  // The prompt first: a prompt that does not fit is the problem, whatever --n is.
  // Without a prompt of the user's, the toy target made one of --prompt-len tokens.
  check_fits_context(run.model, run.prompt.size(), decode.max_new_tokens, "the prompt",
                     prompt.given() ? "shorten the prompt" : "lower --prompt-len");
  if (run.drafter) {
    check_n_fits(drafter, *run.model.target, run.prompt.size(), decode.max_new_tokens);
  }
  run.config = decode_config(decode);
  run.config.stop_tokens = run.model.codec->stop_tokens();
  if (run.drafter) run.verify = make_verify_rule(run.config.sampling);
  return run;
}

}  // namespace speclab::cli
