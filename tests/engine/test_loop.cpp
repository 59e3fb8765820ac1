#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "clocked_drafter.h"
#include "mini_engine/core/clock.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "prompt_lookup.h"

using namespace speclab;

namespace {
// A drafter that breaks its contract on purpose.
class GreedyLiar final : public Drafter {
 public:
  explicit GreedyLiar(std::vector<Token> out) : out_(std::move(out)) {}
  std::string name() const override { return "liar"; }
  std::vector<Token> propose(std::span<const Token>, int) override { return out_; }
  std::vector<Token> out_;
};
// A ToyTarget that counts how it is called.
class CountingTarget final : public Target {
 public:
  std::string name() const override { return inner.name(); }
  int vocab_size() const override { return inner.vocab_size(); }
  int max_length() const override { return inner.max_length(); }
  std::span<const Token> tokens() const override { return inner.tokens(); }
  Logits extend(std::span<const Token> t) override {
    extended_rows += static_cast<int>(t.size());
    return inner.extend(t);
  }
  void append(std::span<const Token> t) override {
    appended_rows += static_cast<int>(t.size());
    inner.append(t);
  }
  void truncate(int n) override { inner.truncate(n); }
  ToyTarget inner{ToyTargetConfig{}};
  int extended_rows = 0, appended_rows = 0;
};
// A periodic ToyTarget whose calls take simulated time: 0.5 s an append (the prefill), 1 s an
// extend (a decode step or a verify pass).
class SlowTarget final : public Target {
 public:
  explicit SlowTarget(SimulatedClock& clock) : clock_(clock) {}
  std::string name() const override { return inner.name(); }
  int vocab_size() const override { return inner.vocab_size(); }
  int max_length() const override { return inner.max_length(); }
  std::span<const Token> tokens() const override { return inner.tokens(); }
  Logits extend(std::span<const Token> t) override {
    clock_.advance(1.0);
    return inner.extend(t);
  }
  void append(std::span<const Token> t) override {
    clock_.advance(0.5);
    inner.append(t);
  }
  void truncate(int n) override { inner.truncate(n); }
  ToyTarget inner{ToyTargetConfig{.regime = ToyRegime::periodic, .seed = 3, .period = 5}};

 private:
  SimulatedClock& clock_;
};
// A ToyTarget whose rows that score the tokens at positions `from` and later are all `bad` (NaN
// or infinite): what a broken kernel, or a model whose numbers overflow, gives.
class BrokenTarget final : public Target {
 public:
  BrokenTarget(float bad, int from) : bad_(bad), from_(from) {}
  std::string name() const override { return "broken"; }
  int vocab_size() const override { return inner.vocab_size(); }
  int max_length() const override { return inner.max_length(); }
  std::span<const Token> tokens() const override { return inner.tokens(); }
  Logits extend(std::span<const Token> t) override {
    const int first = inner.length();
    Logits l = inner.extend(t);
    for (int i = 0; i < l.rows(); ++i) {
      if (first + i + 1 >= from_) std::fill(l.row(i).begin(), l.row(i).end(), bad_);
    }
    return l;
  }
  void truncate(int n) override { inner.truncate(n); }
  ToyTarget inner{ToyTargetConfig{.regime = ToyRegime::periodic, .seed = 3, .period = 5}};

 private:
  float bad_;
  int from_;
};
}  // namespace

TEST_SUITE("engine / speculative loop") {
  TEST_CASE("the prompt is prefilled with append: no logits are computed for it") {
    const std::vector<Token> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
    DecodeConfig dc;
    dc.max_new_tokens = 3;
    CountingTarget plain;
    run_baseline(plain, prompt, dc);
    CHECK(plain.appended_rows == 7);  // all but the last prompt token, which the first step feeds
    CHECK(plain.extended_rows == 3);  // one row per decode step
    CountingTarget spec;
    PromptLookupDrafter d(1);
    run_speculative(spec, d, greedy_verify_rule(), prompt, dc);
    CHECK(spec.appended_rows == 7);
  }

  TEST_CASE("bad input gives a clear error: empty prompt, k out of range, bad token ids") {
    ToyTarget t(ToyTargetConfig{});
    PromptLookupDrafter d(1);
    DecodeConfig dc;
    const std::vector<Token> empty;
    CHECK_THROWS_WITH_AS(run_baseline(t, empty, dc), doctest::Contains("prompt is empty"),
                         std::invalid_argument);
    const std::vector<Token> prompt = {1, 2, 3};
    dc.k = 0;
    CHECK_THROWS_WITH_AS(run_speculative(t, d, greedy_verify_rule(), prompt, dc),
                         doctest::Contains("k (drafts per round)"), std::invalid_argument);
    dc.k = 65;
    CHECK_THROWS_AS(run_speculative(t, d, greedy_verify_rule(), prompt, dc), std::invalid_argument);
    dc.k = 4;
    dc.max_new_tokens = 0;
    CHECK_THROWS_AS(run_baseline(t, prompt, dc), std::invalid_argument);
    dc.max_new_tokens = 4;
    CHECK_THROWS_AS(run_baseline(t, std::vector<Token>{1, 9999}, dc), std::invalid_argument);
  }

  TEST_CASE("a drafter that proposes too many or invalid tokens is named in the error") {
    ToyTarget t(ToyTargetConfig{});
    DecodeConfig dc;
    dc.k = 2;
    const std::vector<Token> prompt = {1, 2, 3};
    GreedyLiar too_many({1, 2, 3});
    CHECK_THROWS_WITH_AS(run_speculative(t, too_many, greedy_verify_rule(), prompt, dc),
                         doctest::Contains("drafter 'liar' proposed 3 tokens"), std::logic_error);
    GreedyLiar bad_id({-4});
    CHECK_THROWS_WITH_AS(run_speculative(t, bad_id, greedy_verify_rule(), prompt, dc),
                         doctest::Contains("outside the vocabulary"), std::logic_error);
  }

  TEST_CASE("a verify rule that breaks its contract is reported") {
    ToyTarget t(ToyTargetConfig{});
    GreedyLiar d({1, 2});
    DecodeConfig dc;
    dc.k = 2;
    const VerifyRule bad = [](const VerifyInput&) { return VerifyResult{2, {1, 2}}; };
    CHECK_THROWS_WITH_AS(run_speculative(t, d, bad, std::vector<Token>{5, 6}, dc),
                         doctest::Contains("verify rule broke its contract"), std::logic_error);
  }

  TEST_CASE("generation ends right after a stop token, in both loops") {
    ToyTarget t(ToyTargetConfig{.regime = ToyRegime::periodic, .seed = 9, .period = 6});
    const auto prompt = t.make_prompt(4);
    DecodeConfig dc;
    dc.max_new_tokens = 50;
    const auto free_run = run_baseline(t, prompt, dc).tokens;
    dc.stop_tokens = {free_run[20]};
    const auto base = run_baseline(t, prompt, dc);
    PromptLookupDrafter d(1);
    dc.k = 5;
    const auto spec = run_speculative(t, d, greedy_verify_rule(), prompt, dc);
    CHECK(base.finish == Finish::stop_token);
    CHECK(spec.finish == Finish::stop_token);
    CHECK(spec.tokens == base.tokens);
    CHECK(base.tokens.back() == free_run[20]);
    CHECK(t.length() == static_cast<int>(prompt.size() + spec.tokens.size()) - 1);
  }

  TEST_CASE("the target holds exactly context minus its last token after every round") {
    ToyTarget t(ToyTargetConfig{.regime = ToyRegime::markov, .seed = 2});
    const auto prompt = t.make_prompt(8);
    DecodeConfig dc;
    dc.max_new_tokens = 60;
    dc.k = 5;
    std::int64_t emitted = 0;
    dc.on_round = [&](const RoundRecord& r) {
      emitted += static_cast<std::int64_t>(r.emitted.size());
      CHECK(t.length() == static_cast<int>(prompt.size() + emitted) - 1);
    };
    PromptLookupDrafter d(1);
    run_speculative(t, d, greedy_verify_rule(), prompt, dc);
  }

  TEST_CASE("a second turn reuses the target's prefix instead of recomputing it") {
    // The toy's logits depend on the tokens alone, so equal outputs cannot show reuse: count the
    // rows the second turn feeds. The target holds turn 1's prompt and reply but its last token
    // (14 tokens); turn 2's prefill needs 15, so it appends exactly 1.
    for (const bool speculative : {false, true}) {
      CAPTURE(speculative);
      CountingTarget t;
      auto prompt = t.inner.make_prompt(10);
      DecodeConfig dc;
      dc.max_new_tokens = 5;
      PromptLookupDrafter d(1);
      const auto run = [&](const std::vector<Token>& p) {
        return speculative ? run_speculative(t, d, greedy_verify_rule(), p, dc)
                           : run_baseline(t, p, dc);
      };
      const auto first = run(prompt);
      CHECK(t.appended_rows == 9);
      prompt.insert(prompt.end(), first.tokens.begin(), first.tokens.end());
      prompt.push_back(3);
      const int appended = t.appended_rows, extended = t.extended_rows;
      const auto second = run(prompt);
      CHECK(t.appended_rows - appended == 1);
      if (!speculative) CHECK(t.extended_rows - extended == 5);  // one row per decode step
      ToyTarget fresh(ToyTargetConfig{});
      CHECK(run_baseline(fresh, prompt, dc).tokens == second.tokens);
    }
  }

  TEST_CASE("the loops time prefill, draft and verify on the clock the config names") {
    // Each loop on its own target and clock: 0.5 s of prefill, 1 s per target run, and drafting
    // takes no simulated time. The wall clock would give none of these exact figures.
    SimulatedClock base_clock, spec_clock;
    SlowTarget base_target(base_clock), spec_target(spec_clock);
    const auto prompt = base_target.inner.make_prompt(8);
    DecodeConfig dc;
    dc.max_new_tokens = 20;
    dc.clock = &base_clock;
    const auto base = run_baseline(base_target, prompt, dc);
    CHECK(base.stats.prefill_seconds == 0.5);
    CHECK(base.stats.verify_seconds == 20.0);
    CHECK(base.stats.total_seconds == 20.5);

    PromptLookupDrafter d(1);
    dc.k = 4;
    dc.clock = &spec_clock;
    const auto spec = run_speculative(spec_target, d, greedy_verify_rule(), prompt, dc);
    CHECK(spec.tokens == base.tokens);
    CHECK(spec.stats.target_runs < 20);  // periodic text: drafts land
    CHECK(spec.stats.prefill_seconds == 0.5);
    CHECK(spec.stats.draft_seconds == 0.0);
    CHECK(spec.stats.verify_seconds == static_cast<double>(spec.stats.target_runs));
    CHECK(spec.stats.total_seconds == spec_clock.now());
  }

  TEST_CASE("both loops reuse the prompt a target already holds: a second run has no prefill") {
    // So two runs on one target are not timed alike: the second's tokens/s leaves the prefill out.
    SimulatedClock clock;
    SlowTarget target(clock);
    const auto prompt = target.inner.make_prompt(8);
    DecodeConfig dc;
    dc.max_new_tokens = 6;
    dc.clock = &clock;
    const auto first = run_baseline(target, prompt, dc);
    CHECK(first.stats.prefill_seconds == 0.5);
    PromptLookupDrafter d(1);
    const auto spec = run_speculative(target, d, greedy_verify_rule(), prompt, dc);
    CHECK(spec.tokens == first.tokens);
    CHECK(spec.stats.prefill_seconds == 0.0);
    CHECK(run_baseline(target, prompt, dc).stats.prefill_seconds == 0.0);
  }

  TEST_CASE("the rounds' draft_seconds add up to the stats': begin and observe included") {
    // The records held only propose()'s time, so a trace's draft_s summed to a fraction of the
    // stats line's draft time for a drafter that learns in observe() (the suffix automaton).
    SimulatedClock clock;
    ToyTarget t(ToyTargetConfig{.regime = ToyRegime::periodic, .seed = 3, .period = 5});
    PromptLookupDrafter inner(1);
    testing::ClockedDrafter d(clock, inner);
    DecodeConfig dc;
    dc.max_new_tokens = 20;
    dc.k = 3;
    dc.clock = &clock;
    std::vector<double> per_round;
    dc.on_round = [&](const RoundRecord& r) { per_round.push_back(r.draft_seconds); };
    const auto out = run_speculative(t, d, greedy_verify_rule(), t.make_prompt(8), dc);
    REQUIRE(per_round.size() >= 2);
    CHECK(per_round[0] == 111.0);  // begin + propose + observe
    CHECK(per_round[1] == 11.0);
    double sum = 0.0;
    for (double s : per_round) sum += s;
    CHECK(sum == out.stats.draft_seconds);
  }

  TEST_CASE("a verify rule whose target token is outside the vocabulary is reported") {
    // The contract check covered the accepted drafts but not the target's own token, so a bad id
    // was emitted silently (on the last round nothing ever fed it back to the target).
    ToyTarget t(ToyTargetConfig{});
    GreedyLiar d({1, 2});
    DecodeConfig dc;
    dc.k = 2;
    for (Token bad_id : {Token{-1}, Token{512}}) {
      const VerifyRule bad = [bad_id](const VerifyInput&) { return VerifyResult{0, {bad_id}}; };
      dc.max_new_tokens = 1;
      CHECK_THROWS_WITH_AS(run_speculative(t, d, bad, std::vector<Token>{5, 6}, dc),
                           doctest::Contains("outside the vocabulary"), std::logic_error);
      dc.max_new_tokens = 10;
      CHECK_THROWS_WITH_AS(run_speculative(t, d, bad, std::vector<Token>{5, 6}, dc),
                           doctest::Contains("outside the vocabulary"), std::logic_error);
    }
  }

  TEST_CASE("when the verify rule throws or breaks its contract the drafts are rolled back") {
    // The verify pass had already appended [last] + drafts; the error left them in the target.
    ToyTarget t(ToyTargetConfig{});
    GreedyLiar d({1, 2});
    DecodeConfig dc;
    dc.k = 2;
    const std::vector<Token> prompt = {5, 6, 7};
    const VerifyRule throws = [](const VerifyInput&) -> VerifyResult {
      throw std::runtime_error("rule failed");
    };
    CHECK_THROWS_AS(run_speculative(t, d, throws, prompt, dc), std::runtime_error);
    CHECK(t.length() == 2);  // prompt minus its last token, as before the round
    const VerifyRule broken = [](const VerifyInput&) { return VerifyResult{2, {1, 2}}; };
    CHECK_THROWS_AS(run_speculative(t, d, broken, prompt, dc), std::logic_error);
    CHECK(t.length() == 2);
  }

  TEST_CASE("a target whose logits turn NaN or infinite is named in the error, in both loops") {
    // Greedy decoding picked token 0 from a row of NaNs (nothing compares greater) and went on
    // emitting noise; the check reads only the chosen token's logit in each row. (-infinity is a
    // score the toy target itself gives the tokens it rules out: the other tests run into it.)
    for (const float bad : {std::nanf(""), INFINITY}) {
      CAPTURE(bad);
      const std::vector<Token> prompt = {1, 2, 3, 4, 5, 1, 2, 3};
      DecodeConfig dc;
      dc.max_new_tokens = 20;
      dc.k = 4;
      BrokenTarget plain(bad, 12);
      const std::string said =
          std::string("broken: the logit of the token chosen at position 12 is ") +
          (std::isnan(bad) ? "NaN" : "+infinity");
      CHECK_THROWS_WITH_AS(run_baseline(plain, prompt, dc), doctest::Contains(said.c_str()),
                           std::runtime_error);
      BrokenTarget spec(bad, 12);
      PromptLookupDrafter d(2);
      CHECK_THROWS_WITH_AS(run_speculative(spec, d, greedy_verify_rule(), prompt, dc),
                           doctest::Contains("numbers broke down"), std::runtime_error);
      // The failed round is taken back: the target holds no token past position 11.
      CHECK(spec.length() < 12);
    }
  }

  TEST_CASE("a drafter that throws mid-run leaves the target holding only emitted text") {
    class Flaky final : public Drafter {
     public:
      std::string name() const override { return "flaky"; }
      std::vector<Token> propose(std::span<const Token> context, int k) override {
        if (++calls == 3) throw std::runtime_error("propose failed");
        return inner.propose(context, k);
      }
      void observe(std::span<const Token> context, const RoundRecord& r) override {
        seen.assign(context.begin(), context.end());
        inner.observe(context, r);
      }
      PromptLookupDrafter inner{1};
      int calls = 0;
      std::vector<Token> seen;
    } flaky;
    ToyTarget t(ToyTargetConfig{.regime = ToyRegime::periodic, .seed = 1, .period = 4});
    DecodeConfig dc;
    dc.k = 4;
    dc.max_new_tokens = 40;
    CHECK_THROWS_AS(run_speculative(t, flaky, greedy_verify_rule(), t.make_prompt(8), dc),
                    std::runtime_error);
    // After two rounds: the context the drafter last saw, minus its last token.
    REQUIRE(flaky.seen.size() > 8);
    CHECK(std::vector<Token>(t.tokens().begin(), t.tokens().end()) ==
          std::vector<Token>(flaky.seen.begin(), flaky.seen.end() - 1));
  }

  TEST_CASE("a stop token among the accepted drafts leaves no bonus in the round record") {
    // drafts {1, 2, 3} all accepted, emitted {1, 2, 3, 4}; stop token 2 cuts it to {1, 2}: the
    // bonus token was not emitted, and the record kept 2 of 3 drafts, so bonus must be false.
    ToyTarget t(ToyTargetConfig{});
    GreedyLiar d({1, 2, 3});
    DecodeConfig dc;
    dc.k = 3;
    dc.stop_tokens = {2};
    const VerifyRule all = [](const VerifyInput&) { return VerifyResult{3, {1, 2, 3, 4}}; };
    std::vector<RoundRecord> rounds;
    dc.on_round = [&](const RoundRecord& r) { rounds.push_back(r); };
    const auto out = run_speculative(t, d, all, std::vector<Token>{5, 6}, dc);
    REQUIRE(rounds.size() == 1);
    CHECK(out.tokens == std::vector<Token>{1, 2});
    CHECK(rounds[0].accepted == 2);
    CHECK_FALSE(rounds[0].bonus);
    // The target holds the prompt and the emitted tokens but the last ({5, 6, 1}), not the stop
    // token or the drafts past it; the stats count what was emitted, not what was verified.
    CHECK(t.tokens().size() == 3);
    CHECK(out.stats.target_runs == 1);
    CHECK(out.stats.drafted == 3);
    CHECK(out.stats.accepted == 2);
    CHECK(out.stats.emitted == 2);
    CHECK(out.stats.tokens_per_run() == 2.0);
  }

  TEST_CASE("a round without drafts is not a bonus round") {
    // accepted (0) == drafted (0), but nothing was drafted, so the one token is the target's
    // own, not a bonus after a fully accepted draft.
    ToyTarget t(ToyTargetConfig{});
    GreedyLiar silent({});
    DecodeConfig dc;
    dc.max_new_tokens = 4;
    std::vector<RoundRecord> rounds;
    dc.on_round = [&](const RoundRecord& r) { rounds.push_back(r); };
    const auto out = run_speculative(t, silent, greedy_verify_rule(), t.make_prompt(8), dc);
    REQUIRE(rounds.size() == 4);
    for (const RoundRecord& r : rounds) {
      CHECK(r.drafts.empty());
      CHECK(r.emitted.size() == 1);
      CHECK_FALSE(r.bonus);
    }
    CHECK(out.stats.tokens_per_run() == 1.0);
  }

  TEST_CASE("the greedy verify rule refuses to verify a sampled run") {
    // At temperature 1 it verified greedily: run_speculative gave temperature 0's tokens while
    // run_baseline sampled, and nothing said so.
    ToyTarget t(ToyTargetConfig{});
    DecodeConfig dc;
    dc.max_new_tokens = 8;
    dc.sampling.temperature = 1.0;
    PromptLookupDrafter d(1);
    CHECK_THROWS_WITH_AS(run_speculative(t, d, greedy_verify_rule(), t.make_prompt(8), dc),
                         doctest::Contains("greedy_verify_rule: the run samples at temperature 1"),
                         std::invalid_argument);
    CHECK(t.length() < 8);  // only the prompt's prefill, or less
  }

  TEST_CASE("an infinite temperature is rejected up front") {
    // softmax(row / inf) turns a -inf score into NaN; the loops accepted it and failed later.
    ToyTarget t(ToyTargetConfig{});
    DecodeConfig dc;
    dc.sampling.temperature = INFINITY;
    CHECK_THROWS_WITH_AS(run_baseline(t, std::vector<Token>{1, 2}, dc),
                         doctest::Contains("temperature"), std::invalid_argument);
    CHECK(t.length() == 0);
  }

  TEST_CASE("a negative or NaN temperature is rejected up front, in both loops") {
    // loop.h: both loops require a finite temperature >= 0 and throw before touching the target.
    for (const double bad : {-1.0, -1e-9, static_cast<double>(NAN)}) {
      INFO("temperature " << bad);
      ToyTarget t(ToyTargetConfig{});
      PromptLookupDrafter d(1);
      DecodeConfig dc;
      dc.sampling.temperature = bad;
      CHECK_THROWS_WITH_AS(run_baseline(t, std::vector<Token>{1, 2}, dc),
                           doctest::Contains("temperature must be finite and >= 0"),
                           std::invalid_argument);
      CHECK_THROWS_WITH_AS(
          run_speculative(t, d, greedy_verify_rule(), std::vector<Token>{1, 2}, dc),
          doctest::Contains("temperature must be finite and >= 0"), std::invalid_argument);
      CHECK(t.length() == 0);
    }
  }

  TEST_CASE("run_speculative without a verify rule is refused by name before any work") {
    // loop.h: "a non-empty `verify` (std::invalid_argument otherwise)"; an empty std::function
    // would otherwise throw std::bad_function_call from inside the first round.
    ToyTarget t(ToyTargetConfig{});
    PromptLookupDrafter d(1);
    CHECK_THROWS_WITH_AS(
        run_speculative(t, d, VerifyRule{}, std::vector<Token>{1, 2, 3}, DecodeConfig{}),
        doctest::Contains("no verify rule"), std::invalid_argument);
    CHECK(t.length() == 0);
  }

  TEST_CASE("SpecStats: acceptance by position, the rates and the summary's tokens/s") {
    SpecStats s;
    s.record_round(3, 2, 3);  // drafts at positions 0, 1, 2; the first two accepted
    s.record_round(2, 2, 3);  // both accepted, and the bonus
    s.record_round(0, 0, 1);  // nothing drafted
    CHECK(s.target_runs == 3);
    CHECK(s.drafted == 5);
    CHECK(s.accepted == 4);
    CHECK(s.emitted == 7);
    CHECK(s.drafted_at == std::vector<std::int64_t>{2, 2, 1});
    CHECK(s.accepted_at == std::vector<std::int64_t>{2, 2, 0});
    CHECK(s.acceptance_at(0) == 1.0);
    CHECK(s.acceptance_at(1) == 1.0);
    CHECK(s.acceptance_at(2) == 0.0);
    CHECK(s.acceptance_at(3) == 0.0);                    // never drafted there
    CHECK(s.acceptance_rate() == doctest::Approx(0.8));  // accepted / drafted
    CHECK(s.tokens_per_run() == doctest::Approx(7.0 / 3.0));
    CHECK(s.accept_length_hist == std::vector<std::int64_t>{1, 0, 2});
    s.total_seconds = 2.0;
    s.prefill_seconds = 1.0;
    s.draft_seconds = 0.25;
    s.verify_seconds = 0.5;
    CHECK(s.other_seconds() == doctest::Approx(0.25));
    // tokens/s is end to end: 7 tokens over the whole 2 s, prefill included.
    CHECK(s.summary() ==
          "7 tokens, 3 target runs, 2.33 tokens/run, acceptance 80.0% (4/5), time prefill 1.000s "
          "draft 0.250s verify 0.500s other 0.250s, 3.5 tokens/s");
  }

  TEST_CASE("SpecStats::summary: a run that drafted nothing has no acceptance rate") {
    // "0.0%" read as every draft rejected, where none was drafted (random text).
    SpecStats s;
    s.record_round(0, 0, 1);
    s.record_round(0, 0, 1);
    s.total_seconds = 1.0;
    CHECK(s.summary() ==
          "2 tokens, 2 target runs, 1.00 tokens/run, acceptance n/a (nothing drafted), time "
          "prefill 0.000s draft 0.000s verify 0.000s other 1.000s, 2.0 tokens/s");
  }

  TEST_CASE("SpecStats::summary: one token and one run are singular") {
    // generate's stats line read "1 tokens, 1 target runs" for a one-token run.
    SpecStats s;
    s.record_round(0, 0, 1);
    s.total_seconds = 1.0;
    CHECK(s.summary() ==
          "1 token, 1 target run, 1.00 tokens/run, acceptance n/a (nothing drafted), time "
          "prefill 0.000s draft 0.000s verify 0.000s other 1.000s, 1.0 tokens/s");
  }

  TEST_CASE("SpecStats::record_round rejects counts no round can have") {
    // accepted > drafted indexed past accepted_at; a negative count indexed before the vectors.
    SpecStats s;
    CHECK_THROWS_AS(s.record_round(1, 2, 3), std::invalid_argument);
    CHECK_THROWS_AS(s.record_round(-1, 0, 1), std::invalid_argument);
    CHECK_THROWS_AS(s.record_round(2, -1, 1), std::invalid_argument);
    CHECK_THROWS_AS(s.record_round(2, 1, -1), std::invalid_argument);
    CHECK(s.target_runs == 0);
    s.record_round(2, 1, 2);
    CHECK(s.target_runs == 1);
    CHECK(s.accept_length_hist == std::vector<std::int64_t>{0, 1});
  }

  TEST_CASE("a full context ends the generation (Finish::context_full) and keeps its tokens") {
    // Both loops used to throw ContextOverflow here, losing every token generated so far; a
    // request in a batch lost the whole batch's work. Now the context limit ends a generation as
    // max_new_tokens does. The last emitted token is never fed, so a target of 12 tokens given a
    // prompt of 6 emits 12 + 1 - 6 = 7 tokens, the plain and the speculative loop alike.
    const ToyTargetConfig cfg{
        .regime = ToyRegime::periodic, .seed = 3, .period = 5, .max_length = 12};
    const std::vector<Token> prompt = ToyTarget(cfg).make_prompt(6);
    DecodeConfig dc;
    dc.max_new_tokens = 40;
    ToyTarget plain(cfg);
    const GenerationResult base = run_baseline(plain, prompt, dc);
    CHECK(base.finish == Finish::context_full);
    CHECK(base.tokens.size() == 7);
    CHECK(plain.length() == 12);
    for (int k : {1, 3, 5, 12}) {
      INFO("k = ", k);
      ToyTarget t(cfg);
      PromptLookupDrafter d(1);
      dc.k = k;
      const GenerationResult spec = run_speculative(t, d, greedy_verify_rule(), prompt, dc);
      CHECK(spec.finish == Finish::context_full);
      CHECK(spec.tokens == base.tokens);
      CHECK(spec.stats.emitted == 7);
      CHECK(t.length() == 12);
    }
    // Exactly the tokens that fit: max_new_tokens is what ended it, not the context.
    dc.max_new_tokens = 7;
    ToyTarget exact(cfg);
    const GenerationResult fits = run_baseline(exact, prompt, dc);
    CHECK(fits.finish == Finish::max_new_tokens);
    CHECK(fits.tokens == base.tokens);
    // A prompt that does not fit at all is still an error, and changes nothing.
    ToyTarget small(cfg);
    CHECK_THROWS_WITH_AS(run_baseline(small, ToyTarget(cfg).make_prompt(13), dc),
                         doctest::Contains("holds at most 12"), ContextOverflow);
    CHECK(small.length() == 0);
  }

  TEST_CASE("Finish has a name for every reason") {
    CHECK(std::string(to_string(Finish::max_new_tokens)) == "max_new_tokens");
    CHECK(std::string(to_string(Finish::stop_token)) == "stop_token");
    CHECK(std::string(to_string(Finish::context_full)) == "context_full");
  }
}
