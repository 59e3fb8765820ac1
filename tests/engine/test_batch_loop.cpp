// run_speculative_batch: lock-step decoding of several requests, one target call per step.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include "clocked_drafter.h"
#include "mini_engine/spec/batch_loop.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_batch_target.h"
#include "mini_engine/targets/toy_target.h"
#include "nasd.h"
#include "prompt_lookup.h"

using namespace speclab;
using V = std::vector<Token>;

namespace {

ToyTargetConfig periodic_cfg(std::uint64_t seed, double noise) {
  ToyTargetConfig c;
  c.regime = ToyRegime::periodic;
  c.seed = seed;
  c.period = 9;
  c.noise = noise;
  c.vocab_size = 128;
  return c;
}

// Proposes the same tokens in every round, whatever the context and k.
class FixedDrafter final : public Drafter {
 public:
  explicit FixedDrafter(V drafts) : drafts_(std::move(drafts)) {}
  std::string name() const override { return "fixed"; }
  std::vector<Token> propose(std::span<const Token>, int) override { return drafts_; }

 private:
  V drafts_;
};

// A prompt per request: the regime's prompt, shifted so that requests differ.
V prompt_for(const ToyTarget& t, int i, int len) {
  V p = t.make_prompt(len + i);
  p.erase(p.begin(), p.begin() + i);
  return p;
}

// A BatchTarget that hands every call to a ToyBatchTarget; the fakes below override what they
// watch or break.
class ToyBatchWrapper : public BatchTarget {
 public:
  explicit ToyBatchWrapper(const ToyTargetConfig& cfg) : inner(cfg) {}
  std::string name() const override { return inner.name(); }
  int vocab_size() const override { return inner.vocab_size(); }
  int max_length() const override { return inner.max_length(); }
  int add_sequence() override { return inner.add_sequence(); }
  void remove_sequence(int seq) override { inner.remove_sequence(seq); }
  std::vector<int> sequences() const override { return inner.sequences(); }
  std::span<const Token> tokens(int seq) const override { return inner.tokens(seq); }
  std::vector<Logits> extend_batch(std::span<const BatchItem> items) override {
    return inner.extend_batch(items);
  }
  void append_batch(std::span<const BatchItem> items) override { inner.append_batch(items); }
  void truncate(int seq, int new_len) override { inner.truncate(seq, new_len); }
  ToyBatchTarget inner;
};

// Counts the rows asked of extend_batch and of append_batch.
class CountingBatch final : public ToyBatchWrapper {
 public:
  using ToyBatchWrapper::ToyBatchWrapper;
  std::vector<Logits> extend_batch(std::span<const BatchItem> items) override {
    for (const BatchItem& it : items) extended_rows += static_cast<int>(it.tokens.size());
    return inner.extend_batch(items);
  }
  void append_batch(std::span<const BatchItem> items) override {
    for (const BatchItem& it : items) appended_rows += static_cast<int>(it.tokens.size());
    inner.append_batch(items);
  }
  int extended_rows = 0, appended_rows = 0;
};

// Its rows that score the tokens at positions `from` and later are all NaN, in every sequence:
// what a broken kernel gives.
class NanBatch final : public ToyBatchWrapper {
 public:
  NanBatch(const ToyTargetConfig& cfg, int from) : ToyBatchWrapper(cfg), from_(from) {}
  std::string name() const override { return "nan-batch"; }
  std::vector<Logits> extend_batch(std::span<const BatchItem> items) override {
    std::vector<int> first;
    for (const BatchItem& it : items) {
      first.push_back(static_cast<int>(inner.tokens(it.seq).size()));
    }
    std::vector<Logits> out = inner.extend_batch(items);
    for (size_t a = 0; a < out.size(); ++a) {
      for (int i = 0; i < out[a].rows(); ++i) {
        if (first[a] + i + 1 >= from_) {
          std::fill(out[a].row(i).begin(), out[a].row(i).end(), std::nanf(""));
        }
      }
    }
    return out;
  }

 private:
  int from_;
};

struct Spec {
  int n;  // prompt-lookup n; 0 = no drafter
  int k;
  int max_new;
  int prompt_len;
};

// Runs the batch, then each request alone on a fresh ToyTarget, and compares them.
// With temperature > 0, requests sample (each with its own RNG sequence) and are verified by
// lab 03's lossless sampled rule; plain sampled decoding is then the reference.
void check_identity(const ToyTargetConfig& cfg, const std::vector<Spec>& specs,
                    const std::vector<Token>& stops = {}, double temperature = 0.0) {
  const VerifyRule rule = temperature > 0.0 ? sampled_verify_rule() : greedy_verify_rule();
  ToyBatchTarget batch(cfg);
  ToyTarget ref(cfg);
  std::vector<std::unique_ptr<PromptLookupDrafter>> drafters;
  std::vector<BatchRequest> reqs;
  for (size_t i = 0; i < specs.size(); ++i) {
    BatchRequest r;
    r.prompt = prompt_for(ref, static_cast<int>(i), specs[i].prompt_len);
    if (specs[i].n > 0) {
      drafters.push_back(std::make_unique<PromptLookupDrafter>(specs[i].n));
      r.drafter = drafters.back().get();
    }
    r.config.k = specs[i].k;
    r.config.max_new_tokens = specs[i].max_new;
    r.config.stop_tokens = stops;
    r.config.sampling.temperature = temperature;
    r.config.sampling.seed = 77;
    r.config.sampling.sequence = i;
    reqs.push_back(std::move(r));
  }
  const BatchGenerationResult got = run_speculative_batch(batch, reqs, rule);
  REQUIRE(got.requests.size() == specs.size());
  std::int64_t max_runs = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    ToyTarget alone(cfg);
    GenerationResult want;
    if (specs[i].n > 0 && specs[i].k > 0) {
      PromptLookupDrafter d(specs[i].n);
      want = run_speculative(alone, d, rule, reqs[i].prompt, reqs[i].config);
      if (temperature > 0.0) {
        ToyTarget plain(cfg);
        CHECK(run_baseline(plain, reqs[i].prompt, reqs[i].config).tokens == want.tokens);
      }
    } else {
      want = run_baseline(alone, reqs[i].prompt, reqs[i].config);
    }
    INFO("request ", i, " (n=", specs[i].n, ", k=", specs[i].k, ")");
    CHECK(got.requests[i].tokens == want.tokens);
    CHECK(got.requests[i].finish == want.finish);
    const SpecStats& g = got.requests[i].stats;
    const SpecStats& w = want.stats;
    CHECK(g.target_runs == w.target_runs);
    CHECK(g.drafted == w.drafted);
    CHECK(g.accepted == w.accepted);
    CHECK(g.accept_length_hist == w.accept_length_hist);
    max_runs = std::max(max_runs, g.target_runs);
  }
  CHECK(got.stats.steps == max_runs);  // lock-step: the longest request sets the step count
  CHECK(batch.sequences().empty());    // the loop cleaned up after itself
}

}  // namespace

TEST_SUITE("engine / batched speculative loop") {
  TEST_CASE("batched output is token-identical to running each request alone") {
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      for (double noise : {0.0, 0.15}) {
        INFO("seed=", seed, " noise=", noise);
        check_identity(
            periodic_cfg(seed, noise),
            {{1, 4, 80, 10}, {2, 6, 55, 14}, {3, 2, 90, 6}, {1, 8, 31, 20}, {2, 3, 1, 8}});
      }
    }
  }

  TEST_CASE("identity holds on markov and random text and with a one-token prompt") {
    ToyTargetConfig m;
    m.regime = ToyRegime::markov;
    m.vocab_size = 64;
    m.seed = 3;
    check_identity(m, {{1, 5, 70, 1}, {2, 5, 70, 12}, {1, 1, 40, 3}});
    ToyTargetConfig r;
    r.regime = ToyRegime::random;
    r.vocab_size = 4096;
    check_identity(r, {{1, 5, 50, 1}, {1, 3, 20, 30}});
  }

  TEST_CASE("with sampled verification each request matches plain sampled decoding") {
    for (double temperature : {0.7, 1.0}) {
      INFO("temperature=", temperature);
      check_identity(periodic_cfg(3, 0.1), {{1, 4, 60, 10}, {2, 6, 45, 12}, {0, 3, 30, 9}}, {},
                     temperature);
      ToyTargetConfig m;
      m.regime = ToyRegime::markov;
      m.vocab_size = 64;
      m.seed = 8;
      check_identity(m, {{1, 5, 50, 6}, {2, 2, 70, 9}}, {}, temperature);
    }
  }

  TEST_CASE("requests without a drafter or with k = 0 decode exactly like run_baseline") {
    check_identity(periodic_cfg(7, 0.1), {{0, 4, 40, 10}, {2, 0, 50, 10}, {2, 5, 60, 10}});
  }

  TEST_CASE("a stop token ends one request while the others go on") {
    const ToyTargetConfig cfg = periodic_cfg(1, 0.05);
    ToyTarget ref(cfg);
    DecodeConfig dc;
    dc.max_new_tokens = 60;
    const auto free_run = run_baseline(ref, prompt_for(ref, 0, 10), dc).tokens;
    check_identity(cfg, {{1, 5, 60, 10}, {2, 4, 60, 10}, {1, 3, 60, 12}}, {free_run[25]});
  }

  TEST_CASE("the prompts are prefilled with append_batch: no logits are computed for them") {
    const ToyTargetConfig cfg = periodic_cfg(6, 0.0);
    CountingBatch batch(cfg);
    std::vector<BatchRequest> reqs(2);
    for (int i = 0; i < 2; ++i) {
      reqs[i].prompt = prompt_for(ToyTarget(cfg), i, 10);  // 10 tokens each
      reqs[i].config.max_new_tokens = 4;
    }
    run_speculative_batch(batch, reqs, greedy_verify_rule(), BatchDecodeConfig{});
    CHECK(batch.appended_rows == 18);     // all but each prompt's last token
    CHECK(batch.extended_rows == 2 * 4);  // no drafter: one row per request per step
  }

  TEST_CASE("one target call per step feeds every active request's last token and drafts") {
    const ToyTargetConfig cfg = periodic_cfg(4, 0.1);
    ToyCostModel cost;
    cost.fixed_seconds = 0.01;
    cost.per_token_seconds = 0.001;
    cost.knee_tokens = 10;
    cost.past_knee_seconds = 0.002;
    ToyBatchTarget batch(cfg, cost);
    PromptLookupDrafter d0(1), d1(2), d2(1);
    std::vector<BatchRequest> reqs(3);
    Drafter* ds[] = {&d0, &d1, &d2};
    const int lens[] = {30, 45, 12};
    for (int i = 0; i < 3; ++i) {
      reqs[i].prompt = prompt_for(ToyTarget(cfg), i, 10);
      reqs[i].drafter = ds[i];
      reqs[i].config.k = 3 + i;
      reqs[i].config.max_new_tokens = lens[i];
    }
    std::vector<BatchStepRecord> steps;
    BatchDecodeConfig bc;
    bc.clock = &batch.clock();
    bc.on_step = [&](const BatchStepRecord& s) { steps.push_back(s); };
    const auto res = run_speculative_batch(batch, reqs, greedy_verify_rule(), bc);
    const BatchStats& s = res.stats;
    REQUIRE(static_cast<std::int64_t>(steps.size()) == s.steps);
    CHECK(batch.calls() == s.steps + 1);  // + one batched prefill
    double expect_verify = 0.0;
    std::int64_t fed = 0, emitted = 0, active_sum = 0;
    for (const auto& st : steps) {
      CHECK(st.fed_tokens == st.active + st.drafted);
      CHECK(st.seconds == doctest::Approx(cost.seconds(st.fed_tokens)));
      expect_verify += cost.seconds(st.fed_tokens);
      fed += st.fed_tokens;
      emitted += st.emitted;
      active_sum += st.active;
    }
    CHECK(s.fed_tokens == fed);
    CHECK(s.fed_tokens + 27 == batch.fed_tokens());  // the prefill fed 9 tokens per request
    CHECK(s.emitted == emitted);
    CHECK(s.emitted == 30 + 45 + 12);
    CHECK(s.verify_seconds == doctest::Approx(expect_verify));
    CHECK(s.prefill_seconds == doctest::Approx(cost.seconds(27)));
    CHECK(s.total_seconds == doctest::Approx(batch.clock().now()));
    CHECK(s.draft_seconds == 0.0);  // a simulated clock charges only the target
    std::int64_t runs = 0;
    for (const auto& r : res.requests) runs += r.stats.target_runs;
    CHECK(runs == active_sum);  // each request took part in exactly the steps it was active in
    CHECK(std::accumulate(s.steps_at_batch.begin(), s.steps_at_batch.end(), std::int64_t{0}) ==
          s.steps);
    CHECK(s.steps_at_batch.size() == 4);
    CHECK(s.steps_at_batch[3] > 0);
    CHECK(s.tokens_per_second() == doctest::Approx(87.0 / batch.clock().now()));
    // The request that finished first waited less than the batch as a whole.
    CHECK(res.requests[2].stats.total_seconds < s.total_seconds);
    CHECK(res.requests[1].stats.total_seconds == doctest::Approx(s.total_seconds));
  }

  TEST_CASE("k_for_batch sets every request's draft length from the number of active requests") {
    const ToyTargetConfig cfg = periodic_cfg(2, 0.0);
    ToyBatchTarget batch(cfg);
    PromptLookupDrafter d0(1), d1(1), d2(1);
    std::vector<BatchRequest> reqs(3);
    Drafter* ds[] = {&d0, &d1, &d2};
    const int lens[] = {20, 60, 40};
    for (int i = 0; i < 3; ++i) {
      reqs[i].prompt = prompt_for(ToyTarget(cfg), i, 12);
      reqs[i].drafter = ds[i];
      reqs[i].config.k = 8;  // overridden by k_for_batch
      reqs[i].config.max_new_tokens = lens[i];
      reqs[i].config.on_round = [](const RoundRecord& r) { CHECK(r.drafts.size() <= 2); };
    }
    std::vector<int> seen;
    BatchDecodeConfig bc;
    bc.k_for_batch = [&](int active) {
      seen.push_back(active);
      return active >= 2 ? 0 : 2;  // speculate only when a request is alone
    };
    std::vector<BatchStepRecord> steps;
    bc.on_step = [&](const BatchStepRecord& s) { steps.push_back(s); };
    const auto res = run_speculative_batch(batch, reqs, greedy_verify_rule(), bc);
    REQUIRE(seen.size() == steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      CHECK(seen[i] == steps[i].active);
      if (steps[i].active >= 2) CHECK(steps[i].drafted == 0);
    }
    CHECK(steps.back().active == 1);
    CHECK(res.stats.drafted > 0);  // the last request, alone, did speculate
    for (const auto& r : res.requests) CHECK(static_cast<int>(r.tokens.size()) > 0);
    bc.k_for_batch = [](int) { return 65; };
    CHECK_THROWS_WITH_AS(run_speculative_batch(batch, reqs, greedy_verify_rule(), bc),
                         doctest::Contains("k_for_batch(3) returned 65"), std::invalid_argument);
    CHECK(batch.sequences().empty());
  }

  TEST_CASE("the loop leaves sequences it did not add as they were, and no requests call nothing") {
    ToyBatchTarget batch(periodic_cfg(0, 0.0));
    const int mine = batch.add_sequence();
    batch.extend_batch(std::vector<BatchItem>{{mine, std::vector<Token>{7, 8, 9}}});
    CHECK(run_speculative_batch(batch, std::span<const BatchRequest>{}, greedy_verify_rule())
              .requests.empty());
    CHECK(batch.calls() == 1);  // only this test's own call
    std::vector<BatchRequest> reqs(2);
    reqs[0].prompt = {1, 2, 3};
    reqs[1].prompt = {4, 5};
    const auto got = run_speculative_batch(batch, reqs, greedy_verify_rule());
    CHECK(got.requests.size() == 2);
    CHECK(batch.sequences() == std::vector<int>{mine});
    CHECK(std::vector<Token>(batch.tokens(mine).begin(), batch.tokens(mine).end()) ==
          std::vector<Token>{7, 8, 9});
  }

  TEST_CASE("bad requests and broken drafters or rules are reported with the request index") {
    ToyBatchTarget batch(periodic_cfg(0, 0.0));
    std::vector<BatchRequest> reqs(2);
    reqs[0].prompt = {1, 2, 3};
    reqs[1].prompt = {};
    CHECK_THROWS_WITH_AS(run_speculative_batch(batch, reqs, greedy_verify_rule()),
                         doctest::Contains("request 1: the prompt is empty"),
                         std::invalid_argument);
    reqs[1].prompt = {4, 500};
    CHECK_THROWS_WITH_AS(run_speculative_batch(batch, reqs, greedy_verify_rule()),
                         doctest::Contains("request 1: prompt token id 500"),
                         std::invalid_argument);
    reqs[1].prompt = {4, 5};
    reqs[0].config.k = 65;
    CHECK_THROWS_WITH_AS(run_speculative_batch(batch, reqs, greedy_verify_rule()),
                         doctest::Contains("request 0: k (drafts per round)"),
                         std::invalid_argument);
    reqs[0].config.k = 2;
    reqs[0].config.max_new_tokens = 0;
    CHECK_THROWS_AS(run_speculative_batch(batch, reqs, greedy_verify_rule()),
                    std::invalid_argument);
    reqs[0].config.max_new_tokens = 10;
    CHECK_THROWS_AS(run_speculative_batch(batch, reqs, VerifyRule{}), std::invalid_argument);

    class Liar final : public Drafter {
     public:
      std::string name() const override { return "liar"; }
      std::vector<Token> propose(std::span<const Token>, int k) override {
        return std::vector<Token>(static_cast<size_t>(k) + 1, 1);
      }
    } liar;
    reqs[1].drafter = &liar;
    reqs[1].config.k = 2;
    CHECK_THROWS_WITH_AS(run_speculative_batch(batch, reqs, greedy_verify_rule()),
                         doctest::Contains("request 1: drafter 'liar' proposed 3 tokens"),
                         std::logic_error);
    CHECK(batch.sequences().empty());  // cleaned up after the throw too
    reqs[1].drafter = nullptr;
    const VerifyRule bad = [](const VerifyInput&) { return VerifyResult{0, {}}; };
    CHECK_THROWS_WITH_AS(run_speculative_batch(batch, reqs, bad),
                         doctest::Contains("verify rule broke its contract"), std::logic_error);
    CHECK(run_speculative_batch(batch, std::span<const BatchRequest>{}, greedy_verify_rule())
              .requests.empty());
  }

  TEST_CASE("batched: a target whose logits turn NaN is named in the error with the request") {
    NanBatch batch(periodic_cfg(0, 0.0), 12);
    std::vector<BatchRequest> reqs(2);
    reqs[0].prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1};
    reqs[1].prompt = {1, 2, 3, 4, 5, 6, 7};
    PromptLookupDrafter d0(2), d1(2);
    reqs[0].drafter = &d0;
    reqs[1].drafter = &d1;
    for (BatchRequest& r : reqs) {
      r.config.k = 3;
      r.config.max_new_tokens = 10;
    }
    CHECK_THROWS_WITH_AS(run_speculative_batch(batch, reqs, greedy_verify_rule()),
                         doctest::Contains("request 0: nan-batch: the logit of the token chosen "
                                           "at position 12 is NaN"),
                         std::runtime_error);
  }

  TEST_CASE("batched: a verify rule whose target token is outside the vocabulary is reported") {
    ToyBatchTarget batch(periodic_cfg(0, 0.0));
    std::vector<BatchRequest> reqs(2);
    reqs[0].prompt = {1, 2, 3};
    reqs[1].prompt = {4, 5};
    reqs[1].config.max_new_tokens = 1;
    const VerifyRule bad = [](const VerifyInput&) { return VerifyResult{0, {128}}; };
    CHECK_THROWS_WITH_AS(run_speculative_batch(batch, reqs, bad),
                         doctest::Contains("request 0: verify rule returned token id 128"),
                         std::logic_error);
    CHECK(batch.sequences().empty());
  }

  TEST_CASE("batched: a stop token among the accepted drafts leaves no bonus in the round record") {
    FixedDrafter fixed({1, 2, 3});
    ToyBatchTarget batch(periodic_cfg(0, 0.0));
    std::vector<BatchRequest> reqs(1);
    reqs[0].prompt = {5, 6};
    reqs[0].drafter = &fixed;
    reqs[0].config.k = 3;
    reqs[0].config.stop_tokens = {2};
    std::vector<RoundRecord> rounds;
    std::vector<int> lengths;  // the sequence's length once the round is done
    reqs[0].config.on_round = [&](const RoundRecord& r) {
      rounds.push_back(r);
      lengths.push_back(batch.length(batch.sequences().at(0)));
    };
    const VerifyRule all = [](const VerifyInput&) { return VerifyResult{3, {1, 2, 3, 4}}; };
    const auto out = run_speculative_batch(batch, reqs, all);
    REQUIRE(rounds.size() == 1);
    CHECK(out.requests[0].tokens == V{1, 2});
    CHECK(rounds[0].accepted == 2);
    CHECK_FALSE(rounds[0].bonus);
    // The sequence holds {5, 6, 1}: not the stop token, nor the drafts past it; the stats count
    // what was emitted.
    CHECK(lengths == std::vector<int>{3});
    const SpecStats& s = out.requests[0].stats;
    CHECK(s.drafted == 3);
    CHECK(s.accepted == 2);
    CHECK(s.emitted == 2);
    CHECK(out.stats.accepted == 2);
    CHECK(out.stats.emitted == 2);
  }

  TEST_CASE("batched: a round without drafts is not a bonus round") {
    FixedDrafter silent({});
    ToyBatchTarget batch(periodic_cfg(0, 0.0));
    std::vector<BatchRequest> reqs(1);
    reqs[0].prompt = {5, 6};
    reqs[0].drafter = &silent;
    reqs[0].config.max_new_tokens = 3;
    std::vector<RoundRecord> rounds;
    reqs[0].config.on_round = [&](const RoundRecord& r) { rounds.push_back(r); };
    run_speculative_batch(batch, reqs, greedy_verify_rule());
    REQUIRE(rounds.size() == 3);
    for (const RoundRecord& r : rounds) {
      CHECK(r.drafts.empty());
      CHECK_FALSE(r.bonus);
    }
  }

  TEST_CASE("batched: an infinite temperature is rejected up front") {
    ToyBatchTarget batch(periodic_cfg(0, 0.0));
    std::vector<BatchRequest> reqs(1);
    reqs[0].prompt = {1, 2, 3};
    reqs[0].config.sampling.temperature = INFINITY;
    CHECK_THROWS_WITH_AS(run_speculative_batch(batch, reqs, greedy_verify_rule()),
                         doctest::Contains("request 0: temperature"), std::invalid_argument);
  }

  TEST_CASE("a request that outgrows the context leaves the batch with context_full") {
    // It used to throw ContextOverflow, losing every request's tokens. Now only that request
    // ends, with what run_speculative gives it alone, and the others go on.
    ToyTargetConfig cfg = periodic_cfg(0, 0.0);
    cfg.max_length = 20;
    ToyBatchTarget batch(cfg);
    PromptLookupDrafter d(1);
    std::vector<BatchRequest> reqs(3);
    reqs[0].prompt = ToyTarget(cfg).make_prompt(5);
    reqs[0].config.max_new_tokens = 14;
    reqs[1].prompt = ToyTarget(cfg).make_prompt(10);
    reqs[1].drafter = &d;
    reqs[1].config.k = 4;
    reqs[1].config.max_new_tokens = 30;
    reqs[2].prompt = ToyTarget(cfg).make_prompt(3);
    reqs[2].config.max_new_tokens = 40;
    const BatchGenerationResult got = run_speculative_batch(batch, reqs, greedy_verify_rule());
    CHECK(batch.sequences().empty());
    REQUIRE(got.requests.size() == 3);
    CHECK(got.requests[0].finish == Finish::max_new_tokens);
    CHECK(got.requests[0].tokens.size() == 14);
    CHECK(got.requests[1].finish == Finish::context_full);
    CHECK(got.requests[1].tokens.size() == 11);  // 20 + 1 - 10
    CHECK(got.requests[2].finish == Finish::context_full);
    CHECK(got.requests[2].tokens.size() == 18);  // 20 + 1 - 3, after request 1 left
    ToyTarget alone(cfg);
    PromptLookupDrafter d_alone(1);
    const GenerationResult want =
        run_speculative(alone, d_alone, greedy_verify_rule(), reqs[1].prompt, reqs[1].config);
    CHECK(got.requests[1].tokens == want.tokens);
    CHECK(got.requests[1].stats.target_runs == want.stats.target_runs);
    // The prompt that does not fit at all is still refused up front, naming the request.
    reqs[2].prompt = ToyTarget(cfg).make_prompt(21);
    CHECK_THROWS_WITH_AS(run_speculative_batch(batch, reqs, greedy_verify_rule()),
                         doctest::Contains("request 2: the prompt has 21"), ContextOverflow);
    CHECK(batch.sequences().empty());
  }

  TEST_CASE(
      "each request's rounds' draft_seconds add up to its stats': begin and observe included") {
    // As in run_speculative: the record passed to on_round holds propose, observe and, in the
    // request's first round, begin. It held propose alone.
    const ToyTargetConfig cfg = periodic_cfg(5, 0.0);
    ToyBatchTarget batch(cfg);
    SimulatedClock clock;
    PromptLookupDrafter i0(1), i1(2);
    testing::ClockedDrafter d0(clock, i0), d1(clock, i1);
    std::vector<BatchRequest> reqs(2);
    std::vector<std::vector<double>> per_round(2);
    Drafter* ds[] = {&d0, &d1};
    for (int i = 0; i < 2; ++i) {
      reqs[i].prompt = prompt_for(ToyTarget(cfg), i, 10);
      reqs[i].drafter = ds[i];
      reqs[i].config.k = 3;
      reqs[i].config.max_new_tokens = 15 + 5 * i;
      reqs[i].config.on_round = [&per_round, i](const RoundRecord& r) {
        per_round[static_cast<size_t>(i)].push_back(r.draft_seconds);
      };
    }
    BatchDecodeConfig bc;
    bc.clock = &clock;
    const auto res = run_speculative_batch(batch, reqs, greedy_verify_rule(), bc);
    double all = 0.0;
    for (size_t i = 0; i < 2; ++i) {
      CAPTURE(i);
      const auto& rounds = per_round[i];
      REQUIRE(rounds.size() >= 2);
      using testing::ClockedDrafter;
      CHECK(rounds[0] ==
            ClockedDrafter::kBegin + ClockedDrafter::kPropose + ClockedDrafter::kObserve);
      CHECK(rounds[1] == ClockedDrafter::kPropose + ClockedDrafter::kObserve);
      CHECK(std::accumulate(rounds.begin(), rounds.end(), 0.0) ==
            res.requests[i].stats.draft_seconds);
      all += res.requests[i].stats.draft_seconds;
    }
    CHECK(all == res.stats.draft_seconds);
  }
  TEST_CASE(
      "observe() sees the round's propose() time alone, in the first round too, in both "
      "loops") {
    // round.h: draft_seconds is propose()'s time; only the record passed to on_round adds
    // observe() and, in the first round, begin(). run_speculative had already added begin()'s
    // time when it called observe() (101 s here, where the batched loop gave 1 s).
    struct Recorder final : Drafter {
      explicit Recorder(Drafter& d) : inner(d) {}
      std::string name() const override { return "recorder"; }
      void begin(std::span<const Token> p) override { inner.begin(p); }
      std::vector<Token> propose(std::span<const Token> c, int k) override {
        return inner.propose(c, k);
      }
      void observe(std::span<const Token> c, const RoundRecord& r) override {
        seen.push_back(r.draft_seconds);
        inner.observe(c, r);
      }
      Drafter& inner;
      std::vector<double> seen;
    };
    const ToyTargetConfig cfg = periodic_cfg(5, 0.0);
    const std::vector<Token> prompt = prompt_for(ToyTarget(cfg), 0, 10);
    using testing::ClockedDrafter;
    {
      SimulatedClock clock;
      PromptLookupDrafter inner(1);
      ClockedDrafter clocked(clock, inner);
      Recorder rec(clocked);
      ToyTarget t(cfg);
      DecodeConfig dc;
      dc.k = 3;
      dc.max_new_tokens = 12;
      dc.clock = &clock;
      run_speculative(t, rec, greedy_verify_rule(), prompt, dc);
      REQUIRE(rec.seen.size() >= 2);
      for (double s : rec.seen) CHECK(s == ClockedDrafter::kPropose);
    }
    {
      SimulatedClock clock;
      PromptLookupDrafter inner(1);
      ClockedDrafter clocked(clock, inner);
      Recorder rec(clocked);
      ToyBatchTarget batch(cfg);
      std::vector<BatchRequest> reqs(1);
      reqs[0].prompt = prompt;
      reqs[0].drafter = &rec;
      reqs[0].config.k = 3;
      reqs[0].config.max_new_tokens = 12;
      BatchDecodeConfig bc;
      bc.clock = &clock;
      run_speculative_batch(batch, reqs, greedy_verify_rule(), bc);
      REQUIRE(rec.seen.size() >= 2);
      for (double s : rec.seen) CHECK(s == ClockedDrafter::kPropose);
    }
  }
}
