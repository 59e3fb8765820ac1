#pragma once
// Lab 05 -- the suffix-automaton drafter: the longest match instead of a fixed n.
// The chapter: book/lab05_suffix_automaton.md
//
// You implement the functions marked "(lab 05)" below, in starter.cpp. The transition table,
// the inspection helpers and the two drafters at the end of this file are glue.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mini_engine/core/token.h"
#include "mini_engine/spec/drafter.h"

namespace speclab {

// One state's outgoing transitions, token -> state index, kept sorted by token. Copyable (a clone
// copies its original's table). find() is O(log degree); set() is O(degree) for a new token.
class TransitionMap {
 public:
  // The target state for `t`, or -1 when there is no transition on `t`.
  int find(Token t) const {
    const auto it = lower(t);
    return it != edges_.end() && it->first == t ? it->second : -1;
  }
  // Adds the transition on `t`, or redirects it when it exists.
  void set(Token t, int state) {
    const auto it = lower(t);
    if (it != edges_.end() && it->first == t) {
      edges_[static_cast<std::size_t>(it - edges_.begin())].second = state;
    } else {
      edges_.insert(it, {t, state});
    }
  }
  std::size_t size() const { return edges_.size(); }
  // (token, state) pairs in increasing token order.
  const std::vector<std::pair<Token, int>>& edges() const { return edges_; }

 private:
  std::vector<std::pair<Token, int>>::const_iterator lower(Token t) const {
    return std::lower_bound(edges_.begin(), edges_.end(), t,
                            [](const std::pair<Token, int>& e, Token x) { return e.first < x; });
  }
  std::vector<std::pair<Token, int>> edges_;
};

// The longest suffix of the stream that also occurred earlier, and where.
struct SuffixMatch {
  int length = 0;         // its length in tokens; 0 when no suffix (not even the last token)
                          // occurred before
  std::int64_t end = -1;  // the index in the stream of the last token of its *first* occurrence;
                          // always < size() - 1. -1 when length == 0
  bool operator==(const SuffixMatch&) const = default;
};

// An online suffix automaton over a token stream: the smallest automaton that accepts every
// substring of the tokens seen so far. Each state stands for a set of substrings that end at the
// same positions (the same "endpos" set); `len` is the longest of them and `link` (the suffix
// link) points to the state of the longest suffix that ends at more positions.
class SuffixAutomaton {
 public:
  // An empty automaton: the root state alone (len 0, no link).
  SuffixAutomaton() { clear(); }

  // (lab 05) Appends `t` to the stream and updates the automaton: amortized O(1) states and
  // transitions touched per token. Any token id >= 0 is fine; throws std::invalid_argument on a
  // negative id.
  void extend(Token t);

  // (lab 05) The longest suffix of the stream that also occurred earlier (ending before the last
  // token), and the end of its first occurrence. O(1): it is the state that the suffix link of
  // the whole stream's state points to. {0, -1} on an empty stream or when nothing repeats.
  SuffixMatch longest_match() const;

  // (lab 05) Up to k tokens that followed the first occurrence of longest_match():
  // tokens()[end + 1, end + 1 + k), cut at the end of the stream. Proposes nothing when the match
  // is shorter than `min_match` (or there is none) or k == 0.
  // Throws std::invalid_argument when k < 0 or min_match < 1.
  std::vector<Token> propose(int k, int min_match) const;

  // ---- glue: the state, and inspection for tests ----

  // Forgets the stream.
  void clear() {
    states_.assign(1, State{});
    last_ = 0;
    tokens_.clear();
  }
  std::span<const Token> tokens() const { return tokens_; }
  std::size_t size() const { return tokens_.size(); }
  int num_states() const { return static_cast<int>(states_.size()); }
  std::size_t num_transitions() const {
    std::size_t n = 0;
    for (const State& s : states_) n += s.next.size();
    return n;
  }
  // True when `pattern` occurs in the stream (walks the transitions from the root).
  bool contains(std::span<const Token> pattern) const {
    int s = 0;
    for (Token t : pattern) {
      s = states_[static_cast<std::size_t>(s)].next.find(t);
      if (s < 0) return false;
    }
    return true;
  }

 private:
  struct State {
    int len = 0;                // the longest substring this state stands for
    int link = -1;              // suffix link: a state with a shorter len; -1 for the root only
    std::int64_t first_end = -1;  // where the first occurrence of this state's substrings ends
    TransitionMap next;
  };
  std::vector<State> states_;   // states_[0] is the root
  int last_ = 0;                // the state of the whole stream
  std::vector<Token> tokens_;
};

// (lab 05) The enhancer rule. When `sa`'s longest match is at least `threshold` tokens long, the
// automaton's proposal (sa.propose(k, threshold)) overrides the inner drafter's; otherwise
// returns inner.propose(context, k). The inner drafter is not asked when the automaton wins.
// `sa` must already hold `context`. Throws std::invalid_argument when threshold < 1 or k < 1.
std::vector<Token> enhanced_propose(const SuffixAutomaton& sa, Drafter& inner,
                                    std::span<const Token> context, int k, int threshold);

// ---- glue: the engine-facing drafters (not part of the exercise) ----

// Brings `sa` up to date with `context`: extends it with the tokens it has not seen. It trusts
// that `context` extends what it saw (the engine guarantees it) and checks only the last seen
// token; if that differs, or `context` is shorter, it rebuilds from scratch.
inline void sync_automaton(SuffixAutomaton& sa, std::span<const Token> context) {
  const std::size_t seen = sa.size();
  if (seen > context.size() || (seen > 0 && context[seen - 1] != sa.tokens()[seen - 1])) {
    sa.clear();
  }
  for (std::size_t i = sa.size(); i < context.size(); ++i) sa.extend(context[i]);
}

// The suffix automaton on its own: proposes what followed the longest earlier match of the
// context's suffix, when that match has at least `min_match` tokens.
class SuffixAutomatonDrafter final : public Drafter {
 public:
  explicit SuffixAutomatonDrafter(int min_match = 1) : min_match_(min_match) {
    if (min_match < 1) throw std::invalid_argument("SuffixAutomatonDrafter: min_match must be >= 1");
  }
  std::string name() const override { return "sa(min_match=" + std::to_string(min_match_) + ")"; }
  void begin(std::span<const Token> prompt) override {
    sa_.clear();
    sync_automaton(sa_, prompt);
  }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    sync_automaton(sa_, context);
    return sa_.propose(k, min_match_);
  }
  void observe(std::span<const Token> context, const RoundRecord& /*round*/) override {
    sync_automaton(sa_, context);
  }
  const SuffixAutomaton& automaton() const { return sa_; }

 private:
  int min_match_;
  SuffixAutomaton sa_;
};

// The automaton as an enhancer of any other drafter (prompt lookup, an n-gram pool, a model):
// enhanced_propose picks the automaton's draft when its match reaches `threshold` tokens.
class SuffixEnhancerDrafter final : public Drafter {
 public:
  SuffixEnhancerDrafter(std::shared_ptr<Drafter> inner, int threshold)
      : inner_(std::move(inner)), threshold_(threshold) {
    if (!inner_) throw std::invalid_argument("SuffixEnhancerDrafter: no inner drafter given");
    if (threshold < 1) throw std::invalid_argument("SuffixEnhancerDrafter: threshold must be >= 1");
  }
  std::string name() const override {
    return "sa(threshold=" + std::to_string(threshold_) + ")+" + inner_->name();
  }
  void begin(std::span<const Token> prompt) override {
    sa_.clear();
    sync_automaton(sa_, prompt);
    inner_->begin(prompt);
  }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    sync_automaton(sa_, context);
    return enhanced_propose(sa_, *inner_, context, k, threshold_);
  }
  void observe(std::span<const Token> context, const RoundRecord& round) override {
    sync_automaton(sa_, context);
    inner_->observe(context, round);
  }
  const SuffixAutomaton& automaton() const { return sa_; }
  Drafter& inner() { return *inner_; }

 private:
  std::shared_ptr<Drafter> inner_;
  int threshold_;
  SuffixAutomaton sa_;
};

}  // namespace speclab
