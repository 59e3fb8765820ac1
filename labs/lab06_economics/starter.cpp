// Lab 06 -- your file. Implement the five functions; their contracts are in economics.h.
// Run the tests:   LAB_IMPL=starter ctest --test-dir build -L lab06 --output-on-failure
#include "economics.h"
#include "mini_engine/sampling/sampling.h"  // softmax(), for replay_reach (argmax() is in logits.h)

namespace speclab {

// --8<-- [start:expected_tokens_per_run]
double expected_tokens_per_run(std::span<const double> alpha, int k) {
  // TODO(lab06): 1 + sum over i = 1..k of (alpha_1 * ... * alpha_i). Keep a running product:
  // draft i counts only if drafts 1..i all survive -- and draft 1 is not free.
  (void)alpha, (void)k;
  todo("lab06", "expected_tokens_per_run",
       "book/lab06_economics.md, section 'Tokens per run from acceptance rates'");
}
// --8<-- [end:expected_tokens_per_run]

// --8<-- [start:acceptance_profile]
std::vector<double> acceptance_profile(const SpecStats& stats, int k) {
  // TODO(lab06): from stats.accept_length_hist, count the rounds that accepted at least i
  // drafts, and divide by those that accepted at least i - 1: a conditional rate, not a share
  // of all rounds.
  (void)stats, (void)k;
  todo("lab06", "acceptance_profile", "book/lab06_economics.md, section 'Measuring acceptance'");
}
// --8<-- [end:acceptance_profile]

// --8<-- [start:expected_speedup]
double expected_speedup(const CostCurve& curve, int batch, int k, std::span<const double> alpha) {
  // TODO(lab06): tokens per run with k drafts, times T(b, 0) / T(b, k) -- both at THIS batch
  // size, since a draft position costs more the larger the batch.
  (void)curve, (void)batch, (void)k, (void)alpha;
  todo("lab06", "expected_speedup", "book/lab06_economics.md, section 'Expected speed-up'");
}
// --8<-- [end:expected_speedup]

// --8<-- [start:choose_k]
int choose_k(const CostCurve& curve, int batch, std::span<const double> alpha, int max_k) {
  // TODO(lab06): try every k from 0 up to min(max_k, alpha.size(), curve.max_k()) and keep the
  // fastest. k = 0 (speed-up exactly 1) is a candidate too, and ties go to the smaller k.
  (void)curve, (void)batch, (void)alpha, (void)max_k;
  todo("lab06", "choose_k", "book/lab06_economics.md, section 'Choosing k'");
}
// --8<-- [end:choose_k]

// --8<-- [start:replay_reach]
std::vector<double> replay_reach(std::span<const Token> drafts, const Logits& logits,
                                 double temperature) {
  // TODO(lab06): p_j = softmax(row j-1 / temperature)[d_j] (or 1/0 by argmax when greedy);
  // reach[i-1] is the running product p_1 * ... * p_i.
  (void)drafts, (void)logits, (void)temperature;
  todo("lab06", "replay_reach",
       "book/lab06_economics.md, section 'Replaying acceptance from probabilities'");
}
// --8<-- [end:replay_reach]

}  // namespace speclab
