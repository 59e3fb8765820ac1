// The figures book/lab06_economics.md quotes from the lab 06 reference: the toy roofline's table
// of chosen k, the CPU-like model's, the batched engine's throughputs on the simulated clock, and
// what the policy and AUTO do with the tests' toy prompt-lookup profiles on the measured CpuLlama
// curves (data/cost_curves/; tools/cost_tables checks the figures the chapter quotes from the
// curves alone). Everything runs on the tests' own workloads (tests/lab06/lab06_util.h).
// Checked by tests/book/check_quoted.py (ctest label `book`).
#include <algorithm>
#include <string>
#include <vector>

#include "lab06_util.h"
#include "quote.h"

using namespace speclab;
using speclab::book::fmt;
using speclab::book::quote;

namespace {

constexpr const char* kChapter = "book/lab06_economics.md";

// A throughput as the chapter's batch table shows it: one decimal below 100 tokens/s.
std::string tps(double x) { return x < 100 ? fmt("%.1f", x) : fmt("%.0f", x); }

std::vector<DrafterProfile> prompt_lookup_profiles(bool easy) {
  return {lab06::measure_prompt_lookup(lab06::workload(easy), 3),
          lab06::measure_prompt_lookup(lab06::workload(easy), 5)};
}

double auto_speedup(const CostCurve& c, int b, const std::vector<DrafterProfile>& d) {
  const AutoChoice a = trtllm_auto(b);
  return a.k == 0 ? 1.0 : lab06::ref_speedup(c, b, a.k, d[a.n == 3 ? 0 : 1].alpha);
}

void toy_tables() {
  // "Choosing k": geometric profiles on the toy roofline, every batch size of the table.
  const CostCurve roofline = lab06::curve_of(lab06::roofline_cost(), "roofline");
  for (double a : {0.4, 0.6, 0.8}) {
    const std::vector<double> alpha = geometric_profile(a, 8);
    std::string row = fmt("| %.1f |", a);
    for (int b : {1, 4, 8, 16, 32, 64}) {
      const int k = choose_k(roofline, b, alpha, 8);
      row += k == 0 ? " off |" : fmt(" k=%d, %.2f× |", k, expected_speedup(roofline, b, k, alpha));
    }
    quote(kChapter, fmt("the roofline table's row for alpha %.1f", a), row);
  }
  const CostCurve cpu = lab06::curve_of(lab06::cpu_like_cost(), "cpu-like");
  const std::vector<double> alpha = geometric_profile(0.8, 8);
  const int k1 = choose_k(cpu, 1, alpha, 8);
  int off_from = 0;  // the smallest batch size from which no larger one speculates
  for (int b : lab06::toy_batch_sizes()) {
    if (choose_k(cpu, b, alpha, 8) != 0)
      off_from = 0;
    else if (off_from == 0)
      off_from = b;
  }
  quote(kChapter, "alpha 0.8 on the CPU-like model",
        fmt("even $\\alpha = 0.8$ only earns $k = %d$ at batch 1 (%.2f×), and speculation is off "
            "from batch %d",
            k1, expected_speedup(cpu, 1, k1, alpha), off_from));
}

void batch_table() {
  // "Speculating in a batch": the policy and AUTO on the batched engine.
  struct Row {
    bool easy;
    int b;
  };
  const ToyCostModel cost = lab06::roofline_cost();
  const CostCurve curve = lab06::curve_of(cost, "roofline");
  for (const Row r : {Row{true, 1}, Row{true, 8}, Row{true, 32}, Row{false, 32}}) {
    const ToyTargetConfig cfg = lab06::workload(r.easy);
    const SpeculationPlan plan = plan_speculation(curve, r.b, prompt_lookup_profiles(r.easy), 8);
    const int n = plan.k == 0 ? 0 : (plan.drafter == 0 ? 3 : 5);
    const AutoChoice a = trtllm_auto(r.b);
    const double plain = lab06::decode_batch(cfg, cost, r.b, 0, 0).tokens_per_second;
    const double ours = lab06::decode_batch(cfg, cost, r.b, n, plan.k).tokens_per_second;
    const double theirs = lab06::decode_batch(cfg, cost, r.b, a.n, a.k).tokens_per_second;
    const std::string policy =
        plan.k == 0 ? tps(ours) + " (off)" : fmt("%s (n=%d, k=%d)", tps(ours).c_str(), n, plan.k);
    const std::string row =
        fmt("| %s | %d | %s | %s | %s |", r.easy ? "periodic (easy)" : "markov (hard)", r.b,
            tps(plain).c_str(), policy.c_str(),
            a.k == 0 ? (tps(theirs) + " (off)").c_str()
                     : fmt("%s (k=%d)", tps(theirs).c_str(), a.k).c_str());
    quote(kChapter,
          fmt("the batch table's row for %s text at batch %d", r.easy ? "periodic" : "markov", r.b),
          row);
    if (r.easy && r.b == 32) {
      quote(kChapter, "AUTO and the policy at batch 32 on easy text",
            fmt("On easy text AUTO then decodes %.0f percent *slower* than plain decoding, while "
                "the policy picks $k = %d$ and is %.0f percent faster",
                100 * (1 - theirs / plain), plan.k, 100 * (ours / plain - 1)));
    }
  }
  // "The model is not perfect": the CPU-like model at batch 4 on easy text.
  const ToyCostModel cpu = lab06::cpu_like_cost();
  const ToyTargetConfig cfg = lab06::workload(true);
  const SpeculationPlan plan =
      plan_speculation(lab06::curve_of(cpu, "cpu-like"), 4, prompt_lookup_profiles(true), 8);
  const AutoChoice a = trtllm_auto(4);
  const double ours =
      lab06::decode_batch(cfg, cpu, 4, plan.drafter == 0 ? 3 : 5, plan.k).tokens_per_second;
  const double theirs = lab06::decode_batch(cfg, cpu, 4, a.n, a.k).tokens_per_second;
  quote(kChapter, "the CPU-like model at batch 4 on easy text: the policy against AUTO",
        fmt("the policy predicts %s and gets %.1f tokens/s, while AUTO gets %.1f",
            plan.k == 0 ? "that speculation does not pay" : "speculation pays", ours, theirs));
}

void measured_curves() {
  const std::string dir = std::string(SPECLAB_DATA_DIR) + "/cost_curves/";
  const std::vector<DrafterProfile> easy = prompt_lookup_profiles(true);
  const std::vector<DrafterProfile> hard = prompt_lookup_profiles(false);
  const std::vector<int> batches = {1, 4, 8, 32};

  // The 1-thread curve: AUTO against the policy at every batch size, easy and hard text.
  const CostCurve one = CostCurve::load_csv(dir + "cpullama_1thread_cputime.csv");
  double lo = 1e9, hi = 0;
  bool declines = true;
  for (const auto* d : {&easy, &hard}) {
    for (int b : batches) {
      lo = std::min(lo, auto_speedup(one, b, *d));
      hi = std::max(hi, auto_speedup(one, b, *d));
      declines = declines && plan_speculation(one, b, *d, one.max_k()).k == 0;
    }
  }
  quote(kChapter, "AUTO and the policy on the 1-thread curve",
        fmt("at %.2f–%.2f× plain speed (by the model); on this curve the policy %s", lo, hi,
            declines ? "declines at every batch size" : "speculates at some batch size"));

  // The 2-thread curve: the copy profile, then the prompt-lookup profiles.
  const CostCurve two = CostCurve::load_csv(dir + "cpullama_2threads.csv");
  const std::vector<double> copy = {0.5, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9};
  const int kc = choose_k(two, 1, copy, two.max_k());
  bool copy_off = true;
  for (int b : {4, 8, 32}) copy_off = copy_off && choose_k(two, b, copy, two.max_k()) == 0;
  quote(kChapter, "the copy profile on the 2-thread curve",
        fmt("($\\alpha_1 = 0.5$, then 0.9) gets $k = %d$ at batch 1 (%.2f×) and %s", kc,
            lab06::ref_speedup(two, 1, kc, copy),
            copy_off ? "0 from batch 4 on" : "more than 0 at some batch from 4 on"));
  const SpeculationPlan pe = plan_speculation(two, 1, easy, two.max_k());
  const SpeculationPlan ph = plan_speculation(two, 1, hard, two.max_k());
  const double se = lab06::ref_plan_speedup(two, 1, easy, pe);
  const double sh = lab06::ref_plan_speedup(two, 1, hard, ph);
  lo = 1e9, hi = 0;
  declines = true;
  for (const auto* d : {&easy, &hard}) {
    for (int b : {4, 8, 32}) {
      lo = std::min(lo, auto_speedup(two, b, *d));
      hi = std::max(hi, auto_speedup(two, b, *d));
      declines = declines && plan_speculation(two, b, *d, two.max_k()).k == 0;
    }
  }
  const double ae = auto_speedup(two, 1, easy);
  quote(kChapter, "the prompt-lookup profiles on the 2-thread curve",
        fmt("at batch 1 the policy %s AUTO on easy text ($k = %d$, %.2f×) and beats it on hard "
            "text ($k = %d$, %.2f× against AUTO's %.2f×); from batch 4 on it %s, where AUTO "
            "would run at %.2f–%.2f× plain speed",
            se - ae < 0.005 ? "matches" : "beats", pe.k, se, ph.k, sh, auto_speedup(two, 1, hard),
            declines ? "declines" : "speculates at some batch size", lo, hi));
}

}  // namespace

int main() {
  toy_tables();
  batch_table();
  measured_curves();
  return 0;
}
