#pragma once
// Helpers shared by the lab 05 test files that compare a drafter's automaton with a twin's.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "suffix_automaton.h"

namespace speclab::lab05_testing {

// An automaton in words: its stream, its state and transition counts and its longest match. Two
// automata built by extend from the same stream have the same text; one that was cleared, or
// extended with part of a refused prompt, does not.
inline std::string state_text(const SuffixAutomaton& sa) {
  std::string out = "tokens [";
  for (Token t : sa.tokens()) out += ' ' + std::to_string(t);
  const SuffixMatch m = sa.longest_match();
  return out + " ] states=" + std::to_string(sa.num_states()) +
         " transitions=" + std::to_string(sa.num_transitions()) + " match={length " +
         std::to_string(m.length) + ", end " + std::to_string(m.end) + "}";
}

// One generation that the refusal cases start alike on a drafter and its twin: a prompt, then one
// observed round. A case then sends the calls that must throw to the drafter alone and compares
// it with the twin.
struct TwinGeneration {
  std::vector<Token> prompt = {1, 2, 3, 1, 2};
  std::vector<Token> context = {1, 2, 3, 1, 2, 3, 1};

  template <class D>
  void start(D& d, D& twin) const {
    d.begin(prompt);
    twin.begin(prompt);
    d.observe(context, RoundRecord{});
    twin.observe(context, RoundRecord{});
    REQUIRE(state_text(d.automaton()) == state_text(twin.automaton()));
  }
};

// Sends contexts with a negative id (-7) to d's propose() and observe() after TwinGeneration's
// start, which leaves 1 2 3 1 2 3 1 in both automata: one that extends the stream, one whose last
// seen token differs, another text and a shorter one (the last three make sync_automaton
// rebuild). Each call must throw std::invalid_argument "<who>::propose: token id -7 at position P
// is negative" (::observe likewise) and leave d's automaton as the twin's; `after_each()` adds a
// case's own checks. Then both must propose alike for a good context.
template <class D, class F>
void check_refused_contexts(D& d, D& twin, const std::string& who, F after_each) {
  struct Refused {
    std::vector<Token> context;
    int position;  // of -7 in the context
  };
  const Refused refused[] = {
      {{1, 2, 3, 1, 2, 3, 1, 4, -7}, 8},  // extends the stream: 4 would go in first
      {{1, 2, 3, 1, 2, 3, -7}, 6},  // its last seen token differs: a rebuild, 1 2 3 1 2 3 first
      {{5, 6, -7}, 2},              // another text: a rebuild, 5 6 first
      {{-7}, 0},                    // shorter: a rebuild, the automaton cleared first
  };
  for (const auto& [context, position] : refused) {
    CAPTURE(context);
    const std::string at = ": token id -7 at position " + std::to_string(position) + " is negative";
    const std::string in_propose = who + "::propose" + at;
    const std::string in_observe = who + "::observe" + at;
    CHECK_THROWS_WITH_AS(d.propose(context, 3), in_propose.c_str(), std::invalid_argument);
    CHECK(state_text(d.automaton()) == state_text(twin.automaton()));
    CHECK_THROWS_WITH_AS(d.observe(context, RoundRecord{}), in_observe.c_str(),
                         std::invalid_argument);
    CHECK(state_text(d.automaton()) == state_text(twin.automaton()));
    after_each();
  }
  const std::vector<Token> next = {1, 2, 3, 1, 2, 3, 1, 2};
  CHECK(d.propose(next, 3) == twin.propose(next, 3));
  CHECK(state_text(d.automaton()) == state_text(twin.automaton()));
}

}  // namespace speclab::lab05_testing
