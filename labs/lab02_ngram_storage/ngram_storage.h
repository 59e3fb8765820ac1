#pragma once
// Lab 02 -- n-gram storage, the memory of the NASD drafter. The chapter:
// book/lab02_ngram_storage.md
//
// You implement, in starter.cpp:
//   OneLevelNGramStorage::seed / update / next_token   (one context length, counts and argmax)
//   NGramStorage::seed / update / next_token           (several context lengths, longest first)
//   draft                                              (chain next_token into a draft of gamma)
// Everything else in this file -- the storage layout, the constructors, the small accessors and
// the engine glue at the bottom -- is given; you do not need to change it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mini_engine/core/token.h"
#include "mini_engine/spec/drafter.h"
#include "mini_engine/spec/round.h"

namespace speclab {

// The token field of a Prediction that found nothing. Never a valid token id.
inline constexpr Token kNoToken = -1;

// What a storage predicts for the token after a context.
// A miss is {kNoToken, false, 0}: a storage never makes a token up.
struct Prediction {
  Token token = kNoToken;  // the predicted next token, or kNoToken on a miss
  bool known = false;      // true when some stored context matched
  int context_length = 0;  // trailing context tokens the answer came from; 0 on a miss
  bool operator==(const Prediction&) const = default;
};

// A failed check prints Predictions with this. A miss shows its context_length when it is not 0,
// so that {kNoToken, false, 2} and Prediction{} do not print the same.
inline std::ostream& operator<<(std::ostream& os, const Prediction& p) {
  if (!p.known) {
    os << "{miss, token=" << p.token;
    if (p.context_length != 0) os << ", context_length=" << p.context_length;
    return os << "}";
  }
  return os << "{token=" << p.token << ", known, context_length=" << p.context_length << "}";
}

// What every storage in this lab can do; draft() and the drafters work with any of them.
class NGramModel {
 public:
  virtual ~NGramModel() = default;
  // The longest context (in tokens) this storage looks at.
  virtual int max_context() const = 0;
  // Records every n-gram of `prompt`: what a drafter does once, before the first round. Throws
  // std::invalid_argument naming a negative id anywhere in the prompt, and then records nothing.
  virtual void seed(std::span<const Token> prompt) = 0;
  // Records that each of `next_tokens`, in order, was seen right after `context` (the whole text
  // so far: only its trailing tokens are used). Throws std::invalid_argument naming a negative id
  // among the tokens it reads (next_tokens and those trailing context tokens), and then records
  // nothing.
  virtual void update(std::span<const Token> context, std::span<const Token> next_tokens) = 0;
  // The most frequent token seen after the trailing tokens of `context`, or a miss.
  virtual Prediction next_token(std::span<const Token> context) const = 0;
  // Distinct (context, next token) pairs stored: the storage's memory, in entries.
  virtual std::int64_t size() const = 0;
  // Forgets everything.
  virtual void clear() = 0;
};

// Hash for token sequences used as map keys.
struct TokenSeqHash {
  std::size_t operator()(const std::vector<Token>& s) const noexcept {
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the ids
    for (Token t : s) {
      h ^= static_cast<std::uint32_t>(t);
      h *= 0x100000001b3ULL;
    }
    return static_cast<std::size_t>(h);
  }
};

// Counts over exactly one context length: the last n-1 tokens predict the next one.
//
// The layout is given, and you must fill it as described, because count() and size() read it:
//   table_[c].by_token[t]  how many times token t was recorded right after context c;
//   table_[c].best         the argmax of by_token, kept up to date on every record;
//   table_[c].best_count   by_token[best].
// Tie-break (the chapter, "Counting: one level"): recording t raises best to t only when
// by_token[t] becomes *strictly* larger than best_count. So among tokens with equal counts, the
// one that reached that count first keeps the top spot.
class OneLevelNGramStorage final : public NGramModel {
 public:
  // Requires n >= 2 (the context is n-1 tokens); throws std::invalid_argument otherwise.
  explicit OneLevelNGramStorage(int n) : n_(n) {
    if (n < 2) {
      throw std::invalid_argument("OneLevelNGramStorage: n must be >= 2 (context n-1 >= 1), got " +
                                  std::to_string(n));
    }
  }

  int n() const { return n_; }
  int max_context() const override { return n_ - 1; }

  // --8<-- [start:OneLevelNGramStorage]
  // For i = n-1 .. prompt.size()-1: records prompt[i] after prompt[0..i). Fewer than n tokens
  // record nothing. Throws std::invalid_argument naming a negative id anywhere in the prompt,
  // however short the prompt, and then records nothing: every id is checked before the first
  // n-gram is recorded.
  void seed(std::span<const Token> prompt) override;
  // When context.size() >= n-1: records each of next_tokens after the last n-1 tokens of
  // context (the key), in order, updating best as described above. A shorter context records
  // nothing. Throws std::invalid_argument naming a negative id, and its position, in the key (or
  // anywhere in a shorter context) or in next_tokens, whatever their lengths, and then records
  // nothing. The context's earlier tokens are not read, nor checked.
  void update(std::span<const Token> context, std::span<const Token> next_tokens) override;
  // {best, true, n-1} for the last n-1 tokens of context when that context was recorded;
  // otherwise (unseen, or context shorter than n-1) a miss: Prediction{}.
  Prediction next_token(std::span<const Token> context) const override;
  // --8<-- [end:OneLevelNGramStorage]

  // How many times `next` was recorded after the last n-1 tokens of `context`; 0 if never or if
  // context is shorter than n-1.
  std::int64_t count(std::span<const Token> context, Token next) const {
    if (context.size() < static_cast<std::size_t>(n_ - 1)) return 0;
    const auto key = context.last(static_cast<std::size_t>(n_ - 1));
    const auto it = table_.find(std::vector<Token>(key.begin(), key.end()));
    if (it == table_.end()) return 0;
    const auto jt = it->second.by_token.find(next);
    return jt == it->second.by_token.end() ? 0 : jt->second;
  }
  // Distinct contexts stored.
  std::int64_t contexts() const { return static_cast<std::int64_t>(table_.size()); }
  std::int64_t size() const override {
    std::int64_t pairs = 0;
    for (const auto& [context, counts] : table_) {
      pairs += static_cast<std::int64_t>(counts.by_token.size());
    }
    return pairs;
  }
  void clear() override { table_.clear(); }

 private:
  // --8<-- [start:OneLevelNGramStorage_layout]
  struct Counts {
    std::unordered_map<Token, std::int64_t> by_token;  // next token -> times recorded
    Token best = kNoToken;                             // argmax of by_token (see tie-break)
    std::int64_t best_count = 0;                       // by_token[best]
  };
  int n_;
  std::unordered_map<std::vector<Token>, Counts, TokenSeqHash> table_;  // key: n-1 tokens
  // --8<-- [end:OneLevelNGramStorage_layout]
};

// Several context lengths at once, from max_context() = n-1 down to min_context, with back-off:
// next_token() answers from the longest context length that has seen the context.
//
// min_context is where back-off stops. The default, 1, backs off all the way to a single token
// of context, which drafts most often; a wrong draft only costs verify width, while a miss costs
// a whole round without drafts (the chapter, "Backing off: where to stop").
class NGramStorage final : public NGramModel {
 public:
  // Requires n >= 2 and 1 <= min_context <= n-1; throws std::invalid_argument otherwise.
  explicit NGramStorage(int n, int min_context = 1) : n_(n), min_context_(min_context) {
    if (n < 2) {
      throw std::invalid_argument("NGramStorage: n must be >= 2, got " + std::to_string(n));
    }
    if (min_context < 1 || min_context > n - 1) {
      throw std::invalid_argument("NGramStorage: min_context must be in [1, n-1] = [1, " +
                                  std::to_string(n - 1) + "], got " + std::to_string(min_context));
    }
    for (int c = min_context; c <= n - 1; ++c) levels_.emplace_back(c + 1);
  }

  int n() const { return n_; }
  int min_context() const { return min_context_; }
  int max_context() const override { return n_ - 1; }

  // --8<-- [start:NGramStorage]
  // Seeds every level: all k-grams of the prompt for k = min_context+1 .. n. Throws
  // std::invalid_argument naming a negative id anywhere in the prompt before any level changes.
  void seed(std::span<const Token> prompt) override;
  // Records each of next_tokens after context at every level whose context fits in `context`.
  // Throws std::invalid_argument naming a negative id in the longest level's key (the last n-1
  // tokens of context, or all of a shorter one) or in next_tokens, even when no level's context
  // fits, before any level records. The context's earlier tokens are not read, nor checked.
  void update(std::span<const Token> context, std::span<const Token> next_tokens) override;
  // Asks the levels from the longest context to the shortest (min_context) and returns the first
  // hit; context_length tells which level answered. A miss only when no level knows its context.
  Prediction next_token(std::span<const Token> context) const override;
  // --8<-- [end:NGramStorage]

  // The level that uses `context_length` trailing tokens. Requires min_context <= context_length
  // <= n-1; throws std::out_of_range otherwise.
  const OneLevelNGramStorage& level(int context_length) const {
    if (context_length < min_context_ || context_length > n_ - 1) {
      throw std::out_of_range("NGramStorage::level(" + std::to_string(context_length) +
                              "): levels are " + std::to_string(min_context_) + ".." +
                              std::to_string(n_ - 1));
    }
    return levels_[static_cast<std::size_t>(context_length - min_context_)];
  }
  std::int64_t size() const override {
    std::int64_t pairs = 0;
    for (const auto& l : levels_) pairs += l.size();
    return pairs;
  }
  void clear() override {
    for (auto& l : levels_) l.clear();
  }

 private:
  int n_;
  int min_context_;
  // levels_[i] uses context length min_context + i, so levels_.back() is the longest.
  std::vector<OneLevelNGramStorage> levels_;
};

// --8<-- [start:draft]
// Chains next_token into up to `gamma` draft tokens for what follows `context`: draft token i is
// predicted from context + draft[0..i), so each prediction sees the ones before it.
// On a miss: with stop_if_unknown the draft ends there (it may be empty); without it the position
// is padded with the token before it (the last token of context + draft so far) and chaining
// goes on, so the draft has gamma tokens. A pad is a placeholder, never a random token; with an
// empty context there is nothing to pad with, and the draft ends as with stop_if_unknown.
// Returns {} when gamma == 0. Any gamma >= 0 is allowed: it is a limit, not a length, so
// gamma = INT_MAX with stop_if_unknown ends at the first miss like any other.
// Throws std::invalid_argument when gamma < 0.
std::vector<Token> draft(const NGramModel& storage, std::span<const Token> context, int gamma,
                         bool stop_if_unknown);
// --8<-- [end:draft]

// ---- glue: the engine-facing drafter (not part of the exercise) ----

struct NGramDrafterConfig {
  int n = 3;                    // longest n-gram: the context is up to n-1 tokens
  int min_context = 1;          // back-off floor (NGramStorage); ignored when one_level
  bool one_level = false;       // true: OneLevelNGramStorage(n), no back-off
  bool stop_if_unknown = true;  // end the draft at the first miss instead of padding
};

// The lab's storage as an engine Drafter: begin() seeds a fresh storage with the prompt,
// propose() is draft(), and observe() records every token a round emitted -- accepted drafts and
// the target's correction or bonus token -- after the text that preceded it.
// A prompt the storage refuses (a negative id) makes begin() throw and leaves the running
// generation as it was: the fresh storage replaces the old one only once it is seeded. A round
// with a negative id among its tokens or the key before them makes observe() throw
// std::invalid_argument naming it and its position in `context`, before anything is recorded.
// propose() only reads the storage and changes nothing: a negative id in the context is not
// refused (no stored n-gram holds one, so a key holding it matches nothing), and with padding
// (stop_if_unknown false) it can come back as a guess.
class NGramDrafter final : public Drafter {
 public:
  explicit NGramDrafter(NGramDrafterConfig config = {})
      : config_(config), storage_(make_storage(config)) {}

  std::string name() const override {
    return std::string(config_.one_level ? "ngram-one-level" : "ngram") +
           "(n=" + std::to_string(config_.n) +
           (config_.one_level ? "" : ", min_context=" + std::to_string(config_.min_context)) +
           (config_.stop_if_unknown ? "" : ", pad") + ")";
  }
  void begin(std::span<const Token> prompt) override {
    std::unique_ptr<NGramModel> fresh = make_storage(config_);
    fresh->seed(prompt);
    storage_ = std::move(fresh);
  }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    return draft(*storage_, context, k, config_.stop_if_unknown);
  }
  void observe(std::span<const Token> context, const RoundRecord& round) override {
    const auto first = static_cast<std::size_t>(round.position);
    if (first + round.emitted.size() != context.size()) {
      throw std::logic_error("NGramDrafter::observe: context does not end with the round's tokens");
    }
    // All or nothing: the ids the updates below would refuse one at a time (the emitted tokens
    // and the n-1 before the first, its key) are checked before the first is recorded.
    const std::size_t key = static_cast<std::size_t>(config_.n - 1);
    for (std::size_t i = first > key ? first - key : 0; i < context.size(); ++i) {
      if (context[i] < 0) {
        throw std::invalid_argument("NGramDrafter::observe: token id " +
                                    std::to_string(context[i]) + " at position " +
                                    std::to_string(i) + " is negative");
      }
    }
    for (std::size_t i = 0; i < round.emitted.size(); ++i) {
      storage_->update(context.first(first + i), std::span<const Token>(&round.emitted[i], 1));
    }
  }
  // The current generation's storage; begin() replaces it, so the reference lasts until then.
  const NGramModel& storage() const { return *storage_; }

 private:
  static std::unique_ptr<NGramModel> make_storage(const NGramDrafterConfig& c) {
    if (c.one_level) return std::make_unique<OneLevelNGramStorage>(c.n);
    return std::make_unique<NGramStorage>(c.n, c.min_context);
  }

  NGramDrafterConfig config_;
  std::unique_ptr<NGramModel> storage_;
};

}  // namespace speclab
