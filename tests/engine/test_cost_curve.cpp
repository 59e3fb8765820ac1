// CostCurve: the table, its CSV format, interpolation, and measuring one from a BatchTarget.
#include <doctest/doctest.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini_engine/core/clock.h"
#include "mini_engine/spec/cost_curve.h"
#include "mini_engine/targets/toy_batch_target.h"

using namespace speclab;

namespace {
CostCurve linear_curve() {
  return CostCurve::from_function({1, 4, 8}, 3, [](int b, int k) { return 1.0 + b * (k + 1); });
}
}  // namespace

TEST_SUITE("engine / cost curve") {
  TEST_CASE("listed points come back exactly and b between them is interpolated linearly") {
    const CostCurve c = linear_curve();
    CHECK(c.batch_sizes() == std::vector<int>{1, 4, 8});
    CHECK(c.max_k() == 3);
    CHECK(c.seconds(1, 0) == 2.0);
    CHECK(c.seconds(4, 3) == 17.0);
    CHECK(c.seconds(8, 2) == 25.0);
    // b = 6 lies halfway between 4 and 8: (1 + 4*2 + 1 + 8*2) / 2 = 13 at k = 1.
    CHECK(c.seconds(6, 1) == doctest::Approx(13.0));
    CHECK(c.seconds(2, 0) == doctest::Approx(3.0));
  }

  TEST_CASE("b or k outside the table is an out_of_range error naming the range") {
    const CostCurve c = linear_curve();
    CHECK_THROWS_WITH_AS(c.seconds(9, 0), doctest::Contains("outside its range 1..8"),
                         std::out_of_range);
    CHECK_THROWS_AS(c.seconds(0, 0), std::out_of_range);
    CHECK_THROWS_WITH_AS(c.seconds(4, 4), doctest::Contains("0..3"), std::out_of_range);
    CHECK_THROWS_AS(c.seconds(4, -1), std::out_of_range);
  }

  TEST_CASE("from_function rejects bad axes and bad times") {
    auto one = [](int, int) { return 1.0; };
    CHECK_THROWS_AS(CostCurve::from_function({}, 2, one), std::invalid_argument);
    CHECK_THROWS_AS(CostCurve::from_function({4, 1}, 2, one), std::invalid_argument);
    CHECK_THROWS_AS(CostCurve::from_function({0, 1}, 2, one), std::invalid_argument);
    CHECK_THROWS_AS(CostCurve::from_function({1}, -1, one), std::invalid_argument);
    INFO("k counts a round's drafts, at most 64: a huge max_k would make 2^31 calls");
    CHECK_THROWS_WITH_AS(CostCurve::from_function({1}, 65, one), doctest::Contains("[0, 64]"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(CostCurve::from_function(
                             {1, 2}, 2, [](int b, int k) { return b == 2 && k == 1 ? 0.0 : 1.0; }),
                         doctest::Contains("T(b=2, k=1)"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(CostCurve::from_function({1}, 2, nullptr),
                         doctest::Contains("no cost function"), std::invalid_argument);
  }

  TEST_CASE("the CSV text round-trips through parse_csv") {
    const CostCurve c = CostCurve::from_function(
        {1, 32}, 2, [](int b, int k) { return 0.0123456789 * b + 0.001 * k; });
    const std::string text = c.to_csv("made by a test\nsecond line");
    CHECK(text.rfind("# made by a test\n# second line\nb,k,seconds\n1,0,", 0) == 0);
    const CostCurve d = CostCurve::parse_csv(text, "roundtrip");
    CHECK(d.batch_sizes() == c.batch_sizes());
    CHECK(d.max_k() == c.max_k());
    for (int b : {1, 32}) {
      for (int k = 0; k <= 2; ++k)
        CHECK(d.seconds(b, k) == doctest::Approx(c.seconds(b, k)).epsilon(1e-5));
    }
  }

  TEST_CASE("rows may come in any order with comments and blank lines between them") {
    const std::string text =
        "# cpu: test\n\nb,k,seconds\n2,1,4.0\n# note\n1,1,2.0\n2,0,3.0\n1,0,1.0\n";
    const CostCurve c = CostCurve::parse_csv(text, "t.csv");
    CHECK(c.batch_sizes() == std::vector<int>{1, 2});
    CHECK(c.seconds(2, 1) == 4.0);
    CHECK(c.seconds(1, 0) == 1.0);
  }

  TEST_CASE("a malformed file is reported with its name and line number") {
    auto err = [](const std::string& text) {
      try {
        CostCurve::parse_csv(text, "bad.csv");
      } catch (const std::runtime_error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    CHECK(err("b,k,secs\n1,0,1\n") ==
          "bad.csv:1: expected the header 'b,k,seconds', got 'b,k,secs'");
    CHECK(err("b,k,seconds\n1,0\n") == "bad.csv:2: expected 3 fields (b,k,seconds), got 2");
    CHECK(err("b,k,seconds\n1,x,1\n") == "bad.csv:2: k 'x' is not an integer");
    // The decoding loops take k <= 64, so a curve past it would let a policy choose a k they
    // refuse: the same bound as from_function.
    CHECK(err("b,k,seconds\n1,65,1\n") == "bad.csv:2: k must be at most 64, got 65");
    CHECK(err("b,k,seconds\n1,0,-3\n") == "bad.csv:2: seconds must be finite and > 0, got '-3'");
    CHECK(err("b,k,seconds\n1,0,nan\n") == "bad.csv:2: seconds must be finite and > 0, got 'nan'");
    CHECK(err("b,k,seconds\n1,0,1\n1,0,2\n") ==
          "bad.csv:3: a second row for b=1, k=0 (the first is on line 2)");
    CHECK(err("b,k,seconds\n1,0,1\n1,1,1\n4,0,1\n") ==
          "bad.csv: no row for b=4, k=1 (every listed b needs every k in 0..1)");
    CHECK(err("# only a comment\n") == "bad.csv: no 'b,k,seconds' header: not a cost curve");
    CHECK(err("b,k,seconds\n") == "bad.csv: the cost curve has no rows");
    CHECK_THROWS_WITH_AS(CostCurve::load_csv("/nonexistent/curve.csv"),
                         doctest::Contains("cannot open cost curve"), std::runtime_error);
  }

  TEST_CASE("measuring a ToyBatchTarget on its simulated clock reproduces its cost model") {
    ToyCostModel cost;
    cost.fixed_seconds = 0.02;
    cost.per_token_seconds = 0.0005;
    cost.knee_tokens = 16;
    cost.past_knee_seconds = 0.003;
    ToyTargetConfig cfg;
    cfg.vocab_size = 64;
    ToyBatchTarget toy(cfg, cost);
    const int keep = toy.add_sequence();
    std::vector<int> points;
    MeasureOptions opt;
    opt.context = 12;
    opt.reps = 3;
    opt.on_point = [&](int b, int k, double) { points.push_back(b * 100 + k); };
    const CostCurve c = measure_cost_curve(toy, toy.clock(), {1, 4, 8}, 4, opt);
    for (int b : {1, 4, 8}) {
      for (int k = 0; k <= 4; ++k) {
        INFO("b=", b, " k=", k);
        CHECK(c.seconds(b, k) == doctest::Approx(cost.seconds(b * (k + 1))));
      }
    }
    CHECK(points.size() == 15);
    CHECK(toy.sequences() == std::vector<int>{keep});  // its own sequences are gone
    MeasureOptions bad;
    bad.context = 0;
    CHECK_THROWS_AS(measure_cost_curve(toy, toy.clock(), {1}, 4, bad), std::invalid_argument);
    bad = MeasureOptions{};
    bad.warmup = -1;
    CHECK_THROWS_AS(measure_cost_curve(toy, toy.clock(), {1}, 4, bad), std::invalid_argument);
    const SimulatedClock idle;  // a clock the target never advances: every median is 0
    CHECK_THROWS_WITH_AS(measure_cost_curve(toy, idle, {1}, 1),
                         doctest::Contains("must be finite and > 0"), std::invalid_argument);
    CHECK(toy.sequences() == std::vector<int>{keep});
    INFO("a context near INT_MAX: context + max_k + 1 must not overflow past the length check");
    MeasureOptions huge;
    huge.context = std::numeric_limits<int>::max() - 4;
    CHECK_THROWS_AS(measure_cost_curve(toy, toy.clock(), {1}, 8, huge), ContextOverflow);
  }

  TEST_CASE("measuring at a long context works: the filler token ids stay in the vocabulary") {
    // The filler id of position i was computed as i * 104729 in int, which overflows from
    // i = 20506 on: a context of 21000 fed negative ids to the target, and its "token id -...
    // outside the vocabulary" error came from a call the header allows (context + max_k + 1 <=
    // max_length()).
    ToyTargetConfig cfg;
    cfg.vocab_size = 64;
    ToyBatchTarget toy(cfg);
    MeasureOptions opt;
    opt.context = 21000;
    opt.reps = 1;
    opt.warmup = 0;
    const CostCurve c = measure_cost_curve(toy, toy.clock(), {1}, 1, opt);
    CHECK(c.seconds(1, 1) == doctest::Approx(toy.cost_model().seconds(2)));
    CHECK(toy.sequences().empty());
  }

  TEST_CASE("the committed example curve loads and matches the toy cost model it was made from") {
    const CostCurve c =
        CostCurve::load_csv(std::string(SPECLAB_DATA_DIR) + "/cost_curves/toy_roofline.csv");
    CHECK(c.batch_sizes() == std::vector<int>{1, 4, 8, 32});
    CHECK(c.max_k() == 8);
    const ToyCostModel model;  // the defaults the file was written with
    for (int b : c.batch_sizes()) {
      for (int k = 0; k <= 8; ++k) {
        INFO("b=", b, " k=", k);
        CHECK(c.seconds(b, k) == doctest::Approx(model.seconds(b * (k + 1))).epsilon(1e-5));
      }
    }
  }
}

TEST_SUITE("engine / simulated clock") {
  TEST_CASE("advance takes a finite time >= 0 only") {
    // An infinite step would turn every later duration (inf - inf) into NaN.
    SimulatedClock clock;
    clock.advance(1.5);
    CHECK(clock.now() == 1.5);
    for (double bad : {-1.0, std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity()}) {
      CAPTURE(bad);
      CHECK_THROWS_AS(clock.advance(bad), std::invalid_argument);
    }
    CHECK(clock.now() == 1.5);
  }
}
