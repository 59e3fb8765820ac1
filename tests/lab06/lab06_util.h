#pragma once
// Shared by the lab 06 tests and by the figures the chapter quotes (tests/book/figures_lab06.cpp):
// the toy cost models, acceptance profiles, the batched decode and the measured curve.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "economics.h"
#include "mini_engine/spec/batch_loop.h"
#include "mini_engine/spec/cost_curve.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_batch_target.h"
#include "mini_engine/targets/toy_target.h"
#include "prompt_lookup.h"
#include "test_util.h"

namespace lab06 {

using namespace speclab;

// A GPU-like roofline: a pass is memory-bound (nearly flat) up to 64 tokens, compute-bound past.
inline ToyCostModel roofline_cost() {
  ToyCostModel c;
  c.fixed_seconds = 0.020;
  c.per_token_seconds = 0.0001;
  c.knee_tokens = 64;
  c.past_knee_seconds = 0.0015;
  return c;
}

// A small-CPU-like model: every token costs real arithmetic from the first one on.
inline ToyCostModel cpu_like_cost() {
  ToyCostModel c;
  c.fixed_seconds = 0.010;
  c.per_token_seconds = 0.004;
  c.knee_tokens = 1 << 30;
  c.past_knee_seconds = 0.0;
  return c;
}

inline const std::vector<int>& toy_batch_sizes() {
  static const std::vector<int> b = {1, 2, 4, 8, 16, 32, 64};
  return b;
}

// T(b, k) = model.seconds(b * (k + 1)) for b in toy_batch_sizes(), k in 0..8.
inline CostCurve curve_of(const ToyCostModel& model, const std::string& name) {
  return CostCurve::from_function(
      toy_batch_sizes(), 8, [model](int b, int k) { return model.seconds(b * (k + 1)); }, name);
}

// The workload the batch tests decode: periodic text with some noise, or markov text.
inline ToyTargetConfig workload(bool easy, std::uint64_t seed = 11) {
  ToyTargetConfig c;
  c.regime = easy ? ToyRegime::periodic : ToyRegime::markov;
  c.seed = seed;
  c.period = 9;
  c.noise = easy ? 0.08 : 0.3;
  c.vocab_size = 128;
  return c;
}

// Request i's prompt: the regime's prompt, shifted by i so that requests differ.
inline std::vector<Token> prompt_for(const ToyTargetConfig& cfg, int i, int len = 12) {
  std::vector<Token> p = ToyTarget(cfg).make_prompt(len + i);
  p.erase(p.begin(), p.begin() + i);
  return p;
}

// One batched decode on the simulated clock (book/lab06_economics.md, "Speculating in a
// batch"; tests/book/figures_lab06.cpp quotes it): its decode-phase throughput and each request's
// tokens.
struct Outcome {
  double tokens_per_second = 0.0;
  std::vector<std::vector<Token>> tokens;
};

// Decodes b requests (prompt_for(cfg, 0..b-1), 64 new tokens each) in lock-step with prompt
// lookup (n-gram size n; n = 0: no drafter) and a fixed k, on a ToyBatchTarget priced by `cost`.
inline Outcome decode_batch(const ToyTargetConfig& cfg, const ToyCostModel& cost, int b, int n,
                            int k) {
  ToyBatchTarget target(cfg, cost);
  std::vector<std::unique_ptr<PromptLookupDrafter>> drafters;
  std::vector<BatchRequest> reqs(static_cast<size_t>(b));
  for (int i = 0; i < b; ++i) {
    reqs[i].prompt = prompt_for(cfg, i);
    reqs[i].config.max_new_tokens = 64;
    reqs[i].config.k = k;
    if (n > 0 && k > 0) {
      drafters.push_back(std::make_unique<PromptLookupDrafter>(n));
      reqs[i].drafter = drafters.back().get();
    }
  }
  BatchDecodeConfig bc;
  bc.clock = &target.clock();
  const auto res = run_speculative_batch(target, reqs, greedy_verify_rule(), bc);
  Outcome o;
  // Throughput of the decode phase: the prefill is the same with or without speculation.
  o.tokens_per_second = static_cast<double>(res.stats.emitted) / res.stats.verify_seconds;
  for (const auto& r : res.requests) o.tokens.push_back(r.tokens);
  return o;
}

// Prompt lookup with n-gram size n on `cfg`, k = 8 drafts per round, several prompts: the
// drafter's measured acceptance profile (through the student's acceptance_profile), named with
// n and the workload's regime, e.g. "prompt-lookup(n=3, periodic)".
inline DrafterProfile measure_prompt_lookup(const ToyTargetConfig& cfg, int n) {
  SpecStats all;
  for (int i = 0; i < 4; ++i) {
    ToyTarget target(cfg);
    PromptLookupDrafter drafter(n);
    DecodeConfig dc;
    dc.k = 8;
    dc.max_new_tokens = 200;
    const auto r = run_speculative(target, drafter, greedy_verify_rule(), prompt_for(cfg, i), dc);
    const auto& h = r.stats.accept_length_hist;
    if (all.accept_length_hist.size() < h.size()) all.accept_length_hist.resize(h.size(), 0);
    for (size_t a = 0; a < h.size(); ++a) all.accept_length_hist[a] += h[a];
    all.target_runs += r.stats.target_runs;
  }
  return {"prompt-lookup(n=" + std::to_string(n) + ", " + to_string(cfg.regime) + ")",
          acceptance_profile(all, 8)};
}

// Hand-made profiles: from hopeless to near-certain, geometric and not.
inline std::vector<DrafterProfile> synthetic_profiles() {
  std::vector<DrafterProfile> p;
  for (double a : {0.0, 0.2, 0.4, 0.6, 0.8, 0.95}) {
    p.push_back({"geometric(" + std::to_string(a) + ")", geometric_profile(a, 8)});
  }
  // Copying text: the first draft is a coin flip, but once a copy is right it stays right.
  p.push_back({"copy", {0.5, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9}});
  return p;
}

// Every profile of a sweep has its own name: the log lines ("... b=4 chose k=3", doctest -s)
// are how a reader tells the choices apart (book/lab06_economics.md).
inline bool names_distinct(const std::vector<DrafterProfile>& profiles) {
  for (size_t i = 0; i < profiles.size(); ++i) {
    for (size_t j = i + 1; j < profiles.size(); ++j) {
      if (profiles[i].name == profiles[j].name) return false;
    }
  }
  return true;
}

// The tests' own evaluation of a choice, independent of the code under test, so that a wrong
// expected_speedup cannot vouch for a wrong choose_k.
inline double ref_tokens(const std::vector<double>& alpha, int k) {
  double e = 1.0, reach = 1.0;
  for (int i = 0; i < k; ++i) e += (reach *= alpha.at(static_cast<size_t>(i)));
  return e;
}
inline double ref_speedup(const CostCurve& c, int b, int k, const std::vector<double>& alpha) {
  return ref_tokens(alpha, k) * c.seconds(b, 0) / c.seconds(b, k);
}
// The best speed-up any k in 0..max_k reaches: what choose_k must find.
inline double ref_best(const CostCurve& c, int b, const std::vector<double>& alpha, int max_k) {
  double best = 1.0;
  for (int k = 1; k <= max_k; ++k) best = std::max(best, ref_speedup(c, b, k, alpha));
  return best;
}
// A plan's speed-up, judged by the tests' own formula.
inline double ref_plan_speedup(const CostCurve& c, int b, const std::vector<DrafterProfile>& d,
                               const SpeculationPlan& plan) {
  return plan.k == 0 ? 1.0
                     : ref_speedup(c, b, plan.k, d.at(static_cast<size_t>(plan.drafter)).alpha);
}

// The measured CpuLlama cost curve (data/cost_curves/README.md), or a SKIP saying why it is
// missing, naming every path it looked for. $SPECLAB_COST_CURVE overrides the path (to try a
// curve measured on your machine); otherwise the 2-thread wall-clock curve is preferred when one
// has been committed, else the 1-thread CPU-time curve is used.
inline CostCurve measured_curve_or_skip() {
  std::vector<std::string> candidates;
  const char* env = std::getenv("SPECLAB_COST_CURVE");
  const bool from_env = env && *env;
  if (from_env) {
    candidates = {env};
  } else {
    const std::string dir = std::string(SPECLAB_DATA_DIR) + "/cost_curves/";
    candidates = {dir + "cpullama_2threads.csv", dir + "cpullama_1thread_cputime.csv"};
  }
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) {
      return CostCurve::load_csv(path);  // a malformed file fails the test, it does not skip
    }
  }
  std::string looked_for;
  for (const std::string& path : candidates) {
    looked_for += (looked_for.empty() ? "" : ", then ") + path;
  }
  if (from_env) looked_for += " ($SPECLAB_COST_CURVE)";
  speclab::testing::skip("no measured CpuLlama cost curve: looked for " + looked_for +
                         "; measure one with build/bin/speclab_bench_cost_curve --target "
                         "cpullama (see data/cost_curves/README.md)");
}

}  // namespace lab06
