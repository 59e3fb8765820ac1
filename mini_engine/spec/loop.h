#pragma once
// The decoding loops: plain decoding (the reference) and speculative decoding.
#include <functional>
#include <span>
#include <vector>

#include "mini_engine/core/clock.h"
#include "mini_engine/core/target.h"
#include "mini_engine/sampling/sampling.h"
#include "mini_engine/spec/drafter.h"
#include "mini_engine/spec/round.h"
#include "mini_engine/spec/stats.h"
#include "mini_engine/spec/verify.h"

namespace speclab {

// The most drafts per round any loop takes (DecodeConfig::k, a cost curve's k).
inline constexpr int kMaxDrafts = 64;

struct DecodeConfig {
  int max_new_tokens = 64;         // >= 1; the loops never emit more
  int k = 4;                       // drafts per round, 1..kMaxDrafts (speculative decoding only)
  SamplingParams sampling;         // temperature 0 = greedy
  std::vector<Token> stop_tokens;  // generation ends right after emitting one of these
  // Called after every round (every token, for plain decoding) with what it emitted. Its time
  // is part of the run's: SpecStats::total_seconds and other_seconds() include it.
  std::function<void(const RoundRecord&)> on_round;
  // Times prefill, draft and verify (SpecStats, RoundRecord). nullptr: the wall clock. Not owned:
  // it must outlive the call (e.g. process CPU time for `speclab bench --clock cpu`).
  const Clock* clock = nullptr;
};

// Why a generation ended.
enum class Finish {
  max_new_tokens,  // it emitted DecodeConfig::max_new_tokens tokens
  stop_token,      // its last token is one of DecodeConfig::stop_tokens (checked first)
  context_full,    // the target holds max_length() tokens: there is no room to feed the next one
};
// "max_new_tokens", "stop_token" or "context_full".
const char* to_string(Finish finish);

struct GenerationResult {
  std::vector<Token> tokens;  // the emitted tokens only (not the prompt)
  SpecStats stats;
  Finish finish = Finish::max_new_tokens;
};

// Plain decoding: one target run per emitted token, each token chosen by sample_at(). It ends
// after max_new_tokens tokens, right after a stop token, or when the target is full (Finish):
// the last emitted token is never fed, so at most max_length() + 1 - prompt.size() tokens.
// The target's sequence is reused where it already holds a prefix of the prompt (a chat turn);
// anything past that prefix is truncated first. So a second run of the same prompt on the same
// target has no prefill (stats.prefill_seconds about 0): to compare two runs' speeds, use a fresh
// target for each or compare their verify_seconds. Afterwards the target holds the prompt and
// the emitted tokens but the last.
// Requires a non-empty prompt of ids in [0, vocab_size()), max_new_tokens >= 1 and a finite
// temperature >= 0; throws std::invalid_argument naming the bad field otherwise, and
// ContextOverflow when the prompt alone is longer than max_length() (both before touching the
// target).
// Throws std::runtime_error naming the target and the position when the logit of a token it
// chose is NaN or +infinity (require_finite_choices, logits.h): the model's numbers broke down.
GenerationResult run_baseline(Target& target, std::span<const Token> prompt,
                              const DecodeConfig& config);

// Speculative decoding: each round asks `drafter` for up to k tokens, verifies them with one
// target run over [last token] + drafts, keeps what `verify` accepts and rolls the target back
// so it holds only accepted tokens. Every round emits >= 1 token, and never more than
// max_new_tokens in all (k is capped near the end, and near max_length(), so that it ends with
// the same tokens and Finish as run_baseline). Reuses the target's sequence as run_baseline does.
// `drafter` is used, not owned: begin() is called once, before the rounds. Requires what
// run_baseline requires, k in [1, 64] and a non-empty `verify` (std::invalid_argument otherwise).
// Throws std::logic_error naming the drafter or rule if either breaks its contract (too many
// drafts, a draft or target token outside the vocabulary, a VerifyResult whose emitted tokens don't
// match), and std::runtime_error as run_baseline when a chosen token's logit is NaN or +infinity.
// Whatever throws (the drafter, the rule, a callback, the target), the target is left holding a
// prefix of prompt + the tokens emitted so far: never an unverified draft.
GenerationResult run_speculative(Target& target, Drafter& drafter, const VerifyRule& verify,
                                 std::span<const Token> prompt, const DecodeConfig& config);

}  // namespace speclab
