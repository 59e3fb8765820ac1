// Lab 05 reference solution: the online suffix automaton, its longest-match proposal and the
// enhancer rule.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "suffix_automaton.h"

namespace speclab {

void SuffixAutomaton::extend(Token t) {
  if (t < 0) {
    throw std::invalid_argument("SuffixAutomaton::extend: token id " + std::to_string(t) +
                                " is negative");
  }
  const auto position = static_cast<std::int64_t>(tokens_.size());
  const int cur = new_state(states_[last_].len + 1, -1, position);
  tokens_.push_back(t);

  // Every suffix of the old stream without a transition on t gets one, to the new state.
  int p = last_;
  while (p != -1 && next(p, t) == -1) {
    set_next(p, t, cur);
    p = states_[p].link;
  }
  if (p == -1) {
    states_[cur].link = 0;  // t never occurred before: only the empty suffix is shared
  } else {
    const int q = next(p, t);
    if (states_[p].len + 1 == states_[q].len) {
      states_[cur].link = q;
    } else {
      // q also stands for longer strings that do not end here: split off the short ones.
      const int clone = copy_state(q);  // same transitions, same link, same first occurrence
      states_[clone].len = states_[p].len + 1;
      while (p != -1 && next(p, t) == q) {
        set_next(p, t, clone);
        p = states_[p].link;
      }
      states_[q].link = clone;
      states_[cur].link = clone;
    }
  }
  last_ = cur;
}

SuffixMatch SuffixAutomaton::longest_match() const {
  // The whole stream's state holds the suffixes that end only here; its suffix link holds the
  // longest suffix that also ended earlier.
  const int match = states_[last_].link;
  if (match <= 0) return {};  // no link (empty stream) or the root (length 0)
  return {states_[match].len, states_[match].first_end};
}

std::vector<Token> SuffixAutomaton::propose(int k, int min_match) const {
  if (k < 0) {
    throw std::invalid_argument("SuffixAutomaton::propose: k must be >= 0, got " +
                                std::to_string(k));
  }
  if (min_match < 1) {
    throw std::invalid_argument("SuffixAutomaton::propose: min_match must be >= 1, got " +
                                std::to_string(min_match));
  }
  const SuffixMatch m = longest_match();
  if (m.length == 0 || m.length < min_match || k == 0) return {};
  const auto from = static_cast<std::size_t>(m.end + 1);
  const std::size_t to = std::min(tokens_.size(), from + static_cast<std::size_t>(k));
  return {tokens_.begin() + static_cast<std::ptrdiff_t>(from),
          tokens_.begin() + static_cast<std::ptrdiff_t>(to)};
}

std::vector<Token> enhanced_propose(const SuffixAutomaton& sa, Drafter& inner,
                                    std::span<const Token> context, int k, int threshold) {
  if (threshold < 1) {
    throw std::invalid_argument("enhanced_propose: threshold must be >= 1, got " +
                                std::to_string(threshold));
  }
  if (k < 1) {
    throw std::invalid_argument("enhanced_propose: k must be >= 1, got " + std::to_string(k));
  }
  if (sa.longest_match().length >= threshold) return sa.propose(k, threshold);
  return inner.propose(context, k);
}

}  // namespace speclab
