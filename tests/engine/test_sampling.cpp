#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "mini_engine/sampling/rng.h"
#include "mini_engine/sampling/sampling.h"

using namespace speclab;

TEST_SUITE("engine / sampling") {
  TEST_CASE("the counter-based RNG is a pure function of (seed, sequence, position, stream)") {
    CHECK(uniform01(1, 2, 3) == uniform01(1, 2, 3));
    CHECK(uniform01(1, 2, 3) != uniform01(1, 2, 4));
    CHECK(uniform01(1, 2, 3) != uniform01(2, 2, 3));
    CHECK(uniform01(1, 2, 3, 0) != uniform01(1, 2, 3, 1));
    double mean = 0;
    for (int i = 0; i < 10000; ++i) {
      const double u = uniform01(7, 0, static_cast<std::uint64_t>(i));
      CHECK(u >= 0.0);
      CHECK(u < 1.0);
      mean += u / 10000;
    }
    CHECK(mean == doctest::Approx(0.5).epsilon(0.02));
  }

  TEST_CASE("temperature 0 is argmax and inverse-CDF sampling follows the probabilities") {
    const std::vector<float> row = {0.0f, std::log(3.0f), -INFINITY, std::log(6.0f)};
    CHECK(sample_from_logits(row, 0.0, 0.99) == 3);
    // p = 0.1, 0.3, 0, 0.6
    CHECK(sample_from_logits(row, 1.0, 0.05) == 0);
    CHECK(sample_from_logits(row, 1.0, 0.2) == 1);
    CHECK(sample_from_logits(row, 1.0, 0.5) == 3);
    CHECK(sample_from_logits(row, 1.0, 0.999999) == 3);
    std::vector<int> counts(4, 0);
    for (int i = 0; i < 20000; ++i) {
      ++counts[sample_at(row, SamplingParams{1.0, 3, 0}, i)];
    }
    CHECK(counts[2] == 0);
    CHECK(counts[0] / 20000.0 == doctest::Approx(0.1).epsilon(0.1));
    CHECK(counts[3] / 20000.0 == doctest::Approx(0.6).epsilon(0.05));
  }

  TEST_CASE("softmax divides the scores by the temperature, safely for large scores") {
    // p ~ exp(s / T): at T = 0.5 the scores 0, ln 3, ln 6 weigh 1, 9 and 36.
    const std::vector<float> row = {0.0f, std::log(3.0f), std::log(6.0f)};
    const std::vector<double> p = softmax(row, 0.5);
    REQUIRE(p.size() == 3);
    CHECK(p[0] == doctest::Approx(1.0 / 46));
    CHECK(p[1] == doctest::Approx(9.0 / 46));
    CHECK(p[2] == doctest::Approx(36.0 / 46));
    // Scores far past exp's range, and a low temperature on a real model's scale (about 20):
    // still 1 : 3, not inf / inf.
    const std::vector<double> big = softmax(std::vector<float>{1000.0f, 1000.0f + 1.0986123f}, 1.0);
    CHECK(big[0] == doctest::Approx(0.25).epsilon(1e-3));
    CHECK(big[1] == doctest::Approx(0.75).epsilon(1e-3));
    const std::vector<double> cold = softmax(std::vector<float>{20.0f, 20.0219722f}, 0.02);
    CHECK(cold[0] == doctest::Approx(0.25).epsilon(1e-2));
    CHECK(cold[1] == doctest::Approx(0.75).epsilon(1e-2));
    // Sampling at T != 1 follows the same probabilities: u below 1/46 picks token 0.
    CHECK(sample_from_logits(row, 0.5, 0.02) == 0);
    CHECK(sample_from_logits(row, 0.5, 0.03) == 1);
    CHECK(sample_from_logits(row, 0.5, 0.3) == 2);
  }

  TEST_CASE("token i covers the inverse-CDF interval [cdf(i - 1), cdf(i))") {
    const std::vector<float> even = {0.0f, 0.0f};  // p = 0.5, 0.5: exact in binary
    CHECK(sample_from_logits(even, 1.0, 0.0) == 0);
    CHECK(sample_from_logits(even, 1.0, 0.4999999) == 0);
    CHECK(sample_from_logits(even, 1.0, 0.5) == 1);
  }

  TEST_CASE("a u outside [0, 1) is rejected, not mapped to the last token") {
    const std::vector<float> row = {0.0f, 1.0f, 2.0f};
    for (const double u : {1.0, 1.5, -0.1, static_cast<double>(NAN)}) {
      CAPTURE(u);
      CHECK_THROWS_WITH_AS(sample_from_logits(row, 1.0, u), doctest::Contains("[0, 1)"),
                           std::invalid_argument);
      CHECK_THROWS_AS(sample_from_logits(row, 0.0, u), std::invalid_argument);
    }
    CHECK(sample_from_logits(row, 1.0, 0.0) == 0);
  }

  TEST_CASE("a negative temperature is rejected") {
    const std::vector<float> row = {1.0f, 2.0f};
    CHECK_THROWS_AS(sample_from_logits(row, -1.0, 0.5), std::invalid_argument);
  }

  TEST_CASE("a NaN score or an infinite temperature is an error, not a silent pick") {
    // A NaN past index 0 left the max finite, made every probability NaN, and sampling returned
    // the last token of the row.
    const std::vector<float> row = {1.0f, 2.0f, NAN, 0.5f};
    CHECK_THROWS_WITH_AS(softmax(row, 1.0), doctest::Contains("NaN"), std::invalid_argument);
    CHECK_THROWS_AS(sample_from_logits(row, 1.0, 0.1), std::invalid_argument);
    const std::vector<float> masked = {1.0f, -INFINITY, 2.0f};
    CHECK_THROWS_WITH_AS(softmax(masked, INFINITY), doctest::Contains("temperature"),
                         std::invalid_argument);
    CHECK_THROWS_AS(sample_from_logits(masked, INFINITY, 0.1), std::invalid_argument);
    CHECK_THROWS_AS(sample_from_logits(masked, NAN, 0.1), std::invalid_argument);
  }

  TEST_CASE("softmax needs a temperature > 0 and a row with a finite largest score") {
    const std::vector<float> row = {1.0f, 2.0f};
    for (const double t : {0.0, -0.5}) {
      CAPTURE(t);
      CHECK_THROWS_WITH_AS(softmax(row, t), doctest::Contains("temperature"),
                           std::invalid_argument);
    }
    CHECK_THROWS_WITH_AS(softmax(std::vector<float>{}, 1.0), doctest::Contains("empty row"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(softmax(std::vector<float>{-INFINITY, -INFINITY}, 1.0),
                         doctest::Contains("no finite maximum"), std::invalid_argument);
    CHECK_THROWS_AS(softmax(std::vector<float>{1.0f, INFINITY}, 1.0), std::invalid_argument);
    CHECK_THROWS_AS(softmax(std::vector<float>{NAN, 1.0f}, 1.0), std::invalid_argument);
    // -infinity beside a finite score is a token ruled out: probability 0, never sampled.
    const std::vector<double> p = softmax(std::vector<float>{-INFINITY, 0.0f}, 1.0);
    CHECK(p == std::vector<double>{0.0, 1.0});
    CHECK(sample_from_logits(std::vector<float>{-INFINITY, 0.0f}, 1.0, 0.0) == 1);
  }

  TEST_CASE("an empty row is an error at every temperature, and sample_at says so too") {
    const std::vector<float> empty;
    CHECK_THROWS_AS(sample_from_logits(empty, 0.0, 0.5), std::invalid_argument);
    CHECK_THROWS_AS(sample_from_logits(empty, 1.0, 0.5), std::invalid_argument);
    CHECK_THROWS_AS(sample_at(empty, SamplingParams{}, 0), std::invalid_argument);
    CHECK_THROWS_AS(sample_at(std::vector<float>{1.0f}, SamplingParams{.temperature = -1.0}, 0),
                    std::invalid_argument);
  }
}
