// An example of hidden tests for a lab whose public tests share a helper header
// (book/instructors.md, "Hidden tests"). A hidden source is compiled like the lab's own cases: it
// includes the public tests' helpers from tests/lab06/ (lab06_util.h) and sees their compile
// definitions (SPECLAB_DATA_DIR, the repository's data/ folder). tests/grader/grade_hidden.py
// grades lab06 with this folder; it is the grader's own test fixture.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lab06_util.h"

using namespace speclab;

TEST_SUITE("lab06 hidden / Choosing k") {
  TEST_CASE("hidden: choose_k is the best k for every profile on the CPU-like toy cost model") {
    const CostCurve curve = lab06::curve_of(lab06::cpu_like_cost(), "cpu-like");
    for (const auto& p : lab06::synthetic_profiles()) {
      for (int b : curve.batch_sizes()) {
        const int k = choose_k(curve, b, p.alpha, 8);
        INFO(p.name, " b=", b, " chose k=", k);
        CHECK(lab06::ref_speedup(curve, b, k, p.alpha) ==
              doctest::Approx(lab06::ref_best(curve, b, p.alpha, 8)));
      }
    }
  }
}

TEST_SUITE("lab06 hidden / Expected speed-up") {
  TEST_CASE("hidden: on the example roofline curve in data/ the speed-up follows the formula") {
    const CostCurve curve =
        CostCurve::load_csv(std::string(SPECLAB_DATA_DIR) + "/cost_curves/toy_roofline.csv");
    const std::vector<double> alpha = geometric_profile(0.7, curve.max_k());
    for (int b : curve.batch_sizes()) {
      CHECK(expected_speedup(curve, b, 0, alpha) == 1.0);
      for (int k = 1; k <= curve.max_k(); ++k) {
        INFO("b=", b, " k=", k);
        CHECK(expected_speedup(curve, b, k, alpha) ==
              doctest::Approx(lab06::ref_speedup(curve, b, k, alpha)));
      }
    }
  }
}
