#pragma once
// The pluggable half of speculative decoding: something that guesses the next tokens cheaply.
#include <span>
#include <string>
#include <vector>

#include "mini_engine/core/token.h"
#include "mini_engine/spec/round.h"

namespace speclab {

// Every lab's drafter implements this. The engine owns the context; a drafter may keep its own
// state (an n-gram table, a pool, an automaton) and update it in begin() and observe(), and in
// propose() too (labs 04 and 05 feed it the context's new tokens there).
// Not thread-safe: one generation at a time, from one thread. Drafters that share state (lab
// 04's NGramPoolDrafters with one NGramPoolManager) must be used from one thread: nothing locks it.
class Drafter {
 public:
  Drafter() = default;
  Drafter(const Drafter&) = delete;
  Drafter& operator=(const Drafter&) = delete;
  virtual ~Drafter() = default;

  virtual std::string name() const = 0;

  // Negative token ids. The loops never pass one: they refuse a prompt that holds one before
  // begin(), and every later token is the target's. Called directly, begin(), propose() and
  // observe() check every id they would take into the drafter's state before they change it: a
  // negative one throws std::invalid_argument naming it, and the drafter is then as it was before
  // the call (after a refused begin(), the generation it was running, if any, goes on). Ids a
  // call only reads are not checked; no state holds a negative id, so they match nothing, but a
  // drafter that copies from the context or pads with its last token can return one as a guess
  // (see propose()). What the labs' drafters take in, and so check (their tests hold them to it):
  //  - lab 01's prompt lookup: nothing; it keeps no state, and its propose() copies from context.
  //  - labs 02 and 03 (n-gram storage, NASD): the prompt in begin(); in observe(), the round's
  //    emitted tokens and the n-1 before the first (its key). propose() only reads (and, with
  //    padding, repeats the context's last token on a miss).
  //  - labs 04 and 05 (n-gram pool, suffix automaton): the prompt in begin(); in propose() and
  //    observe(), the context's tokens they have not seen yet (lab 05: all of them when the
  //    context does not extend what it saw). Lab 05's SuffixEnhancerDrafter checks them before
  //    its inner drafter is called.
  //  - wrappers that check nothing themselves (lab 07's ChatDrafter, the CLI's AutoDrafter) call
  //    the inner drafter before they change their own state, and pass its refusal on: they are
  //    then wholly as they were.

  // Called once per generation, before any propose(), with the full prompt.
  // The spans passed to these three are valid only during the call: copy what you keep.
  virtual void begin(std::span<const Token> /*prompt*/) {}

  // Up to `k` guesses for the tokens that follow `context` (prompt + everything emitted so far).
  // May return fewer, or none. Requires k >= 1. Each guess must be a token id of the target's
  // vocabulary: the loops throw std::logic_error naming the drafter for more than k guesses or
  // an id outside it.
  virtual std::vector<Token> propose(std::span<const Token> context, int k) = 0;

  // Called after each verify round; `context` already ends with round.emitted.
  virtual void observe(std::span<const Token> /*context*/, const RoundRecord& /*round*/) {}
};

}  // namespace speclab
