// Lab 02 -- your file. Implement the storages and draft(); the contracts are in ngram_storage.h.
// Run the tests:   LAB_IMPL=starter ctest --test-dir build -L lab02 --output-on-failure
#include "ngram_storage.h"

namespace speclab {

// ---- OneLevelNGramStorage ----

// --8<-- [start:OneLevelNGramStorage]
void OneLevelNGramStorage::seed(std::span<const Token> prompt) {
  // TODO(lab02): first check every id of the prompt, however short it is: a negative one throws
  // std::invalid_argument naming it. Left to update(), n-gram by n-gram, the check comes after the
  // n-grams before the bad id are recorded. Then record every n-gram of the prompt: prompt[i]
  // after prompt[0..i), for each i that has n-1 tokens before it. update() can do the recording.
  (void)prompt;
  todo("lab02", "OneLevelNGramStorage::seed",
       "book/lab02_ngram_storage.md, section 'Seeding from the prompt'");
}

void OneLevelNGramStorage::update(std::span<const Token> context,
                                  std::span<const Token> next_tokens) {
  // TODO(lab02): reject negative ids first, in the key (the last n-1 tokens of context, or all of a
  // shorter context) and in next_tokens, whatever their lengths; the tokens before the key are not
  // checked. A context shorter than n-1 tokens, or an empty next_tokens, records nothing and
  // creates no entry. Otherwise key = the last n-1 tokens of context. For each next token, in
  // order: add one to table_[key].by_token[t], and make t the best only when its count is now
  // strictly larger than best_count.
  (void)context, (void)next_tokens;
  todo("lab02", "OneLevelNGramStorage::update",
       "book/lab02_ngram_storage.md, section 'Counting: one level'");
}

Prediction OneLevelNGramStorage::next_token(std::span<const Token> context) const {
  // TODO(lab02): look up the last n-1 tokens. Known context: {best, true, n-1}. Anything else is
  // a miss, Prediction{} -- never make a token up.
  (void)context;
  todo("lab02", "OneLevelNGramStorage::next_token",
       "book/lab02_ngram_storage.md, section 'A miss is not a guess'");
}
// --8<-- [end:OneLevelNGramStorage]

// ---- NGramStorage ----

// --8<-- [start:NGramStorage]
void NGramStorage::seed(std::span<const Token> prompt) {
  // TODO(lab02): seed every level. A negative id in the prompt must throw before any level
  // changes.
  (void)prompt;
  todo("lab02", "NGramStorage::seed",
       "book/lab02_ngram_storage.md, section 'Seeding from the prompt'");
}

void NGramStorage::update(std::span<const Token> context, std::span<const Token> next_tokens) {
  // TODO(lab02): record the observation at every level (each level uses its own context length).
  // A negative id in the longest key or in next_tokens must throw before any level changes; one
  // before the longest key is no error.
  (void)context, (void)next_tokens;
  todo("lab02", "NGramStorage::update",
       "book/lab02_ngram_storage.md, section 'Backing off: many levels'");
}

Prediction NGramStorage::next_token(std::span<const Token> context) const {
  // TODO(lab02): ask the levels from the longest context down to min_context and return the
  // first hit. Which end of levels_ is the longest?
  (void)context;
  todo("lab02", "NGramStorage::next_token",
       "book/lab02_ngram_storage.md, section 'Backing off: many levels'");
}
// --8<-- [end:NGramStorage]

// ---- drafting ----

// --8<-- [start:draft]
std::vector<Token> draft(const NGramModel& storage, std::span<const Token> context, int gamma,
                         bool stop_if_unknown) {
  // TODO(lab02): predict, append the prediction to a copy of the context, predict again, until
  // gamma tokens. On a miss: stop (stop_if_unknown) or pad with the previous token.
  (void)storage, (void)context, (void)gamma, (void)stop_if_unknown;
  todo("lab02", "draft", "book/lab02_ngram_storage.md, section 'Drafting: chaining predictions'");
}
// --8<-- [end:draft]

}  // namespace speclab
