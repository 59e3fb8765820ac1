// Lab 06 -- the policy on the measured CpuLlama cost curve (data/cost_curves/README.md).
// These cases SKIP, saying why, when no measured curve is there.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "lab06_util.h"

using namespace speclab;

namespace {

void require_shape(const CostCurve& c) {
  INFO("the measured curve must list b = 1 4 8 32 and k up to at least 5 (AUTO's largest k)");
  for (int b : {1, 4, 8, 32}) {
    REQUIRE(std::find(c.batch_sizes().begin(), c.batch_sizes().end(), b) != c.batch_sizes().end());
  }
  REQUIRE(c.max_k() >= 5);
}

}  // namespace

TEST_SUITE("lab06 / The AUTO heuristic and its limits") {
  TEST_CASE("on the measured CpuLlama curve the policy never falls below 0.95x no speculation") {
    const CostCurve curve = lab06::measured_curve_or_skip();
    INFO(
        "this sweep runs on your acceptance_profile, expected_tokens_per_run, expected_speedup "
        "and choose_k: if one of their hand-computed cases fails too, fix that one first");

    require_shape(curve);
    std::vector<DrafterProfile> profiles = lab06::synthetic_profiles();
    for (int n : {1, 3, 5}) {
      profiles.push_back(lab06::measure_prompt_lookup(lab06::workload(true), n));
      profiles.push_back(lab06::measure_prompt_lookup(lab06::workload(false), n));
    }
    REQUIRE_MESSAGE(lab06::names_distinct(profiles),
                    "two profiles share a name: their 'chose k' lines could not be told apart");
    for (const auto& p : profiles) {
      for (int b : curve.batch_sizes()) {
        const int k = choose_k(curve, b, p.alpha, curve.max_k());
        INFO(curve.source(), " ", p.name, " b=", b, " chose k=", k);
        REQUIRE(lab06::ref_speedup(curve, b, k, p.alpha) >= 0.95);  // the first loss says it
        REQUIRE(lab06::ref_speedup(curve, b, k, p.alpha) ==
                doctest::Approx(lab06::ref_best(curve, b, p.alpha, curve.max_k())));
      }
    }
  }

  TEST_CASE(
      "on the measured CpuLlama curve the policy matches or beats AUTO at batch 1 4 8 and 32") {
    const CostCurve curve = lab06::measured_curve_or_skip();
    require_shape(curve);
    for (bool easy : {true, false}) {
      const std::vector<DrafterProfile> drafters = {
          lab06::measure_prompt_lookup(lab06::workload(easy), 3),
          lab06::measure_prompt_lookup(lab06::workload(easy), 5)};
      for (int b : {1, 4, 8, 32}) {
        const AutoChoice a = trtllm_auto(b);
        const double auto_speedup =
            a.k == 0 ? 1.0 : lab06::ref_speedup(curve, b, a.k, drafters[a.n == 3 ? 0 : 1].alpha);
        const SpeculationPlan plan = plan_speculation(curve, b, drafters, curve.max_k());
        const double plan_speedup = lab06::ref_plan_speedup(curve, b, drafters, plan);
        INFO(std::string(easy ? "periodic" : "markov"), " b=", b, ": AUTO (k=", a.k, " n=", a.n,
             ") ", auto_speedup, "x, policy (k=", plan.k, ") ", plan_speedup, "x");
        CHECK(plan_speedup >= auto_speedup - 1e-12);
        CHECK(plan_speedup >= 1.0);
      }
    }
  }
}
