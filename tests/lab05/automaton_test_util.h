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

}  // namespace speclab::lab05_testing
