#pragma once
// Where loops read the time from: the wall clock, or a simulated clock that a target advances by
// what its cost model says a call costs. A simulated clock makes timing tests exact and instant.
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace speclab {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since an arbitrary origin; never decreases.
  virtual double now() const = 0;
};

// std::chrono::steady_clock.
class WallClock final : public Clock {
 public:
  double now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// Starts at 0 and moves only when advance() is called (by a simulated target's cost model).
// Reading it costs nothing, so code timed by it (drafting, bookkeeping) takes 0 seconds.
class SimulatedClock final : public Clock {
 public:
  double now() const override { return now_; }
  // Requires seconds finite and >= 0, and now() + seconds finite; throws std::invalid_argument
  // otherwise, and then the clock is unchanged (an infinite time would make every later duration
  // NaN).
  void advance(double seconds) {
    check_advance(seconds);
    now_ += seconds;
  }
  // Throws what advance(seconds) would throw, changing nothing: for a caller that must know a
  // step is valid before it changes its own state.
  void check_advance(double seconds) const {
    if (!(seconds >= 0.0) || !std::isfinite(seconds)) {
      throw std::invalid_argument("SimulatedClock::advance: seconds must be finite and >= 0, got " +
                                  std::to_string(seconds));
    }
    if (!std::isfinite(now_ + seconds)) {
      throw std::invalid_argument("SimulatedClock::advance: now " + std::to_string(now_) + " + " +
                                  std::to_string(seconds) + " seconds is not finite");
    }
  }

 private:
  double now_ = 0.0;
};

}  // namespace speclab
