#pragma once
// Lab 05 -- the suffix-automaton drafter: the longest match instead of a fixed n.
// The chapter: book/lab05_suffix_automaton.md
//
// You implement the functions marked "(lab 05)" below, in starter.cpp. The state storage (and
// its helpers new_state, copy_state, next and set_next, which extend uses), the inspection
// helpers and the two drafters at the end of this file are glue.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mini_engine/core/token.h"
#include "mini_engine/spec/drafter.h"

namespace speclab {

// The transitions of one state beyond the two it keeps inline (see SuffixAutomaton::State),
// token -> state index. Copyable (a clone copies its original's). Up to kListMax edges sit in a
// short list searched in order; past that (the root sees every distinct token) it switches to an
// open-addressing hash table, so find() and set() stay O(1) on average whatever the vocabulary.
class TransitionMap {
 public:
  // The target state for `t` (t >= 0), or -1 when there is no transition on `t`.
  int find(Token t) const {
    if (!hashed_) {
      for (const Edge& e : edges_) {
        if (e.token == t) return e.state;
      }
      return -1;
    }
    const std::size_t mask = edges_.size() - 1;
    for (std::size_t i = slot(t, mask);; i = (i + 1) & mask) {
      if (edges_[i].token == t) return edges_[i].state;
      if (edges_[i].token == kEmpty) return -1;
    }
  }
  // Adds the transition on `t` (t >= 0), or redirects it when it exists.
  void set(Token t, int state) {
    if (!hashed_) {
      for (Edge& e : edges_) {
        if (e.token == t) {
          e.state = state;
          return;
        }
      }
      if (edges_.size() < kListMax) {
        edges_.push_back({t, state});
        ++size_;
        return;
      }
      rehash(4 * kListMax);
    }
    if (2 * (static_cast<std::size_t>(size_) + 1) > edges_.size()) rehash(2 * edges_.size());
    const std::size_t mask = edges_.size() - 1;
    for (std::size_t i = slot(t, mask);; i = (i + 1) & mask) {
      if (edges_[i].token == t) {
        edges_[i].state = state;
        return;
      }
      if (edges_[i].token == kEmpty) {
        edges_[i] = {t, state};
        ++size_;
        return;
      }
    }
  }
  std::size_t size() const { return size_; }
  // Bytes this map holds on the heap (beyond the object itself).
  std::size_t heap_bytes() const { return edges_.capacity() * sizeof(Edge); }

 private:
  struct Edge {
    Token token;
    int state;
  };
  static constexpr Token kEmpty = -1;         // marks a free hash slot (token ids are >= 0)
  static constexpr std::size_t kListMax = 8;  // more than this: hash table
  static std::size_t slot(Token t, std::size_t mask) {
    const std::uint64_t h =
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(t)) * 0x9e3779b97f4a7c15ULL;
    return static_cast<std::size_t>(h ^ (h >> 32)) & mask;
  }
  void rehash(std::size_t buckets) {  // buckets: a power of two
    std::vector<Edge> old = std::move(edges_);
    edges_.assign(buckets, Edge{kEmpty, -1});
    hashed_ = true;
    const std::size_t mask = buckets - 1;
    for (const Edge& e : old) {
      if (e.token == kEmpty) continue;
      std::size_t i = slot(e.token, mask);
      while (edges_[i].token != kEmpty) i = (i + 1) & mask;
      edges_[i] = e;
    }
  }
  std::uint32_t size_ = 0;
  bool hashed_ = false;
  std::vector<Edge> edges_;  // list mode: exactly size_ edges; hash mode: a power-of-two table
};

// The longest suffix of the stream that also occurred earlier, and where.
struct SuffixMatch {
  int length = 0;         // its length in tokens; 0 when no suffix (not even the last token)
                          // occurred before
  std::int64_t end = -1;  // the index in the stream of the last token of its *first* occurrence;
                          // always < size() - 1. -1 when length == 0
  bool operator==(const SuffixMatch&) const = default;
};

// How a failed test prints a match: {length 2, end 7}.
inline std::ostream& operator<<(std::ostream& os, const SuffixMatch& m) {
  return os << "{length " << m.length << ", end " << m.end << "}";
}

// An online suffix automaton over a token stream: the smallest automaton that accepts every
// substring of the tokens seen so far. Each state stands for a set of substrings that end at the
// same positions (the same "endpos" set); `len` is the longest of them and `link` (the suffix
// link) points to the state of the longest suffix that ends at more positions.
class SuffixAutomaton {
 public:
  // The most tokens a stream can hold: states and positions are stored in 32 bits (see State).
  static constexpr std::int64_t kMaxTokens = (std::int64_t{1} << 30) - 1;

  // An empty automaton: the root state alone (len 0, no link). Its stream holds up to
  // kMaxTokens tokens.
  SuffixAutomaton() : SuffixAutomaton(kMaxTokens) {}
  // An empty automaton whose stream holds at most `max_tokens` tokens (1..kMaxTokens): a lower
  // limit caps one stream's memory, and lets the tests reach the limit, which at kMaxTokens (about
  // a billion tokens, tens of gigabytes) they cannot. Throws std::invalid_argument outside
  // 1..kMaxTokens.
  explicit SuffixAutomaton(std::int64_t max_tokens) : max_tokens_(max_tokens) {
    if (max_tokens < 1 || max_tokens > kMaxTokens) {
      throw std::invalid_argument("SuffixAutomaton: max_tokens must be in 1.." +
                                  std::to_string(kMaxTokens) + ", got " +
                                  std::to_string(max_tokens));
    }
    clear();
  }

  // --8<-- [start:extend]
  // (lab 05) Appends `t` to the stream and updates the automaton: amortized O(1) states and
  // transitions touched per token. Any token id >= 0 is fine. Throws std::invalid_argument naming
  // a negative id ("SuffixAutomaton::extend: token id -7 is negative"), and std::length_error
  // (new_state throws it) when the stream already holds max_tokens() tokens; either way the
  // automaton and tokens() are left as they were.
  void extend(Token t);
  // --8<-- [end:extend]

  // --8<-- [start:longest_match]
  // (lab 05) The longest suffix of the stream that also occurred earlier (ending before the last
  // token), and the end of its first occurrence. O(1): it is the state that the suffix link of
  // the whole stream's state points to. {0, -1} on an empty stream or when nothing repeats.
  SuffixMatch longest_match() const;
  // --8<-- [end:longest_match]

  // --8<-- [start:propose]
  // (lab 05) Up to k tokens that followed the first occurrence of longest_match():
  // tokens()[end + 1, end + 1 + k), cut at the end of the stream. Proposes nothing when the match
  // is shorter than `min_match` (or there is none) or k == 0.
  // Throws std::invalid_argument when k < 0 or min_match < 1.
  std::vector<Token> propose(int k, int min_match) const;
  // --8<-- [end:propose]

  // ---- glue: the state, and inspection for tests ----

  // Forgets the stream (keeps the memory already reserved).
  void clear() {
    states_.assign(1, State{});
    overflow_.clear();
    tokens_.clear();
    last_ = 0;
    transition_reads_ = 0;
  }
  // Reserves room for a stream of `n` tokens (at most 2n states), so that extend does not
  // reallocate on the way there. Optional: extend grows the storage by itself.
  void reserve(std::size_t n) {
    tokens_.reserve(n);
    states_.reserve(2 * n + 1);
  }
  std::span<const Token> tokens() const { return tokens_; }
  std::size_t size() const { return tokens_.size(); }
  // The most tokens the stream may hold (the constructor's limit; clear() keeps it).
  std::int64_t max_tokens() const { return max_tokens_; }
  int num_states() const { return static_cast<int>(states_.size()); }
  // Calls of next() since the automaton was made or cleared: the transitions extend looked at,
  // the measure of "amortized O(1) transitions touched per token" (the tests divide it by size()).
  std::int64_t transition_reads() const { return transition_reads_; }
  std::size_t num_transitions() const {
    std::size_t n = 0;
    for (const State& s : states_) {
      for (const Edge& e : s.edges) n += e.token >= 0 ? 1 : 0;
    }
    for (const TransitionMap& m : overflow_) n += m.size();
    return n;
  }
  // Approximate bytes held: the states, the overflow tables and the tokens.
  std::size_t memory_bytes() const {
    std::size_t n = states_.capacity() * sizeof(State) + tokens_.capacity() * sizeof(Token) +
                    overflow_.capacity() * sizeof(TransitionMap);
    for (const TransitionMap& m : overflow_) n += m.heap_bytes();
    return n;
  }
  // True when `pattern` occurs in the stream (walks the transitions from the root).
  bool contains(std::span<const Token> pattern) const {
    int s = 0;
    for (Token t : pattern) {
      s = next(s, t);
      if (s < 0) return false;
    }
    return true;
  }

 private:
  // The layout is chosen for the cache: a token touches a few states, and past the L2 cache every
  // state it touches costs a trip to memory, so a state is small and holds its first transitions
  // itself. Indices and positions are 32-bit, so a stream holds at most kMaxTokens = 2^30 - 1
  // tokens (and at most 2^31 - 2 states).
  struct Edge {
    Token token = -1;          // -1: an unused slot
    std::int32_t target = -1;  // the state reached on `token`
  };
  // 32 bytes, aligned to 32 (the vector then allocates aligned storage): two states to a 64-byte
  // cache line and none split across two (malloc alone guarantees 16; at 16 past a multiple of 32,
  // every other state would straddle two lines).
  struct alignas(32) State {
    std::int32_t len = 0;         // the longest substring this state stands for
    std::int32_t link = -1;       // suffix link: a state with a shorter len; -1 for the root only
    std::int32_t first_end = -1;  // where the first occurrence of this state's substrings ends
    std::int32_t overflow = -1;   // index in overflow_ of its transitions past the first two;
                                  // -1 while it has at most two
    Edge edges[2];                // its first two transitions (most states have one or two)
  };
  static_assert(sizeof(State) == 32);

  // ---- glue for extend: states and transitions by index ----
  // (Indices, not references: states_.push_back may move every state.)

  // Appends a state with no transitions; returns its index. Throws std::length_error (and
  // changes nothing) when first_end reaches the stream limit, max_tokens().
  int new_state(int len, int link, std::int64_t first_end) {
    if (first_end >= max_tokens_) {
      throw std::length_error("SuffixAutomaton: the stream is limited to " +
                              std::to_string(max_tokens_) + " tokens (max_tokens)");
    }
    states_.push_back({len, link, static_cast<std::int32_t>(first_end), -1, {}});
    return static_cast<int>(states_.size()) - 1;
  }
  // Appends a copy of state `q`: the same len, link, first_end and transitions (a clone starts
  // with these; the caller then lowers its len). Returns its index.
  int copy_state(int q) {
    State copy = states_[static_cast<std::size_t>(q)];
    if (copy.overflow >= 0) {
      TransitionMap more = overflow_[static_cast<std::size_t>(copy.overflow)];
      overflow_.push_back(std::move(more));
      copy.overflow = static_cast<std::int32_t>(overflow_.size()) - 1;
    }
    states_.push_back(copy);
    return static_cast<int>(states_.size()) - 1;
  }
  // The state reached from state `s` on `t`, or -1 when `s` has no transition on `t`.
  int next(int s, Token t) const {
    ++transition_reads_;
    const State& st = states_[static_cast<std::size_t>(s)];
    if (st.edges[0].token == t) return st.edges[0].target;
    if (st.edges[1].token == t) return st.edges[1].target;
    return st.overflow < 0 ? -1 : overflow_[static_cast<std::size_t>(st.overflow)].find(t);
  }
  // Adds the transition s --t--> target, or redirects it when s already has one on `t`.
  void set_next(int s, Token t, int target) {
    State& st = states_[static_cast<std::size_t>(s)];
    for (Edge& e : st.edges) {
      if (e.token == t) {
        e.target = target;
        return;
      }
    }
    for (Edge& e : st.edges) {  // slots fill in order and are never freed
      if (e.token < 0) {
        e = {t, target};
        return;
      }
    }
    if (st.overflow < 0) {
      st.overflow = static_cast<std::int32_t>(overflow_.size());
      overflow_.emplace_back();
    }
    overflow_[static_cast<std::size_t>(st.overflow)].set(t, target);
  }

  std::int64_t max_tokens_;                    // see max_tokens()
  std::vector<State> states_;                  // states_[0] is the root
  std::vector<TransitionMap> overflow_;        // transitions past a state's first two
  std::vector<Token> tokens_;                  // the stream; propose copies from it
  int last_ = 0;                               // the state of the whole stream
  mutable std::int64_t transition_reads_ = 0;  // next() calls: see transition_reads()
};

// --8<-- [start:enhanced_propose]
// (lab 05) The enhancer rule. When `sa`'s longest match is at least `threshold` tokens long, the
// automaton's proposal (sa.propose(k, threshold)) overrides the inner drafter's; otherwise
// returns inner.propose(context, k). The inner drafter is not asked when the automaton wins.
// `sa` must already hold `context`. Throws std::invalid_argument when threshold < 1 or k < 1.
std::vector<Token> enhanced_propose(const SuffixAutomaton& sa, Drafter& inner,
                                    std::span<const Token> context, int k, int threshold);
// --8<-- [end:enhanced_propose]

// ---- glue: the engine-facing drafters (not part of the exercise) ----

// Throws std::invalid_argument naming the first negative id in tokens[from, end) and its position
// in `tokens`, after `who` (the caller). The glue below checks the ids before it changes the
// automaton: extend refuses a negative id too, but only when it gets there, with the tokens before
// it already in.
inline void check_token_ids(std::span<const Token> tokens, std::size_t from, const char* who) {
  for (std::size_t i = from; i < tokens.size(); ++i) {
    if (tokens[i] < 0) {
      throw std::invalid_argument(std::string(who) + ": token id " + std::to_string(tokens[i]) +
                                  " at position " + std::to_string(i) + " is negative");
    }
  }
}

// Brings `sa` up to date with `context`: extends it with the tokens it has not seen. It trusts
// that `context` extends what it saw (the engine guarantees it) and checks only the last seen
// token; if that differs, or `context` is shorter, it rebuilds from scratch. All or nothing: a
// negative id among the tokens it would feed (the unseen ones, or all of them on a rebuild) throws
// std::invalid_argument naming `who`, the id and its position in `context`, before `sa` is
// cleared or extended.
inline void sync_automaton(SuffixAutomaton& sa, std::span<const Token> context, const char* who) {
  const std::size_t seen = sa.size();
  const bool rebuild =
      seen > context.size() || (seen > 0 && context[seen - 1] != sa.tokens()[seen - 1]);
  check_token_ids(context, rebuild ? 0 : seen, who);
  if (rebuild) sa.clear();
  for (std::size_t i = sa.size(); i < context.size(); ++i) sa.extend(context[i]);
}

// The suffix automaton on its own: proposes what followed the longest earlier match of the
// context's suffix, when that match has at least `min_match` tokens. With `draft_ratio` > 0 the
// draft is also cut to draft_ratio x the match's length: a short match is weak evidence, a long
// one strong (on SmolLM2's code_edit replies, a 2-token match's next token was right 57% of the
// time, a 12-token one's 97%), so the draft tokens a verify pass pays for (lab 06) go where they
// are likely to be accepted. 0, the default, does not cut. Throws std::invalid_argument when
// min_match < 1 or draft_ratio < 0.
// begin() rebuilds the automaton from the prompt. A prompt with a negative id makes it throw
// std::invalid_argument naming the id, and leaves the running generation's automaton as it was:
// every id is checked before the automaton is cleared. propose() and observe() first bring the
// automaton up to date with `context` (sync_automaton); a negative id among the tokens that feeds
// makes them throw std::invalid_argument naming the call, the id and its position in `context`
// ("SuffixAutomatonDrafter::propose: token id -7 at position 8 is negative"), and leaves the
// automaton as it was.
class SuffixAutomatonDrafter final : public Drafter {
 public:
  explicit SuffixAutomatonDrafter(int min_match = 1, int draft_ratio = 0)
      : min_match_(min_match), draft_ratio_(draft_ratio) {
    if (min_match < 1) {
      throw std::invalid_argument("SuffixAutomatonDrafter: min_match must be >= 1");
    }
    if (draft_ratio < 0) {
      throw std::invalid_argument("SuffixAutomatonDrafter: draft_ratio must be >= 0");
    }
  }
  std::string name() const override {
    return "sa(min_match=" + std::to_string(min_match_) +
           (draft_ratio_ > 0 ? ", draft_ratio=" + std::to_string(draft_ratio_) : "") + ")";
  }
  void begin(std::span<const Token> prompt) override {
    check_token_ids(prompt, 0, "SuffixAutomatonDrafter::begin");
    sa_.clear();
    sync_automaton(sa_, prompt, "SuffixAutomatonDrafter::begin");
  }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    sync_automaton(sa_, context, "SuffixAutomatonDrafter::propose");
    if (draft_ratio_ > 0) {
      // In 64 bits: a long match times a large ratio must not overflow.
      const std::int64_t cap = static_cast<std::int64_t>(draft_ratio_) * sa_.longest_match().length;
      k = static_cast<int>(std::min<std::int64_t>(k, cap));
    }
    return sa_.propose(k, min_match_);
  }
  void observe(std::span<const Token> context, const RoundRecord& /*round*/) override {
    sync_automaton(sa_, context, "SuffixAutomatonDrafter::observe");
  }
  const SuffixAutomaton& automaton() const { return sa_; }

 private:
  int min_match_;
  int draft_ratio_;
  SuffixAutomaton sa_;
};

// The automaton as an enhancer of any other drafter (prompt lookup, an n-gram pool, a model):
// enhanced_propose picks the automaton's draft when its match reaches `threshold` tokens.
// begin() begins the inner drafter, then rebuilds the automaton from the prompt. A prompt with a
// negative id makes it throw std::invalid_argument naming the id before either sees the prompt.
// A prompt the inner drafter refuses (its exception passes through) leaves the automaton as it
// was; the inner drafter's own state is its business. propose() and observe() bring the automaton
// up to date with `context` (sync_automaton) before they ask or tell the inner drafter; a negative
// id among the tokens that feeds makes them throw std::invalid_argument naming the call, the id
// and its position in `context`, with the automaton as it was and the inner drafter not called.
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
    check_token_ids(prompt, 0, "SuffixEnhancerDrafter::begin");
    inner_->begin(prompt);  // before the automaton changes: the inner drafter may refuse it
    sa_.clear();
    sync_automaton(sa_, prompt, "SuffixEnhancerDrafter::begin");
  }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    sync_automaton(sa_, context, "SuffixEnhancerDrafter::propose");
    return enhanced_propose(sa_, *inner_, context, k, threshold_);
  }
  void observe(std::span<const Token> context, const RoundRecord& round) override {
    sync_automaton(sa_, context, "SuffixEnhancerDrafter::observe");
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
