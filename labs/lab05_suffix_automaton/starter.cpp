// Lab 05 -- your file. Implement the functions marked "(lab 05)" in suffix_automaton.h; their
// contracts are there. Run the tests:
//   LAB_IMPL=starter ctest --test-dir build -L lab05 --output-on-failure
#include "suffix_automaton.h"

namespace speclab {

// --8<-- [start:extend]
void SuffixAutomaton::extend(Token t) {
  // TODO(lab05): reject a negative t (std::invalid_argument) before anything changes, then
  // add a state for the whole stream and append t to tokens_ (after new_state: it throws at the
  // stream limit, max_tokens(), and must leave nothing changed), give every suffix state that
  // lacks a transition on t one to it, then set its suffix link -- cloning q when q is too long.
  // Record where each state's first occurrence ends (a clone keeps its original's).
  // The header's glue does the storage: new_state, copy_state, next and set_next (by index).
  (void)t;
  todo("lab05", "SuffixAutomaton::extend",
       "book/lab05_suffix_automaton.md, section 'Extending by one token'");
}
// --8<-- [end:extend]

// --8<-- [start:longest_match]
SuffixMatch SuffixAutomaton::longest_match() const {
  // TODO(lab05): the answer sits one suffix link away from the whole stream's state.
  todo("lab05", "SuffixAutomaton::longest_match",
       "book/lab05_suffix_automaton.md, section 'The longest earlier match'");
}
// --8<-- [end:longest_match]

// --8<-- [start:propose]
std::vector<Token> SuffixAutomaton::propose(int k, int min_match) const {
  // TODO(lab05): copy up to k tokens after the first occurrence of the longest match, unless
  // the match is shorter than min_match.
  (void)k, (void)min_match;
  todo("lab05", "SuffixAutomaton::propose",
       "book/lab05_suffix_automaton.md, section 'Proposing from the match'");
}
// --8<-- [end:propose]

// --8<-- [start:enhanced_propose]
std::vector<Token> enhanced_propose(const SuffixAutomaton& sa, Drafter& inner,
                                    std::span<const Token> context, int k, int threshold) {
  // TODO(lab05): the automaton's draft when its match is long enough, else the inner drafter's.
  (void)sa, (void)inner, (void)context, (void)k, (void)threshold;
  todo("lab05", "enhanced_propose",
       "book/lab05_suffix_automaton.md, section 'The automaton as an enhancer'");
}
// --8<-- [end:enhanced_propose]

}  // namespace speclab
