#pragma once
// The pluggable half of speculative decoding: something that guesses the next tokens cheaply.
#include <span>
#include <string>
#include <vector>

#include "mini_engine/core/token.h"
#include "mini_engine/spec/round.h"

namespace speclab {

// Every lab's drafter implements this. The engine owns the context; a drafter may keep its own
// state (an n-gram table, a pool, an automaton) and update it in begin() and observe().
// Not thread-safe: one generation at a time, from one thread. Drafters that share state (lab
// 04's NGramPoolDrafters with one NGramPoolManager) must be used from one thread: nothing locks it.
class Drafter {
 public:
  Drafter() = default;
  Drafter(const Drafter&) = delete;
  Drafter& operator=(const Drafter&) = delete;
  virtual ~Drafter() = default;

  virtual std::string name() const = 0;

  // Called once per generation, before any propose(), with the full prompt.
  // The spans passed to these three are valid only during the call: copy what you keep.
  // A prompt the drafter cannot take throws std::invalid_argument (the drafters of labs 02 to 05
  // refuse a negative token id), and the drafter is then as it was before the call: the
  // generation it was running, if any, goes on. The tests of labs 02 to 05 hold them to this.
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
