#pragma once
// The prompt flags that generate and trace share: --prompt, --prompt-file, --system, --raw.
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "factory.h"

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

}  // namespace speclab::cli
