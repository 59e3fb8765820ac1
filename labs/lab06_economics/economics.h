#pragma once
// Lab 06 -- the economics of speculation: when to speculate, and how far.
// The chapter: book/lab06_economics.md
//
// You implement the five functions declared first, in starter.cpp. Everything after the "glue"
// line is given: it combines your functions into a batch-aware plan, holds the TensorRT-LLM
// AUTO heuristic as the baseline to beat, and sums replays over a run.
//
// Notation. A round drafts k tokens. alpha[i - 1] = α_i is the chance that draft i is accepted
// GIVEN that drafts 1..i-1 were: a conditional rate. T(b, k) is the cost curve (cost_curve.h):
// the seconds of one verify step of b sequences with k drafts each.
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini_engine/core/logits.h"
#include "mini_engine/core/token.h"
#include "mini_engine/spec/cost_curve.h"
#include "mini_engine/spec/stats.h"

namespace speclab {

// --8<-- [start:expected_tokens_per_run]
// The expected tokens one round emits with k drafts:
//   E[tokens per run](k) = 1 + sum_{i=1..k} prod_{j=1..i} α_j
// (the target's own token is always emitted; draft i counts only if drafts 1..i all survive).
// Sums over alpha[0..k) only, but checks every rate. k = 0 gives 1.
// Throws std::invalid_argument when k < 0, k > alpha.size(), or any alpha is outside [0, 1]
// (or NaN), even a rate k does not use, and even at k = 0.
double expected_tokens_per_run(std::span<const double> alpha, int k);
// --8<-- [end:expected_tokens_per_run]

// --8<-- [start:acceptance_profile]
// The conditional acceptance rates α_1..α_k of a run, from its acceptance-length histogram
// (stats.accept_length_hist[a] = rounds that accepted exactly a drafts):
//   α_i = (rounds that accepted >= i drafts) / (rounds that accepted >= i - 1 drafts)
// and 0 where no round accepted i - 1 drafts. A round that proposed fewer drafts than k counts as
// accepting no more than it proposed: the histogram already records it so. With these rates,
// expected_tokens_per_run(profile, k) equals the run's measured tokens per run when the run used
// k drafts per round.
// Reads only the histogram: all rounds are the sum of its entries (stats.target_runs is not used).
// Returns k values. Throws std::invalid_argument when k < 0 or the histogram holds no round.
std::vector<double> acceptance_profile(const SpecStats& stats, int k);
// --8<-- [end:acceptance_profile]

// --8<-- [start:expected_speedup]
// The expected speed-up of speculating with k drafts at batch size b, against plain decoding of
// the same batch: tokens per second with speculation over tokens per second without,
//   speedup(b, k) = E[tokens per run](k) * T(b, 0) / T(b, k).
// Drafting cost is not modelled (it is microseconds for the n-gram drafters of this course; the
// chapter says when that stops being true). k = 0 gives exactly 1.
// Throws std::invalid_argument as expected_tokens_per_run does, and std::out_of_range when
// `curve` has no T(b, k) (b outside its batch sizes, k > curve.max_k()).
double expected_speedup(const CostCurve& curve, int batch, int k, std::span<const double> alpha);
// --8<-- [end:expected_speedup]

// --8<-- [start:choose_k]
// The batch-aware policy: the k in 0..K, K = min(max_k, alpha.size(), curve.max_k()), with the
// largest expected_speedup at batch size `batch`. 0 means "do not speculate": it is chosen
// unless some k > 0 is strictly faster. Among equally fast k the smallest wins (a longer draft
// that gains nothing still costs compute and memory).
// Throws std::invalid_argument when max_k < 0 (and as expected_speedup does).
int choose_k(const CostCurve& curve, int batch, std::span<const double> alpha, int max_k);
// --8<-- [end:choose_k]

// --8<-- [start:replay_reach]
// Offline replay of one verify round under sampled verification: for drafts d_1..d_n and the
// n + 1 logits rows the target computed for them, returns reach[i - 1] = prod_{j=1..i} p_j, the
// chance that drafts 1..i would all be accepted. p_j is the target's probability of d_j in the
// row the verifier compared d_j with, row j - 1 (rows count from 0):
//   p_j = softmax(logits.row(j - 1) / temperature)[d_j].
// The last row, the bonus token's, is not used. (A deterministic drafter's draft survives sampled
// verification with the target's probability of it.) temperature == 0 means greedy: p_j is 1
// when d_j is the row's argmax and 0 otherwise.
// The expected tokens of the round are 1 + sum(reach).
// Throws std::invalid_argument when logits.rows() != drafts.size() + 1, temperature is negative
// or not finite (NaN, infinity), or any draft id is outside [0, logits.vocab()), also one after
// a draft that cannot be accepted.
std::vector<double> replay_reach(std::span<const Token> drafts, const Logits& logits,
                                 double temperature);
// --8<-- [end:replay_reach]

// ---- glue: given, built on the functions above (not part of the exercise) ----

// α_i = a for every i: the geometric special case, E = (1 - a^(k+1)) / (1 - a) for a < 1, and
// k + 1 at a = 1 (the formula's 0/0; expected_tokens_per_run needs no special case).
inline std::vector<double> geometric_profile(double a, int k) {
  return std::vector<double>(static_cast<size_t>(k < 0 ? 0 : k), a);
}

// A drafter as the policy sees it: a name and its measured conditional acceptance rates.
struct DrafterProfile {
  std::string name;
  std::vector<double> alpha;
};

// What to do at one batch size: which drafter (index into the profiles; -1 = none) and k.
struct SpeculationPlan {
  int drafter = -1;
  int k = 0;
  double speedup = 1.0;  // expected, from the cost curve
};

// The best (drafter, k) at batch size `batch`: choose_k for each drafter, then the fastest;
// ties go to the earlier drafter, and no drafter (k = 0) wins unless one is strictly faster.
inline SpeculationPlan plan_speculation(const CostCurve& curve, int batch,
                                        std::span<const DrafterProfile> drafters, int max_k) {
  SpeculationPlan best;
  for (size_t d = 0; d < drafters.size(); ++d) {
    const int k = choose_k(curve, batch, drafters[d].alpha, max_k);
    const double s = expected_speedup(curve, batch, k, drafters[d].alpha);
    if (k > 0 && s > best.speedup) best = {static_cast<int>(d), k, s};
  }
  return best;
}

// The baseline: TensorRT-LLM's AUTO speculative mode, as its source sets it up. It picks an
// n-gram drafter sized by the engine's maximum batch size -- max_draft_len (k) 5 and
// max_matching_ngram_size (n) 3 up to batch 4, k 3 and n 5 above -- and turns speculation off
// while more than 32 requests are active (max_concurrency 32). Here batch is both.
struct AutoChoice {
  int k = 0;  // 0: speculation off
  int n = 0;  // the prompt-lookup n-gram size; 0 when off
};
inline AutoChoice trtllm_auto(int batch) {
  if (batch > 32) return {0, 0};
  if (batch <= 4) return {5, 3};
  return {3, 5};
}

// Sums replay_reach over the rounds of a run (feed it from DecodeConfig::on_round).
class ReplayAccumulator {
 public:
  explicit ReplayAccumulator(double temperature) : temperature_(temperature) {}
  void add(std::span<const Token> drafts, const Logits& logits) {
    const std::vector<double> reach = replay_reach(drafts, logits, temperature_);
    if (reach_sum_.size() < reach.size()) reach_sum_.resize(reach.size(), 0.0);
    for (size_t i = 0; i < reach.size(); ++i) reach_sum_[i] += reach[i];
    ++rounds_;
  }
  long long rounds() const { return rounds_; }
  // The replayed mean acceptance length: 1 + (sum of all reach) / rounds.
  // Throws std::invalid_argument before any round (there is no run to replay).
  double expected_tokens_per_run() const {
    require_rounds("expected_tokens_per_run");
    double s = 0.0;
    for (double r : reach_sum_) s += r;
    return 1.0 + s / static_cast<double>(rounds_);
  }
  // Conditional rates α_1..α_k from expected counts, as acceptance_profile computes them from
  // counts. Throws std::invalid_argument, as acceptance_profile does, when k < 0 or before any
  // round.
  std::vector<double> profile(int k) const {
    if (k < 0) {
      throw std::invalid_argument("ReplayAccumulator::profile: k must be >= 0, got " +
                                  std::to_string(k));
    }
    require_rounds("profile");
    std::vector<double> alpha;
    double prev = static_cast<double>(rounds_);
    for (int i = 0; i < k; ++i) {
      const double cur = static_cast<size_t>(i) < reach_sum_.size() ? reach_sum_[i] : 0.0;
      alpha.push_back(prev > 0.0 ? cur / prev : 0.0);
      prev = cur;
    }
    return alpha;
  }

 private:
  void require_rounds(const char* what) const {
    if (rounds_ == 0) {
      throw std::invalid_argument(std::string("ReplayAccumulator::") + what +
                                  ": no round was added yet (feed add() from "
                                  "DecodeConfig::on_round)");
    }
  }
  double temperature_;
  std::vector<double> reach_sum_;  // [i]: sum over rounds of reach[i]
  long long rounds_ = 0;
};

}  // namespace speclab
