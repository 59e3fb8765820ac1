// BatchTarget, ToyBatchTarget and its cost model, SequenceView.
#include <doctest/doctest.h>

#include <limits>
#include <stdexcept>
#include <vector>

#include "mini_engine/core/batch_target.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_batch_target.h"
#include "mini_engine/targets/toy_target.h"
#include "prompt_lookup.h"

using namespace speclab;
using V = std::vector<Token>;

namespace {

ToyTargetConfig markov_cfg() {
  ToyTargetConfig c;
  c.regime = ToyRegime::markov;
  c.seed = 5;
  c.vocab_size = 64;
  return c;
}

// The first rows where two logits blocks differ, or "" when they are identical.
std::string first_difference(const Logits& a, const Logits& b) {
  if (a.rows() != b.rows() || a.vocab() != b.vocab()) return "shapes differ";
  for (int r = 0; r < a.rows(); ++r) {
    for (int v = 0; v < a.vocab(); ++v) {
      if (a.row(r)[v] != b.row(r)[v]) {
        return "row " + std::to_string(r) + " token " + std::to_string(v);
      }
    }
  }
  return "";
}

}  // namespace

TEST_SUITE("engine / batch target") {
  TEST_CASE("each sequence of a batched call scores exactly as a standalone ToyTarget") {
    ToyBatchTarget batch(markov_cfg());
    ToyTarget a(markov_cfg()), b(markov_cfg());
    const int sa = batch.add_sequence();
    const int sb = batch.add_sequence();
    const V pa = {1, 2, 3, 4, 5}, pb = {9, 8};
    std::vector<BatchItem> items = {{sa, pa}, {sb, pb}};
    auto out = batch.extend_batch(items);
    REQUIRE(out.size() == 2);
    CHECK(first_difference(out[0], a.extend(pa)) == "");
    CHECK(first_difference(out[1], b.extend(pb)) == "");
    // Uneven lengths again, in the other order, after a rollback of one sequence.
    batch.truncate(sa, 3);
    a.truncate(3);
    const V qa = {7, 7, 7, 7}, qb = {3};
    items = {{sb, qb}, {sa, qa}};
    out = batch.extend_batch(items);
    CHECK(first_difference(out[0], b.extend(qb)) == "");
    CHECK(first_difference(out[1], a.extend(qa)) == "");
    CHECK(V(batch.tokens(sa).begin(), batch.tokens(sa).end()) == V{1, 2, 3, 7, 7, 7, 7});
    CHECK(V(batch.tokens(sb).begin(), batch.tokens(sb).end()) == V{9, 8, 3});
  }

  TEST_CASE("a bad item leaves every sequence unchanged and names the item") {
    ToyTargetConfig cfg = markov_cfg();
    cfg.max_length = 6;
    ToyBatchTarget batch(cfg);
    const int s0 = batch.add_sequence();
    const int s1 = batch.add_sequence();
    const V ok = {1, 2}, bad_id = {3, 64}, too_long = {1, 2, 3, 4, 5, 6, 7}, none = {};
    std::vector<BatchItem> items = {{s0, ok}, {s1, bad_id}};
    CHECK_THROWS_WITH_AS(batch.extend_batch(items), doctest::Contains("item 1 has token id 64"),
                         std::invalid_argument);
    items = {{s0, ok}, {s1, too_long}};
    CHECK_THROWS_AS(batch.extend_batch(items), ContextOverflow);
    items = {{s0, ok}, {s0, ok}};
    CHECK_THROWS_WITH_AS(batch.extend_batch(items), doctest::Contains("already names"),
                         std::invalid_argument);
    items = {{s0, ok}, {s1 + 5, ok}};
    CHECK_THROWS_WITH_AS(batch.extend_batch(items), doctest::Contains("no live sequence"),
                         std::invalid_argument);
    items = {{s0, ok}, {s1, none}};
    CHECK_THROWS_WITH_AS(batch.extend_batch(items), doctest::Contains("has no tokens"),
                         std::invalid_argument);
    CHECK_THROWS_AS(batch.extend_batch(std::span<const BatchItem>{}), std::invalid_argument);
    // append_batch refuses the same items, naming itself: the message says which call it was.
    CHECK_THROWS_WITH_AS(batch.append_batch(items),
                         doctest::Contains("append_batch item 1 (sequence 1) has no tokens"),
                         std::invalid_argument);
    items = {{s0, ok}, {s1, bad_id}};
    CHECK_THROWS_WITH_AS(batch.append_batch(items),
                         doctest::Contains("ToyBatchTarget::append_batch: item 1 has token id 64"),
                         std::invalid_argument);
    items = {{s0, ok}, {s1, too_long}};
    CHECK_THROWS_AS(batch.append_batch(items), ContextOverflow);
    CHECK(batch.length(s0) == 0);
    CHECK(batch.length(s1) == 0);
    CHECK(batch.calls() == 0);
    CHECK(batch.clock().now() == 0.0);
  }

  TEST_CASE("sequences are added and removed by id and unknown ids are rejected") {
    ToyBatchTarget batch(markov_cfg());
    const int a = batch.add_sequence();
    const int b = batch.add_sequence();
    const int c = batch.add_sequence();
    CHECK(batch.sequences() == std::vector<int>{a, b, c});
    batch.remove_sequence(b);
    CHECK(batch.sequences() == std::vector<int>{a, c});
    const int d = batch.add_sequence();
    CHECK(d != b);  // ids are not reused
    CHECK_THROWS_AS(batch.remove_sequence(b), std::out_of_range);
    CHECK_THROWS_AS(batch.tokens(b), std::out_of_range);
    CHECK_THROWS_AS(batch.truncate(b, 0), std::out_of_range);
    CHECK_THROWS_AS(batch.truncate(a, 1), std::out_of_range);  // a holds 0 tokens
  }

  TEST_CASE("each call advances the simulated clock by T(total tokens fed)") {
    ToyCostModel cost;
    cost.fixed_seconds = 0.010;
    cost.per_token_seconds = 0.001;
    cost.knee_tokens = 8;
    cost.past_knee_seconds = 0.004;
    CHECK(cost.seconds(1) == doctest::Approx(0.011));
    CHECK(cost.seconds(8) == doctest::Approx(0.018));
    CHECK(cost.seconds(10) == doctest::Approx(0.010 + 0.010 + 2 * 0.004));
    ToyBatchTarget batch(markov_cfg(), cost);
    const int s0 = batch.add_sequence();
    const int s1 = batch.add_sequence();
    const V six = {1, 2, 3, 4, 5, 6}, four = {1, 2, 3, 4};
    std::vector<BatchItem> items = {{s0, six}, {s1, four}};
    batch.extend_batch(items);
    CHECK(batch.clock().now() == doctest::Approx(cost.seconds(10)));
    items = {{s1, four}};
    batch.extend_batch(items);
    CHECK(batch.clock().now() == doctest::Approx(cost.seconds(10) + cost.seconds(4)));
    CHECK(batch.calls() == 2);
    CHECK(batch.fed_tokens() == 14);
  }

  TEST_CASE("a bad cost model is rejected naming the field") {
    ToyCostModel c;
    c.per_token_seconds = -1.0;
    CHECK_THROWS_WITH_AS(ToyBatchTarget(markov_cfg(), c), doctest::Contains("per_token_seconds"),
                         std::invalid_argument);
    c = ToyCostModel{};
    c.knee_tokens = -2;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("knee_tokens"), std::invalid_argument);
    CHECK_THROWS_AS(ToyCostModel{}.seconds(0), std::invalid_argument);
    c = ToyCostModel{};
    c.knee_tokens = std::numeric_limits<int>::min();  // 5 - INT_MIN overflowed (UBSan)
    CHECK_THROWS_WITH_AS(c.seconds(5), doctest::Contains("knee_tokens"), std::invalid_argument);
    c = ToyCostModel{};
    c.fixed_seconds = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("fixed_seconds"), std::invalid_argument);
    c = ToyCostModel{0.0, 0.0, 64, 0.0};
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("every call would cost 0"),
                         std::invalid_argument);
    c.past_knee_seconds = 0.001;  // free below the knee, but not every call: accepted
    c.validate();
    CHECK(c.seconds(64) == 0.0);
    ToyTargetConfig bad = markov_cfg();
    bad.vocab_size = 2;
    CHECK_THROWS_AS(ToyBatchTarget{bad}, std::invalid_argument);
  }

  TEST_CASE("a call whose time would not be finite changes nothing") {
    // Finite fields can still add up to infinity: the call used to extend every sequence and
    // only then throw from the clock, leaving tokens the header promised it would not.
    ToyCostModel huge;
    huge.fixed_seconds = std::numeric_limits<double>::max();
    huge.per_token_seconds = std::numeric_limits<double>::max();
    huge.validate();
    ToyBatchTarget batch(markov_cfg(), huge);
    const int s = batch.add_sequence();
    const V three = {1, 2, 3};
    std::vector<BatchItem> items = {{s, three}};
    CHECK_THROWS_WITH_AS(batch.extend_batch(items), doctest::Contains("must be finite"),
                         std::invalid_argument);
    CHECK(batch.length(s) == 0);
    CHECK(batch.calls() == 0);
    CHECK(batch.clock().now() == 0.0);
    // One step is finite, but the clock would pass the largest double: refused, clock unchanged.
    SimulatedClock clock;
    clock.advance(1e308);
    CHECK_THROWS_WITH_AS(clock.advance(1e308), doctest::Contains("not finite"),
                         std::invalid_argument);
    CHECK(clock.now() == 1e308);
  }

  TEST_CASE("a SequenceView runs the single-sequence loops on one sequence of a batch target") {
    ToyTargetConfig cfg;
    cfg.regime = ToyRegime::periodic;
    cfg.seed = 2;
    cfg.period = 7;
    cfg.noise = 0.1;
    cfg.vocab_size = 64;
    ToyTarget alone(cfg);
    ToyBatchTarget batch(cfg);
    const int other = batch.add_sequence();
    const int seq = batch.add_sequence();
    SequenceView view(batch, seq);
    const V prompt = alone.make_prompt(9);
    DecodeConfig dc;
    dc.max_new_tokens = 60;
    dc.k = 4;
    PromptLookupDrafter d1(2), d2(2);
    const auto want = run_speculative(alone, d1, greedy_verify_rule(), prompt, dc);
    const auto got = run_speculative(view, d2, greedy_verify_rule(), prompt, dc);
    CHECK(got.tokens == want.tokens);
    CHECK(got.stats.target_runs == want.stats.target_runs);
    CHECK(batch.length(other) == 0);                    // the other sequence was never touched
    CHECK(batch.calls() == got.stats.target_runs + 1);  // + the prefill
    CHECK_THROWS_AS(SequenceView(batch, 99), std::out_of_range);
  }

  TEST_CASE("a SequenceView refuses what Target refuses and leaves the sequence as it was") {
    ToyTargetConfig cfg = markov_cfg();
    cfg.max_length = 4;
    ToyBatchTarget batch(cfg);
    SequenceView view(batch, batch.add_sequence());
    view.extend(V{1, 2});
    CHECK_THROWS_WITH_AS(view.extend(V{}), doctest::Contains("no tokens"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(view.append(V{}), doctest::Contains("no tokens"), std::invalid_argument);
    CHECK_THROWS_AS(view.extend(V{3, 64}), std::invalid_argument);  // 64 is past the vocabulary
    CHECK_THROWS_AS(view.append(V{3, 4, 5}), ContextOverflow);
    CHECK_THROWS_AS(view.truncate(3), std::out_of_range);
    CHECK(std::vector<Token>(view.tokens().begin(), view.tokens().end()) == V{1, 2});
    CHECK(batch.calls() == 1);
  }
}
