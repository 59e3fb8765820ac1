// Lab 07 -- your file. Implement the four pieces; their contracts are in real_model.h.
// Run the tests:   LAB_IMPL=starter ctest --test-dir build -L lab07 --output-on-failure
// With LAB_IMPL=starter, make_my_drafter() runs on YOUR lab 01-05 starters: finish those first.
// Include the headers of the labs you build on, e.g.:
#include "ngram_pool.h"     // lab 04: NGramPoolDrafter
#include "ngram_storage.h"  // lab 02: NGramDrafter
#include "prompt_lookup.h"  // lab 01: PromptLookupDrafter
#include "real_model.h"
#include "suffix_automaton.h"  // lab 05: SuffixAutomatonDrafter, SuffixEnhancerDrafter

namespace speclab {

// --8<-- [start:stop_at_end_of_turn]
std::vector<Token> stop_at_end_of_turn(std::span<const Token> drafts,
                                       std::span<const Token> stop_tokens) {
  // TODO(lab07): keep the drafts up to AND including the first stop token; drop what follows.
  (void)drafts, (void)stop_tokens;
  todo("lab07", "stop_at_end_of_turn", "book/lab07_real_model.md, section 'The end of a turn'");
}
// --8<-- [end:stop_at_end_of_turn]

// --8<-- [start:DraftLengthController]
void DraftLengthController::observe(int drafted, int accepted) {
  // TODO(lab07): reject bad counts; then grow k by one after a fully accepted round, fall back
  // to accepted + 1 after a rejection, and stay within [k_min_, k_max_].
  (void)drafted, (void)accepted;
  todo("lab07", "DraftLengthController::observe",
       "book/lab07_real_model.md, section 'How far to draft'");
}
// --8<-- [end:DraftLengthController]

// --8<-- [start:ChatDrafter]
void ChatDrafter::begin(std::span<const Token> prompt) {
  // TODO(lab07): let the inner drafter index the WHOLE prompt; then reset the controller (not
  // before: a prompt the inner drafter refuses must leave the controller as it was).
  (void)prompt;
  todo("lab07", "ChatDrafter::begin", "book/lab07_real_model.md, section 'Index the whole prompt'");
}

std::vector<Token> ChatDrafter::propose(std::span<const Token> context, int k) {
  // TODO(lab07): ask the inner drafter about the whole context, for min(k, the controller's
  // next_k()) tokens when adaptive_k (else k), and cut its proposal at the end of the turn.
  (void)context, (void)k;
  todo("lab07", "ChatDrafter::propose",
       "book/lab07_real_model.md, section 'Index the whole prompt'");
}

void ChatDrafter::observe(std::span<const Token> context, const RoundRecord& round) {
  // TODO(lab07): pass every round to the inner drafter, and then, when adaptive_k, its counts to
  // the controller (after the inner drafter, so a round it refuses is not counted).
  (void)context, (void)round;
  todo("lab07", "ChatDrafter::observe", "book/lab07_real_model.md, section 'How far to draft'");
}
// --8<-- [end:ChatDrafter]

// --8<-- [start:make_my_drafter]
std::unique_ptr<Drafter> make_my_drafter(const MyDrafterOptions& options) {
  // TODO(lab07): build your best lab 01-05 drafter for a chat model and wrap it in a ChatDrafter
  // (stop tokens from options, k_max = options.k). Measure the candidates with
  // `speclab bench --model smollm2 --workload code_edit` before you choose.
  (void)options;
  todo("lab07", "make_my_drafter", "book/lab07_real_model.md, section 'Choosing your drafter'");
}
// --8<-- [end:make_my_drafter]

}  // namespace speclab
