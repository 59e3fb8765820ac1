// `speclab chat`: a multi-turn conversation, one user message per line of standard input.
// A message is checked before it is answered: when its turn would not fit the context, nothing
// changes; at a terminal the user may send another, piped input ends the chat there.
//
// The conversation's tokens only ever grow (system, user, reply, user, reply, ...), so the
// target keeps its KV cache between turns and only the new turn is prefilled. The drafter is
// created once and lives for the whole conversation: its state (an n-gram table, the pool's
// public pool) carries over, which is what makes turn 2 -- which quotes turn 1 -- faster.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "factory.h"
#include "mini_engine/core/plural.h"
#include "user_files.h"

namespace speclab::cli {
namespace {

struct ChatOptions {
  TargetOptions target;
  DrafterOptions drafter;
  DecodeOptions decode;
  std::string system;
  bool no_color = false;
};

void run_chat(ChatOptions o) {
  o.target.toy_seed = o.decode.seed;
  o.target.toy_length_hint = 8192;  // a conversation's length is not known in advance
  Model model = load_model(o.target);
  o.drafter.stop_tokens = model.codec->stop_tokens();
  std::unique_ptr<Drafter> drafter = make_drafter(o.drafter, o.decode.k);
  DecodeConfig dc = decode_config(o.decode);
  dc.stop_tokens = model.codec->stop_tokens();
  const VerifyRule verify = drafter ? make_verify_rule(dc.sampling) : VerifyRule{};
  require_utf8(o.system, "the system message");
  // The drafter keeps what it saw, and the conversation grows towards the model's limit: an
  // --n past it is the flag's fault, not a message's. Checked with each message, it was
  // refused turn after turn at a terminal ("send another message"), and ended with "no
  // message on standard input" though every message had been read.
  if (drafter) {
    check_n_within(o.drafter, model.target->max_length(),
                   "the model's limit, which the conversation grows towards turn by turn");
  }

  const bool interactive = isatty(fileno(stdin)) != 0;
  require_stdin_not_a_folder("chat");
  const bool color = !o.no_color && color_wanted(stdout);
  std::fprintf(stderr, "speclab chat: %s, drafter %s, k=%d, %s. One message per line%s.\n",
               model.description.c_str(),
               drafter ? drafter->name().c_str() : "none (plain decoding)", o.decode.k,
               sampling_label(o.decode.temperature, o.decode.seed).c_str(),
               interactive ? "; end with Ctrl-D" : "");
  if (!model.codec->is_text()) {
    std::fprintf(stderr, "(the toy target's messages are token ids, e.g. \"3 1 4 1 5\")\n");
  }

  std::vector<Token> history;
  try {
    history = model.codec->system_prompt(o.system);
  } catch (const UsageError& e) {  // the toy target's --system is token ids, like a message
    throw UsageError(std::string("--system: ") + e.what());
  }
  // No message fits when the opening, the shortest message and a reply of --max-new-tokens do
  // not: a flag's fault, said now, not after every message (as for --n above).
  check_fits_context(
      model, history.size() + model.codec->user_turn(model.codec->is_text() ? "x" : "0").size(),
      o.decode.max_new_tokens, "the conversation's opening with a one-character message",
      o.system.empty() ? "" : "shorten the system message");
  SpecStats first_turn;
  SpecStats later_turns;
  int turn = 0;  // turns answered, or being answered
  // Turn 1 against the later turns: the turn-2 effect.
  const auto print_summary = [&] {
    if (turn < 2) return;
    // "turn 2" when it is the only later turn ("turns 2..2" read as a range).
    const std::string later = turn == 2 ? "turn 2" : "turns 2.." + std::to_string(turn);
    std::fprintf(stderr,
                 "chat: %s. tokens/run: turn 1 %.2f, %s %.2f; acceptance: turn 1 %.1f%%, later "
                 "%.1f%%\n",
                 plural(turn, "turn").c_str(), first_turn.tokens_per_run(), later.c_str(),
                 later_turns.tokens_per_run(), 100.0 * first_turn.acceptance_rate(),
                 100.0 * later_turns.acceptance_rate());
  };
  // The conversation so far with `line` as the next user turn. Throws UsageError naming the turn
  // when the message is not valid UTF-8 or not a message, or when the conversation, with a
  // reply of --max-new-tokens, would no longer fit the context.
  const auto with_message = [&](const std::string& line, int next) {
    const std::string name = "turn " + std::to_string(next);
    require_utf8(line, "message " + std::to_string(next));
    const std::vector<Token> user = model.codec->user_turn(line);
    if (user.empty()) throw UsageError("message " + std::to_string(next) + " is empty");
    std::vector<Token> prompt = history;
    prompt.insert(prompt.end(), user.begin(), user.end());
    check_fits_context(model, prompt.size(), o.decode.max_new_tokens,
                       name + ": the conversation so far", "send a shorter message");
    return prompt;
  };
  std::string line;
  while (true) {
    if (interactive) {
      std::fputs("you> ", stdout);
      std::fflush(stdout);
    }
    if (!read_line_capped(std::cin, line, "a message", kMaxInputBytes)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // nothing to answer
    std::vector<Token> prompt;
    try {
      prompt = with_message(line, turn + 1);
    } catch (const UsageError& e) {
      // At a terminal the user can send another message: this one changed nothing. Piped
      // input goes on as if it had been answered, so the chat ends there.
      if (!interactive) {
        print_summary();
        throw;
      }
      std::fprintf(stderr,
                   "speclab chat: %s\n  (the conversation is unchanged: send another message, "
                   "or end with Ctrl-D)\n",
                   e.what());
      continue;
    }
    ++turn;
    // The line as it was read: a NUL or an escape in it is shown, not obeyed or cut at.
    if (!interactive) std::printf("you> %s\n", printable(line).c_str());

    std::fputs("assistant> ", stdout);
    TokenPrinter printer(*model.codec, stdout, color, dc.stop_tokens);
    dc.on_round = [&](const RoundRecord& r) { printer.print_round(r); };
    const GenerationResult result = run_decode(*model.target, drafter.get(), verify, prompt, dc);
    printer.finish();
    std::fputc('\n', stdout);
    std::fflush(stdout);
    std::fprintf(stderr, "[turn %d] %s\n", turn, result.stats.summary().c_str());
    std::fflush(stderr);

    SpecStats& sum = turn == 1 ? first_turn : later_turns;
    sum.target_runs += result.stats.target_runs;
    sum.emitted += result.stats.emitted;
    sum.drafted += result.stats.drafted;
    sum.accepted += result.stats.accepted;

    history = std::move(prompt);
    history.insert(history.end(), result.tokens.begin(), result.tokens.end());
    const std::vector<Token> close = model.codec->close_reply(result.finish == Finish::stop_token);
    history.insert(history.end(), close.begin(), close.end());
  }
  if (turn == 0) throw UsageError("no message on standard input: nothing to answer");
  print_summary();
}

}  // namespace

void add_chat(CLI::App& app) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand(
      "chat",
      "A multi-turn chat: one user message per line of standard input (works non-interactively, "
      "e.g. printf 'q1\\nq2\\n' | speclab chat --model smollm2). The drafter's state persists "
      "across turns, and "
      "per-turn stats on stderr show the turn-2 effect. A message whose turn would not fit the "
      "context is refused: at a terminal the chat goes on, with piped input it ends there");
  cmd->add_option("--system", o->system, "A system message that opens the conversation");
  add_target_flags(*cmd, o->target);
  add_drafter_flags(*cmd, o->drafter);
  add_decode_flags(*cmd, o->decode);
  cmd->add_flag("--no-color", o->no_color, "Plain text even on a terminal");
  cmd->callback([o, cmd]() {
    warn_ignored_flags(*cmd,
                       {.toy = o->target.model == "toy",
                        .cuda = runs_on_gpu(o->target),
                        .drafters = {o->drafter.drafter},
                        .auto_inner = o->drafter.auto_inner,
                        .seed_unused = o->target.model != "toy" && o->decode.temperature == 0.0});
    run_chat(*o);
  });
}

}  // namespace speclab::cli
