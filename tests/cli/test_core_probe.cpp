#include <doctest/doctest.h>
#include <sched.h>

#include <cmath>
#include <stdexcept>

#include "core_probe.h"
#include "test_util.h"

using namespace speclab;

namespace {

// Ends the case as SKIPPED unless this process may run on two CPUs or more: with one there is no
// round trip to measure, and the case must not pass having checked nothing.
void require_two_cpus() {
  cpu_set_t mine;
  REQUIRE(sched_getaffinity(0, sizeof mine, &mine) == 0);
  if (CPU_COUNT(&mine) < 2) {
    testing::skip("this process may run on one CPU only: no cross-core round trip to measure");
  }
}

}  // namespace

TEST_SUITE("cli / core probe") {
  TEST_CASE("the cross-core round trip is measured between two CPUs, in a plausible range") {
    require_two_cpus();
    const CoreRoundTrip rt = measure_core_round_trip();
    INFO(rt.error);
    REQUIRE(rt.ok());
    // A cache line's round trip between cores takes tens to hundreds of nanoseconds when both
    // CPUs are free; with another job on one of them a trip can wait for a scheduler slice
    // (milliseconds), so the upper bound only rules out garbage.
    CHECK(rt.ns > 5.0);
    CHECK(rt.ns < 1e8);
    CHECK(describe(rt) == std::to_string(static_cast<long>(std::lround(rt.ns))) + " ns");
  }

  TEST_CASE("no trips or no batches is an error, not a division by zero") {
    CHECK_THROWS_AS(measure_core_round_trip(0, 5), std::invalid_argument);
    CHECK_THROWS_AS(measure_core_round_trip(100, 0), std::invalid_argument);
  }

  TEST_CASE("with one CPU there is no round trip to measure, and the reason says so") {
    cpu_set_t saved, one;
    REQUIRE(sched_getaffinity(0, sizeof saved, &saved) == 0);
    int first = 0;
    while (!CPU_ISSET(first, &saved)) ++first;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
    const CoreRoundTrip rt = measure_core_round_trip();
    REQUIRE(sched_setaffinity(0, sizeof saved, &saved) == 0);  // before any CHECK can return
    CHECK_FALSE(rt.ok());
    CHECK(rt.error.find("one CPU") != std::string::npos);
    CHECK(describe(rt).rfind("n/a", 0) == 0);
  }

  TEST_CASE("probes that are skipped measure nothing, and every range gives the reason") {
    RoundTripProbes probes("not probed: --device cuda runs the model on the GPU");
    const RoundTripRange around = probes.next();
    CHECK(around.measured == 0);
    CHECK(around.describe() == "n/a (not probed: --device cuda runs the model on the GPU)");
    probes.next();
    CHECK(probes.all().measured == 0);
    CHECK(probes.all().describe() == "n/a (not probed: --device cuda runs the model on the GPU)");
  }

  TEST_CASE("probes that are not skipped measure, where there are two CPUs") {
    require_two_cpus();
    RoundTripProbes probes;
    const RoundTripRange around = probes.next();
    CHECK(around.measured == 2);
    CHECK(probes.all().measured == 2);
    CHECK(around.min_ns > 5.0);
  }

  TEST_CASE("the probe says which CPUs it measured when they may not be the model's") {
    CHECK(probe_scope_text(0, 1, 2).empty());
    CHECK(probe_scope_text(0, 1, 16) ==
          "between CPUs 0 and 1 of the 16 this process may use; the model's threads are not "
          "pinned to them");
    cpu_set_t mine;
    REQUIRE(sched_getaffinity(0, sizeof mine, &mine) == 0);
    int first = 0, second = 0;
    while (!CPU_ISSET(first, &mine)) ++first;
    for (second = first + 1; CPU_COUNT(&mine) > 1 && !CPU_ISSET(second, &mine); ++second) {
    }
    if (CPU_COUNT(&mine) >= 2) {
      CHECK(probe_scope() == probe_scope_text(first, second, CPU_COUNT(&mine)));
      CHECK(RoundTripProbes().all().scope == probe_scope());
    }
    CHECK(RoundTripProbes("skipped").all().scope.empty());
  }

  TEST_CASE("a range of round trips keeps the lowest and highest measured, and says why if none") {
    RoundTripRange r;
    CHECK(r.describe() == "n/a (not measured)");
    r.add(CoreRoundTrip{0.0, "this process may run on one CPU only"});
    CHECK(r.measured == 0);
    CHECK(r.describe() == "n/a (this process may run on one CPU only)");
    r.add(CoreRoundTrip{372.4, ""});
    CHECK(r.describe() == "372 ns");
    r.add(CoreRoundTrip{79.6, ""});
    r.add(CoreRoundTrip{120.0, ""});
    CHECK(r.measured == 3);
    CHECK(r.min_ns == 79.6);
    CHECK(r.max_ns == 372.4);
    CHECK(r.describe() == "80 to 372 ns");
    RoundTripRange other;
    other.add(CoreRoundTrip{1500.0, ""});
    r.add(other);
    r.add(RoundTripRange{});  // nothing measured: changes nothing
    CHECK(r.measured == 4);
    CHECK(r.describe() == "80 to 1500 ns");
  }
}
