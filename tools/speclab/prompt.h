#pragma once
// What the one-prompt subcommands (generate and trace) share: the prompt flags (--prompt,
// --prompt-file, --system, --raw) and the step from all their flags to a ready-to-run decode.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "factory.h"
#include "mini_engine/spec/drafter.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/spec/verify.h"

namespace speclab::cli {

struct PromptOptions {
  std::string prompt;       // the text (the toy target: token ids)
  std::string prompt_file;  // read the prompt from this file; "-" = standard input
  std::string system;       // a system message (chat template only)
  bool raw = false;         // no chat template: the tokens of the text alone
  int toy_prompt_len = 16;  // the toy target's own prompt, used when no prompt flag is given
  // Set by add_prompt_flags: whether --prompt / --prompt-file appeared on the command line.
  const CLI::Option* prompt_flag = nullptr;
  const CLI::Option* file_flag = nullptr;
  bool given() const {
    return (prompt_flag && prompt_flag->count() > 0) || (file_flag && file_flag->count() > 0);
  }
};

// Adds the flags. After parsing, call resolve_prompt().
void add_prompt_flags(CLI::App& cmd, PromptOptions& options);

// The prompt's tokens for `model`: the chat template around one user message (a real model,
// unless --raw), or the tokens of the text. With no prompt flag the toy target uses its own
// toy_prompt_len-token prompt, and a real model asks for one.
// Throws UsageError for an empty prompt, invalid UTF-8, an unreadable file or text the model
// cannot read.
std::vector<Token> resolve_prompt(const PromptOptions& options, const Model& model);

// What a one-prompt run uses, for warn_ignored_flags() (factory.h).
FlagContext one_prompt_flag_context(const TargetOptions& target, const DrafterOptions& drafter,
                                    const PromptOptions& prompt, const DecodeOptions& decode);

// Everything one prompt's decode needs, built from the flags. `drafter` is null for
// --drafter none; `verify` is then empty. `config` carries the model's stop tokens.
struct OnePromptRun {
  Model model;
  std::vector<Token> prompt;
  std::unique_ptr<Drafter> drafter;
  DecodeConfig config;
  VerifyRule verify;
};

// Loads the model, resolves the prompt, builds the drafter and verify rule, and checks that the
// prompt plus max_new_tokens fit the context (and the drafter's n fits the text). `target` is
// taken by value: the toy target's seed and length hint are filled in from `decode` and `prompt`.
// Throws UsageError with a precise message for every bad flag (see load_model, resolve_prompt,
// make_drafter, check_n_fits, check_fits_context).
OnePromptRun prepare_one_prompt_run(TargetOptions target, const DrafterOptions& drafter,
                                    const DecodeOptions& decode, const PromptOptions& prompt);

}  // namespace speclab::cli
