#pragma once
// A drafter for timing tests: it forwards to `inner` and advances a simulated clock by fixed
// amounts in each call (begin 100 s, propose 1 s, observe 10 s), so a loop's draft-time
// bookkeeping can be checked exactly. Owns nothing: `clock` and `inner` must outlive it.
#include <span>
#include <string>
#include <vector>

#include "mini_engine/core/clock.h"
#include "mini_engine/spec/drafter.h"

namespace speclab::testing {

class ClockedDrafter final : public Drafter {
 public:
  static constexpr double kBegin = 100.0, kPropose = 1.0, kObserve = 10.0;
  ClockedDrafter(SimulatedClock& clock, Drafter& inner) : clock_(clock), inner_(inner) {}
  std::string name() const override { return "clocked(" + inner_.name() + ")"; }
  void begin(std::span<const Token> prompt) override {
    clock_.advance(kBegin);
    inner_.begin(prompt);
  }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    clock_.advance(kPropose);
    return inner_.propose(context, k);
  }
  void observe(std::span<const Token> context, const RoundRecord& r) override {
    clock_.advance(kObserve);
    inner_.observe(context, r);
  }

 private:
  SimulatedClock& clock_;
  Drafter& inner_;
};

}  // namespace speclab::testing
