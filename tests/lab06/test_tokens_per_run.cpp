// Lab 06 -- expected_tokens_per_run and acceptance_profile. Chapter: book/lab06_economics.md
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab06_util.h"

using namespace speclab;
using D = std::vector<double>;

TEST_SUITE("lab06 / Tokens per run from acceptance rates") {
  TEST_CASE("hand-computed: alpha 0.8 0.5 0.25 gives 1 then 1.8 then 2.2 then 2.3") {
    const D alpha = {0.8, 0.5, 0.25};
    INFO(
        "E(k) = 1 + a1 + a1*a2 + a1*a2*a3 ...: the target's own token, then each draft that "
        "survives together with every draft before it");
    CHECK(expected_tokens_per_run(alpha, 0) == doctest::Approx(1.0));
    CHECK(expected_tokens_per_run(alpha, 1) == doctest::Approx(1.8));
    CHECK(expected_tokens_per_run(alpha, 2) == doctest::Approx(2.2));
    CHECK(expected_tokens_per_run(alpha, 3) == doctest::Approx(2.3));
  }

  TEST_CASE("the geometric case matches the closed form (1 - a^(k+1)) / (1 - a)") {
    for (double a : {0.1, 0.5, 0.6, 0.9}) {
      for (int k = 0; k <= 8; ++k) {
        INFO("a=", a, " k=", k);
        CHECK(expected_tokens_per_run(geometric_profile(a, 8), k) ==
              doctest::Approx((1 - std::pow(a, k + 1)) / (1 - a)));
      }
    }
    // The two ends: nothing is ever accepted, or everything is.
    CHECK(expected_tokens_per_run(geometric_profile(0.0, 5), 5) == doctest::Approx(1.0));
    CHECK(expected_tokens_per_run(geometric_profile(1.0, 5), 5) == doctest::Approx(6.0));
  }

  TEST_CASE("each extra draft adds alpha^i and the total stays under 1 / (1 - alpha)") {
    const D alpha = geometric_profile(0.5, 8);
    double prev = expected_tokens_per_run(alpha, 0);
    for (int k = 1; k <= 8; ++k) {
      const double cur = expected_tokens_per_run(alpha, k);
      INFO("k=", k, ": the k-th draft adds 0.5^k");
      CHECK(cur - prev == doctest::Approx(std::pow(0.5, k)));
      CHECK(cur < 2.0);
      prev = cur;
    }
  }

  TEST_CASE("a rejected position ends the run: nothing after a zero rate counts") {
    CHECK(expected_tokens_per_run(D{0.9, 0.0, 1.0, 1.0}, 4) == doctest::Approx(1.9));
    CHECK(expected_tokens_per_run(D{0.0, 1.0, 1.0}, 3) == doctest::Approx(1.0));
  }

  TEST_CASE("k out of range or a rate that is not a probability is rejected") {
    const D alpha = {0.5, 0.5};
    CHECK_THROWS_AS(expected_tokens_per_run(alpha, 3), std::invalid_argument);
    CHECK_THROWS_AS(expected_tokens_per_run(alpha, -1), std::invalid_argument);
    INFO("a rate outside [0, 1] (or NaN) is not a probability, whichever position it is at");
    CHECK_THROWS_AS(expected_tokens_per_run(D{0.5, 1.5}, 1), std::invalid_argument);
    CHECK_THROWS_AS(expected_tokens_per_run(D{-0.1}, 1), std::invalid_argument);
    CHECK_THROWS_AS(expected_tokens_per_run(D{std::numeric_limits<double>::quiet_NaN()}, 1),
                    std::invalid_argument);
    INFO("every rate is checked, even those k does not use, and even at k = 0");
    CHECK_THROWS_AS(expected_tokens_per_run(D{1.5}, 0), std::invalid_argument);
  }
}

TEST_SUITE("lab06 / Measuring acceptance") {
  TEST_CASE("hand-computed: a histogram 4 3 2 1 gives conditional rates 0.6 then 0.5 then 1/3") {
    SpecStats s;
    s.accept_length_hist = {4, 3, 2, 1};  // 10 rounds: 4 accepted 0 drafts, 3 accepted 1, ...
    s.target_runs = 10;
    INFO("6 rounds accepted >= 1 of 10; 3 accepted >= 2 of those 6; 1 accepted 3 of those 3");
    const D alpha = acceptance_profile(s, 5);
    REQUIRE(alpha.size() == 5);
    CHECK(alpha[0] == doctest::Approx(0.6));
    CHECK(alpha[1] == doctest::Approx(0.5));
    CHECK(alpha[2] == doctest::Approx(1.0 / 3.0));
    CHECK(alpha[3] == 0.0);  // no round accepted 4
    CHECK(alpha[4] == 0.0);  // and none even reached position 5
    CHECK(acceptance_profile(s, 0).empty());
    SpecStats hist_only;  // the same rounds, with the other counters left at 0
    hist_only.accept_length_hist = {4, 3, 2, 1};
    INFO(
        "the histogram is the whole input: all rounds are the sum of its entries, not "
        "stats.target_runs, so a SpecStats that holds only the histogram gives the same rates");
    CHECK(acceptance_profile(hist_only, 5) == alpha);
  }

  TEST_CASE("a smaller k than the run used: longer rounds passed every position asked about") {
    SpecStats s;
    s.accept_length_hist = {4, 3, 2, 1};
    s.target_runs = 10;
    INFO(
        "the round that accepted 3 drafts reached and passed positions 1 and 2: with k = 2 it "
        "still counts, so 6 of 10 accepted >= 1 and 3 of those 6 accepted >= 2");
    CHECK(acceptance_profile(s, 2) == D{0.6, 0.5});
    INFO("with k = 0 no rate is asked for, but every round is still a round");
    CHECK(acceptance_profile(s, 0).empty());
  }

  TEST_CASE("the rates are conditional: they differ from the share of all rounds") {
    SpecStats s;
    s.accept_length_hist = {0, 2, 4, 4};  // every round accepts 1 draft, 8 a second, 4 a third
    s.target_runs = 10;
    const D alpha = acceptance_profile(s, 3);
    INFO(
        "position 3 was reached by the 8 rounds that accepted >= 2 and passed by 4 of them: "
        "alpha_3 = 4 / 8 = 0.5, not the share of all rounds, 4 / 10 = 0.4");
    CHECK(alpha == D{1.0, 0.8, 0.5});
  }

  TEST_CASE("the measured profile reproduces a run's measured tokens per run") {
    for (bool easy : {true, false}) {
      for (int n : {1, 2, 3}) {
        const ToyTargetConfig cfg = lab06::workload(easy);
        ToyTarget target(cfg);
        PromptLookupDrafter drafter(n);
        DecodeConfig dc;
        dc.k = 6;
        dc.max_new_tokens = 301;
        const auto r =
            run_speculative(target, drafter, greedy_verify_rule(), lab06::prompt_for(cfg, 0), dc);
        const D alpha = acceptance_profile(r.stats, 6);
        INFO("workload ", std::string(easy ? "periodic" : "markov"), " n=", n,
             ": E(6) from the measured "
             "rates must equal emitted / runs = ",
             r.stats.tokens_per_run());
        CHECK(expected_tokens_per_run(alpha, 6) == doctest::Approx(r.stats.tokens_per_run()));
        for (double a : alpha) CHECK((a >= 0.0 && a <= 1.0));
      }
    }
  }

  TEST_CASE("a run with no rounds or a negative k is rejected") {
    SpecStats empty;
    CHECK_THROWS_AS(acceptance_profile(empty, 3), std::invalid_argument);
    SpecStats zeros;  // sized for merging runs, as the batch tests do, but no round recorded
    zeros.accept_length_hist = {0, 0, 0};
    INFO("a histogram of zeros holds no round either: there is nothing to measure");
    CHECK_THROWS_AS(acceptance_profile(zeros, 3), std::invalid_argument);
    SpecStats s;
    s.accept_length_hist = {1};
    s.target_runs = 1;
    CHECK_THROWS_AS(acceptance_profile(s, -1), std::invalid_argument);
    INFO("k = 0 asks for no rate, but a run with no round is still refused");
    CHECK_THROWS_AS(acceptance_profile(empty, 0), std::invalid_argument);
    CHECK_THROWS_AS(acceptance_profile(zeros, 0), std::invalid_argument);
  }
}
