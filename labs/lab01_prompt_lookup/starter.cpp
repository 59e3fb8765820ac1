// Lab 01 -- your file. Implement the two functions; their contracts are in prompt_lookup.h.
// Run the tests:   LAB_IMPL=starter ctest --test-dir build -L lab01 --output-on-failure
#include "prompt_lookup.h"

namespace speclab {

// --8<-- [start:ngram_propose]
std::vector<Token> ngram_propose(std::span<const Token> context, int n, int k) {
  // TODO(lab01): check n and k first. Then scan latest-first for an earlier occurrence of the
  // last n tokens and return up to k of the tokens that followed it. Watch the two edges: the
  // suffix itself must never match, and fewer than k tokens may follow the match.
  (void)context, (void)n, (void)k;
  todo("lab01", "ngram_propose", "book/lab01_prompt_lookup.md, section 'Proposing: the scan'");
}
// --8<-- [end:ngram_propose]

// --8<-- [start:verify_greedy]
VerifyResult verify_greedy(std::span<const Token> drafts, const Logits& logits) {
  // TODO(lab01): compare drafts[i] with argmax(logits.row(i)) -- row i, not row 0 -- and stop
  // at the first mismatch. Always end with one target token: the correction or the bonus.
  (void)drafts, (void)logits;
  todo("lab01", "verify_greedy", "book/lab01_prompt_lookup.md, section 'Verifying: greedy'");
}
// --8<-- [end:verify_greedy]

}  // namespace speclab
