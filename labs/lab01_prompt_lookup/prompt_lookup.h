#pragma once
// Lab 01 -- prompt lookup decoding. The chapter: book/lab01_prompt_lookup.md
//
// You implement the two functions declared below, in starter.cpp. Everything else in this file
// is glue that plugs them into the engine's speculative loop; you do not need to change it.
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini_engine/core/logits.h"
#include "mini_engine/core/token.h"
#include "mini_engine/spec/drafter.h"
#include "mini_engine/spec/verify.h"

namespace speclab {

// --8<-- [start:ngram_propose]
// Returns up to `k` tokens that followed the most recent *earlier* occurrence of the last `n`
// tokens of `context`. The occurrence that *is* that suffix (ending at the last token) never
// counts. Scans latest-first, so the most recent earlier occurrence wins. Fewer than k tokens
// come back when the match sits so close to the end that fewer follow it.
// Returns an empty vector when k == 0, when context.size() <= n, or when nothing matches.
// Throws std::invalid_argument when n < 1 or k < 0, checked first (also when k == 0 or the
// context is short).
std::vector<Token> ngram_propose(std::span<const Token> context, int n, int k);
// --8<-- [end:ngram_propose]

// --8<-- [start:verify_greedy]
// Greedy verification. `logits` has drafts.size() + 1 rows; row i scores the token that follows
// context + drafts[0..i) -- the *evolving* context, one more draft per row.
// Accepts drafts[i] while it equals argmax(row i). Returns the accepted drafts followed by one
// token from the target: argmax of the first mismatching row (the correction), or argmax of the
// last row when every draft was accepted (the bonus). emitted.size() == accepted + 1.
// (VerifyResult, in mini_engine/spec/verify.h: `int accepted` and `std::vector<Token> emitted`.)
// Throws std::invalid_argument when logits.rows() != drafts.size() + 1.
VerifyResult verify_greedy(std::span<const Token> drafts, const Logits& logits);
// --8<-- [end:verify_greedy]

// ---- glue: the engine-facing wrappers (not part of the exercise) ----

// Prompt lookup as an engine Drafter: propose() is ngram_propose(context, n, k).
class PromptLookupDrafter final : public Drafter {
 public:
  explicit PromptLookupDrafter(int n) : n_(n) {}
  std::string name() const override { return "prompt-lookup(n=" + std::to_string(n_) + ")"; }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    return ngram_propose(context, n_, k);
  }

 private:
  int n_;
};

// verify_greedy as an engine VerifyRule. It keeps plain decoding's output only when plain
// decoding is greedy, so a run that samples (temperature > 0) is refused with
// std::invalid_argument: such a run needs lab 03's sampled_verify_rule().
inline VerifyRule greedy_verify_rule() {
  return [](const VerifyInput& in) {
    if (in.sampling.temperature > 0.0) {
      std::ostringstream t;
      t << in.sampling.temperature;  // 1, 0.7: as written
      throw std::invalid_argument("greedy_verify_rule: the run samples at temperature " + t.str() +
                                  ", and greedy verification keeps plain decoding's output only "
                                  "at temperature 0: use sampled_verify_rule() (lab 03)");
    }
    return verify_greedy(in.drafts, in.logits);
  };
}

}  // namespace speclab
