// Lab 03 -- your file. Implement the three functions; their contracts are in nasd.h.
// Run the tests:   LAB_IMPL=starter ctest --test-dir build -L lab03 --output-on-failure
#include "nasd.h"

namespace speclab {

// --8<-- [start:top_k_tokens]
std::vector<Token> top_k_tokens(std::span<const float> row, int k) {
  // TODO(lab03): the k best-scoring token ids, best first, lower id first on equal scores.
  // Skip tokens scored -infinity: the target can never produce them.
  (void)row, (void)k;
  todo("lab03", "top_k_tokens",
       "book/lab03_nasd.md, section 'Learning more per round: filler_top_k'");
}
// --8<-- [end:top_k_tokens]

// --8<-- [start:record_round]
void record_round(NGramModel& storage, std::span<const Token> context, const RoundRecord& round,
                  int filler_top_k) {
  // TODO(lab03): first check the whole round (nasd.h's "Requires") and throw before recording
  // anything. Then, for each emitted token i, the real text before it is
  // context[0 .. round.position + i). Record emitted[i] after it; with filler_top_k > 1 also
  // record the top-k tokens of row i. Rows after the emitted ones belong to rejected drafts.
  (void)storage, (void)context, (void)round, (void)filler_top_k;
  todo("lab03", "record_round",
       "book/lab03_nasd.md, section 'Learning more per round: filler_top_k'");
}
// --8<-- [end:record_round]

// --8<-- [start:verify_sampled]
VerifyResult verify_sampled(std::span<const Token> drafts, const Logits& logits,
                            std::int64_t position, const SamplingParams& sampling) {
  // TODO(lab03): draw x = sample_at(row i, sampling, position + i) -- row i, position + i. Accept
  // while x == drafts[i]; on a mismatch emit x itself and stop; after the last draft, the bonus.
  (void)drafts, (void)logits, (void)position, (void)sampling;
  todo("lab03", "verify_sampled", "book/lab03_nasd.md, section 'Verifying under sampling'");
}
// --8<-- [end:verify_sampled]

}  // namespace speclab
