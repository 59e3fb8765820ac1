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
  // What the refusal cases' drafters (min_match 2, or an enhancer with threshold 2) propose for
  // `context` with k = 3: its longest match "1 2 3 1" first ended at index 3, and 2 3 1 followed.
  std::vector<Token> draft = {2, 3, 1};

  // Also requires that d's automaton holds the generation: an automaton that holds nothing would
  // look kept whatever the refused calls did.
  template <class D>
  void start(D& d, D& twin) const {
    d.begin(prompt);
    twin.begin(prompt);
    d.observe(context, RoundRecord{});
    twin.observe(context, RoundRecord{});
    {
      INFO(
          "the generation the refusals must keep, 1 2 3 1 2 3 1: extend must record it in "
          "tokens() and longest_match() find 1 2 3 1 ending at index 3 (the cases of 'Extending "
          "by one token' and 'The longest earlier match' come first)");
      REQUIRE(std::vector<Token>(d.automaton().tokens().begin(), d.automaton().tokens().end()) ==
              context);
      REQUIRE(d.automaton().longest_match() == SuffixMatch{4, 3});
    }
    REQUIRE(state_text(d.automaton()) == state_text(twin.automaton()));
  }
};

// Sends contexts with a negative id (-7) to d's propose() and observe() after TwinGeneration's
// start, which leaves 1 2 3 1 2 3 1 in both automata: one that extends the stream, one whose last
// seen token differs, another text and a shorter one (the last three make sync_automaton
// rebuild). Each call must throw std::invalid_argument "<who>::propose: token id -7 at position P
// is negative" (::observe likewise) and leave d's automaton as the twin's; `after_each()` adds a
// case's own checks. Then both must propose alike for a good context, 1 2 3 1 2 3 1 2: 3 1 2, what
// followed the first 1 2 3 1 2 (d's min_match, or its threshold, must be at most 5).
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
  const std::vector<Token> draft = d.propose(next, 3);
  CHECK(draft == twin.propose(next, 3));
  CHECK(state_text(d.automaton()) == state_text(twin.automaton()));
  INFO(
      "after the refusals, a good context extends the kept automaton: 1 2 3 1 2 first ended at "
      "index 4, so the draft is 3 1 2");
  CHECK(draft == std::vector<Token>{3, 1, 2});
}

}  // namespace speclab::lab05_testing
