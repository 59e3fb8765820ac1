#pragma once
// Helpers shared by the lab 05 test files that compare a drafter's automaton with a twin's.
#include <string>

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

}  // namespace speclab::lab05_testing
