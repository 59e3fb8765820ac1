// Lab 06 -- expected_speedup and choose_k on cost curves. Chapter: book/lab06_economics.md
#include <doctest/doctest.h>

#include <cstdio>
#include <iomanip>
#include <stdexcept>
#include <vector>

#include "lab06_util.h"

using namespace speclab;
using D = std::vector<double>;

namespace {

// A small hand-made curve: at b = 1 drafts are nearly free, at b = 32 each one costs a lot.
CostCurve hand_curve() {
  const double t[2][5] = {{10, 11, 12, 13, 14}, {20, 40, 60, 80, 100}};
  return CostCurve::from_function(
      {1, 32}, 4, [&](int b, int k) { return t[b == 32][k]; }, "hand");
}

}  // namespace

TEST_SUITE("lab06 / Expected speed-up") {
  TEST_CASE("hand-computed: the same drafts win at batch 1 and lose at batch 32") {
    const CostCurve c = hand_curve();
    const D alpha = {0.8, 0.5, 0.25, 0.0};
    INFO(
        "speedup = E(k) * T(b,0) / T(b,k), with E(1) = 1.8, E(2) = 2.2, E(3) = 2.3 and both T at "
        "the batch size asked: T(1, k) = 10 11 12 13 14, T(32, k) = 20 40 60 80 100");
    CHECK(expected_speedup(c, 1, 2, alpha) == doctest::Approx(2.2 * 10 / 12));
    CHECK(expected_speedup(c, 32, 2, alpha) == doctest::Approx(2.2 * 20 / 60));
    CHECK(expected_speedup(c, 1, 3, alpha) == doctest::Approx(2.3 * 10 / 13));
    CHECK(expected_speedup(c, 32, 1, alpha) == doctest::Approx(1.8 * 20 / 40));
  }

  TEST_CASE("k = 0 is plain decoding: a speed-up of exactly 1 at every batch size") {
    const CostCurve c = lab06::curve_of(lab06::roofline_cost(), "roofline");
    INFO(
        "the header promises exactly 1, not about 1: choose_k keeps k = 0 unless a k > 0 is "
        "strictly faster, so a k = 0 of 0.9999999999999999 loses a tie it should win. 1 token per "
        "run times T(b, 0) / T(b, 0) is exactly 1 in floating point; (1 / T(b, 0)) * T(b, 0) "
        "need not be");
    for (int b : lab06::toy_batch_sizes()) {
      CAPTURE(b);
      double s = 0.0;
      CHECK_NOTHROW(s = expected_speedup(c, b, 0, geometric_profile(0.7, 8)));
      INFO("expected_speedup(k = 0) returned " << std::setprecision(17) << s);
      CHECK(s == 1.0);
    }
  }

  TEST_CASE("a batch size between the measured ones uses the interpolated curve") {
    const CostCurve c = hand_curve();
    const D alpha = {0.8, 0.5, 0.25, 0.0};
    // b = 16 lies 15/31 of the way from 1 to 32: T(16, 0) = 10 + 10 * 15/31, T(16, 2) = 12 + 48 *
    // 15/31.
    const double w = 15.0 / 31.0;
    INFO(
        "b = 16 is 15/31 of the way from 1 to 32: T(16, k) interpolates T(1, k) and T(32, k) "
        "(CostCurve::seconds(b, k) does it), so the speed-up is 2.2 * T(16, 0) / T(16, 2) = "
        "2.2 * (10 + 10 w) / (12 + 48 w) with w = 15/31");
    CHECK(expected_speedup(c, 16, 2, alpha) ==
          doctest::Approx(2.2 * (10 + 10 * w) / (12 + 48 * w)));
  }

  TEST_CASE("out-of-range k or batch size is an error, not a guess") {
    const CostCurve c = hand_curve();
    const D alpha = geometric_profile(0.5, 8);
    CHECK_THROWS_AS(expected_speedup(c, 1, 5, alpha), std::out_of_range);   // curve has k <= 4
    CHECK_THROWS_AS(expected_speedup(c, 64, 1, alpha), std::out_of_range);  // and b <= 32
    INFO("k = 0 is 1 only where the curve has T(b, 0): b = 64 is still out of range");
    CHECK_THROWS_AS(expected_speedup(c, 64, 0, alpha), std::out_of_range);
    CHECK_THROWS_AS(expected_speedup(c, 1, 3, D{0.5, 0.5}), std::invalid_argument);
    INFO("and only for rates that are probabilities: a rate of 1.5 is an error at k = 0 too");
    CHECK_THROWS_AS(expected_speedup(c, 1, 0, D{1.5, 0.5}), std::invalid_argument);
  }
}

TEST_SUITE("lab06 / Choosing k") {
  TEST_CASE("hand-computed: speculate deep at batch 1 and not at all at batch 32") {
    const CostCurve c = hand_curve();
    const D alpha = {0.8, 0.5, 0.25, 0.0};
    INFO("b=1: k=1 -> 1.636, k=2 -> 1.833, k=3 -> 1.769; b=32: every k < 1");
    CHECK(choose_k(c, 1, alpha, 4) == 2);
    CHECK(choose_k(c, 32, alpha, 4) == 0);
  }

  TEST_CASE("no speculation when nothing is ever accepted") {
    const CostCurve c = lab06::curve_of(lab06::roofline_cost(), "roofline");
    for (int b : lab06::toy_batch_sizes()) {
      INFO("b=", b, ": with alpha = 0 every k > 0 only adds cost");
      CHECK(choose_k(c, b, geometric_profile(0.0, 8), 8) == 0);
    }
    // The same curve with a first draft that is always accepted: the 0 above must come from the
    // rates, not from a choose_k that never speculates.
    const D first_sure = {1, 0, 0, 0, 0, 0, 0, 0};
    for (int b : lab06::toy_batch_sizes()) {
      const int want = lab06::ref_speedup(c, b, 1, first_sure) > 1.0 ? 1 : 0;
      INFO("b=", b, ": with alpha = 1 0 0 0 0 0 0 0 every k >= 1 gives E = 2, so k = 1 wins ",
           "wherever T(b, 1) < 2 T(b, 0), and 0 elsewhere; want k=", want);
      CHECK(choose_k(c, b, first_sure, 8) == want);
    }
  }

  TEST_CASE("ties go to the smaller k and break-even means do not speculate") {
    const CostCurve flat = CostCurve::from_function(
        {1}, 6, [](int, int) { return 1.0; }, "flat");
    {
      INFO("on a flat curve alpha = 1 1 0 0 0 0 gives E = 3 for every k >= 2: the smallest wins");
      CHECK(choose_k(flat, 1, D{1, 1, 0, 0, 0, 0}, 6) == 2);
    }
    const CostCurve c = hand_curve();
    INFO("b=32 with sure drafts: k=1 gives 2 * 20 / 40 = 1.0 exactly, no better than k=0");
    CHECK(choose_k(c, 32, D{1, 1, 1, 1}, 4) == 0);
  }

  TEST_CASE("a dip in the cost curve: the best k can lie past a worse one") {
    // A measured curve need not grow smoothly with k (book/lab06_economics.md: the 2-thread
    // CpuLlama curve prices k = 5 below k = 4 at batch 1), so a search that stops once a k is
    // no better than the one before misses the best k past the bump.
    const double t[5] = {10, 25, 12, 20, 13};
    const CostCurve bumpy = CostCurve::from_function(
        {1}, 4, [&](int, int k) { return t[k]; }, "bumpy");
    const D sure = {1, 1, 1, 1};
    INFO(
        "sure drafts, E(k) = k + 1, on T(1, k) = 10 25 12 20 13: k = 1 -> 0.8, k = 2 -> 2.5, "
        "k = 3 -> 2.0, k = 4 -> 3.85; try every k up to K, past a loss and past a dip");
    CHECK(choose_k(bumpy, 1, sure, 4) == 4);
    CHECK(choose_k(bumpy, 1, sure, 3) == 2);
  }

  TEST_CASE("k never exceeds max_k or the profile or the curve") {
    const CostCurve flat = CostCurve::from_function(
        {1}, 6, [](int, int) { return 1.0; }, "flat");
    CHECK(choose_k(flat, 1, geometric_profile(0.9, 8), 3) == 3);
    CHECK(choose_k(flat, 1, geometric_profile(0.9, 2), 8) == 2);
    CHECK(choose_k(flat, 1, geometric_profile(0.9, 8), 8) == 6);
    CHECK(choose_k(flat, 1, geometric_profile(0.9, 8), 0) == 0);
    CHECK_THROWS_AS(choose_k(flat, 1, geometric_profile(0.9, 8), -1), std::invalid_argument);
    INFO("max_k < 0 is refused whatever the profile: an empty one too");
    CHECK_THROWS_AS(choose_k(flat, 1, D{}, -1), std::invalid_argument);
  }

  TEST_CASE("bad rates or batch size are rejected even when no k > 0 is tried") {
    // k = 0 is a candidate too, and expected_speedup checks its inputs at k = 0: a loop over
    // k = 1..K that never runs (max_k = 0, an empty profile) must not answer 0 unchecked.
    const CostCurve c = hand_curve();
    {
      INFO("a rate of 1.5 is not a probability: rejected even with max_k = 0");
      CHECK_THROWS_AS(choose_k(c, 1, D{1.5, 0.5}, 0), std::invalid_argument);
    }
    {
      INFO("the hand curve covers batch sizes 1..32 (64 is outside it)");
      CHECK_THROWS_AS(choose_k(c, 64, D{0.5, 0.5}, 0), std::out_of_range);
      CHECK_THROWS_AS(choose_k(c, 64, D{}, 4), std::out_of_range);
    }
    CHECK(choose_k(c, 1, D{}, 4) == 0);
  }

  TEST_CASE("choose_k finds the best k of all on both toy cost models") {
    INFO(
        "this sweep runs on your acceptance_profile, expected_tokens_per_run, expected_speedup "
        "and choose_k: if one of their hand-computed cases fails too, fix that one first");
    for (const auto& curve : {lab06::curve_of(lab06::roofline_cost(), "roofline"),
                              lab06::curve_of(lab06::cpu_like_cost(), "cpu-like")}) {
      for (const auto& p : lab06::synthetic_profiles()) {
        for (int b : curve.batch_sizes()) {
          const int k = choose_k(curve, b, p.alpha, 8);
          INFO(curve.source(), " ", p.name, " b=", b, " chose k=", k);
          REQUIRE(lab06::ref_speedup(curve, b, k, p.alpha) ==  // the first miss says it
                  doctest::Approx(lab06::ref_best(curve, b, p.alpha, 8)));
        }
      }
    }
  }

  TEST_CASE("never below 0.95x no speculation at any batch size on the toy cost models") {
    INFO(
        "this sweep runs on your acceptance_profile, expected_tokens_per_run, expected_speedup "
        "and choose_k: if one of their hand-computed cases fails too, fix that one first");
    for (const auto& curve : {lab06::curve_of(lab06::roofline_cost(), "roofline"),
                              lab06::curve_of(lab06::cpu_like_cost(), "cpu-like")}) {
      std::vector<DrafterProfile> profiles = lab06::synthetic_profiles();
      for (int n : {1, 3, 5}) {
        profiles.push_back(lab06::measure_prompt_lookup(lab06::workload(true), n));
        profiles.push_back(lab06::measure_prompt_lookup(lab06::workload(false), n));
      }
      REQUIRE_MESSAGE(lab06::names_distinct(profiles),
                      "two profiles share a name: their 'chose k' lines could not be told apart");
      for (const auto& p : profiles) {
        {
          INFO(curve.source(), " ", p.name);
          REQUIRE_MESSAGE(p.alpha.size() == 8,
                          "acceptance_profile(stats, 8) returns 8 rates, one per draft position");
        }
        for (int b : curve.batch_sizes()) {
          const int k = choose_k(curve, b, p.alpha, 8);
          const double best = lab06::ref_best(curve, b, p.alpha, 8);
          INFO(curve.source(), " ", p.name, " b=", b, " chose k=", k, " (the best k reaches x",
               best, ")");
          REQUIRE(lab06::ref_speedup(curve, b, k, p.alpha) >= 0.95);  // the first loss says it
          if (best >= 1.05) {
            INFO("speculating pays here: never below 0.95x also means gaining where a k > 0 gains");
            REQUIRE(lab06::ref_speedup(curve, b, k, p.alpha) > 1.0);
          }
        }
      }
    }
  }

  TEST_CASE("the chosen k shrinks as the batch grows and wins clearly at batch 1") {
    const CostCurve curve = lab06::curve_of(lab06::roofline_cost(), "roofline");
    for (double a : {0.4, 0.6, 0.8}) {
      const D alpha = geometric_profile(a, 8);
      std::vector<int> ks;
      for (int b : curve.batch_sizes()) ks.push_back(choose_k(curve, b, alpha, 8));
      INFO("alpha=", a, ": k by batch size 1 2 4 8 16 32 64 = ", ks[0], " ", ks[1], " ", ks[2], " ",
           ks[3], " ", ks[4], " ", ks[5], " ", ks[6]);
      for (size_t i = 1; i < ks.size(); ++i) CHECK(ks[i] <= ks[i - 1]);
      CHECK(ks.front() >= 4);  // at batch 1 a draft position is nearly free
      CHECK(ks.back() == 0);   // at batch 64 the pass is compute-bound before any draft
      CHECK(lab06::ref_speedup(curve, 1, ks.front(), alpha) > 1.0 / (1.0 - a) * 0.75);
    }
  }
}

TEST_SUITE("lab06 / The AUTO heuristic and its limits") {
  TEST_CASE("the policy matches or beats AUTO at every batch size on the toy cost models") {
    // AUTO chooses prompt lookup with n = 3 or 5 and a fixed k; the policy may choose either
    // drafter and any k. Both are judged by the same expected speed-up.
    for (bool easy : {true, false}) {
      const std::vector<DrafterProfile> drafters = {
          lab06::measure_prompt_lookup(lab06::workload(easy), 3),
          lab06::measure_prompt_lookup(lab06::workload(easy), 5)};
      for (const auto& curve : {lab06::curve_of(lab06::roofline_cost(), "roofline"),
                                lab06::curve_of(lab06::cpu_like_cost(), "cpu-like")}) {
        for (int b : curve.batch_sizes()) {
          const AutoChoice a = trtllm_auto(b);
          const double auto_speedup =
              a.k == 0 ? 1.0 : lab06::ref_speedup(curve, b, a.k, drafters[a.n == 3 ? 0 : 1].alpha);
          const SpeculationPlan plan = plan_speculation(curve, b, drafters, 8);
          const double plan_speedup = lab06::ref_plan_speedup(curve, b, drafters, plan);
          INFO(curve.source(), std::string(easy ? " periodic" : " markov"), " b=", b,
               ": AUTO k=", a.k, " n=", a.n, " -> ", auto_speedup, "; policy k=", plan.k, " -> ",
               plan_speedup);
          CHECK(plan_speedup >= auto_speedup - 1e-12);
          CHECK(plan_speedup >= 1.0);
        }
      }
    }
  }

  TEST_CASE("AUTO ignores the cost curve: at batch 32 its k = 3 loses even on easy text") {
    const std::vector<DrafterProfile> drafters = {
        lab06::measure_prompt_lookup(lab06::workload(true), 3),
        lab06::measure_prompt_lookup(lab06::workload(true), 5)};
    const CostCurve curve = lab06::curve_of(lab06::roofline_cost(), "roofline");
    const AutoChoice a = trtllm_auto(32);
    CHECK(a.k == 3);
    CHECK(a.n == 5);
    const double auto_speedup = lab06::ref_speedup(curve, 32, a.k, drafters[1].alpha);
    const SpeculationPlan plan = plan_speculation(curve, 32, drafters, 8);
    const double plan_speedup = lab06::ref_plan_speedup(curve, 32, drafters, plan);
    INFO("32 x 4 = 128 positions per pass, twice the knee: AUTO expects ", auto_speedup,
         "x; the policy (k=", plan.k, ") expects ", plan_speedup, "x");
    CHECK(auto_speedup < 0.8);
    CHECK(plan.k == 1);
    CHECK(plan_speedup > 1.1);
    CHECK(trtllm_auto(33).k == 0);
    CHECK(trtllm_auto(4).k == 5);
    CHECK(trtllm_auto(5).k == 3);
  }
}
