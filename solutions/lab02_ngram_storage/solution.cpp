// Lab 02 reference solution: n-gram storages with counts, argmax and back-off, and drafting.
#include <stdexcept>
#include <string>

#include "ngram_storage.h"

namespace speclab {
namespace {

// Throws std::invalid_argument naming the first negative id in tokens[from, end) and its position
// in `tokens`. Callers check before they record anything: a check made n-gram by n-gram (or level
// by level) would leave the n-grams before the bad id recorded.
void check_ids(std::span<const Token> tokens, std::size_t from, const char* who) {
  for (std::size_t i = from; i < tokens.size(); ++i) {
    if (tokens[i] < 0) {
      throw std::invalid_argument(std::string(who) + ": token id " + std::to_string(tokens[i]) +
                                  " at position " + std::to_string(i) + " is negative");
    }
  }
}

// Where update()'s key starts in `context`: its last `key_length` tokens, or all of a shorter one.
// Those are the context ids update() reads, and checks.
std::size_t key_start(std::span<const Token> context, std::size_t key_length) {
  return context.size() > key_length ? context.size() - key_length : 0;
}

}  // namespace

// ---- OneLevelNGramStorage ----

void OneLevelNGramStorage::seed(std::span<const Token> prompt) {
  check_ids(prompt, 0, "OneLevelNGramStorage::seed");  // every id, before the first n-gram
  for (std::size_t i = static_cast<std::size_t>(n_ - 1); i < prompt.size(); ++i) {
    update(prompt.first(i), prompt.subspan(i, 1));
  }
}

void OneLevelNGramStorage::update(std::span<const Token> context,
                                  std::span<const Token> next_tokens) {
  const auto need = static_cast<std::size_t>(n_ - 1);
  check_ids(context, key_start(context, need), "OneLevelNGramStorage::update (context)");
  check_ids(next_tokens, 0, "OneLevelNGramStorage::update (next_tokens)");
  if (context.size() < need || next_tokens.empty()) return;
  const auto key = context.last(need);
  Counts& c = table_[std::vector<Token>(key.begin(), key.end())];
  for (Token t : next_tokens) {
    const std::int64_t now = ++c.by_token[t];
    if (now > c.best_count) {  // strictly: on a tie the earlier leader keeps the top spot
      c.best = t;
      c.best_count = now;
    }
  }
}

Prediction OneLevelNGramStorage::next_token(std::span<const Token> context) const {
  const auto need = static_cast<std::size_t>(n_ - 1);
  if (context.size() < need) return Prediction{};
  const auto key = context.last(need);
  const auto it = table_.find(std::vector<Token>(key.begin(), key.end()));
  if (it == table_.end()) return Prediction{};
  return Prediction{it->second.best, true, n_ - 1};
}

// ---- NGramStorage ----

void NGramStorage::seed(std::span<const Token> prompt) {
  check_ids(prompt, 0, "NGramStorage::seed");  // before any level changes
  for (auto& l : levels_) l.seed(prompt);
}

void NGramStorage::update(std::span<const Token> context, std::span<const Token> next_tokens) {
  // Before any level changes: the levels run from the shortest key to the longest, so a check
  // left to them comes after the shorter ones recorded. The longest key holds every shorter one.
  check_ids(context, key_start(context, static_cast<std::size_t>(n_ - 1)),
            "NGramStorage::update (context)");
  check_ids(next_tokens, 0, "NGramStorage::update (next_tokens)");
  for (auto& l : levels_) l.update(context, next_tokens);
}

Prediction NGramStorage::next_token(std::span<const Token> context) const {
  for (auto it = levels_.rbegin(); it != levels_.rend(); ++it) {  // longest context first
    const Prediction p = it->next_token(context);
    if (p.known) return p;
  }
  return Prediction{};
}

// ---- drafting ----

std::vector<Token> draft(const NGramModel& storage, std::span<const Token> context, int gamma,
                         bool stop_if_unknown) {
  if (gamma < 0)
    throw std::invalid_argument("draft: gamma must be >= 0, got " + std::to_string(gamma));
  std::vector<Token> text(context.begin(), context.end());  // context + the draft so far
  std::vector<Token> out;  // not reserved: gamma is a limit (INT_MAX would reserve 8 GB)
  while (static_cast<int>(out.size()) < gamma) {
    const Prediction p = storage.next_token(text);
    Token next = p.token;
    if (!p.known) {
      if (stop_if_unknown || text.empty()) break;
      next = text.back();  // pad: repeat the token before it
    }
    out.push_back(next);
    text.push_back(next);
  }
  return out;
}

}  // namespace speclab
