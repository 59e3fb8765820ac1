// Lab 06 reference solution: expected tokens per run, measured acceptance, expected speed-up on a
// cost curve, the batch-aware choice of k, and the offline replay of acceptance.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "economics.h"
#include "mini_engine/sampling/sampling.h"

namespace speclab {

double expected_tokens_per_run(std::span<const double> alpha, int k) {
  if (k < 0 || static_cast<size_t>(k) > alpha.size()) {
    throw std::invalid_argument("expected_tokens_per_run: k must be in [0, " +
                                std::to_string(alpha.size()) + "] (one rate per draft), got " +
                                std::to_string(k));
  }
  for (size_t i = 0; i < alpha.size(); ++i) {
    if (!(alpha[i] >= 0.0 && alpha[i] <= 1.0)) {
      throw std::invalid_argument("expected_tokens_per_run: alpha[" + std::to_string(i) + "] = " +
                                  std::to_string(alpha[i]) + " is not a probability in [0, 1]");
    }
  }
  double expected = 1.0;  // the target's own token: the correction or the bonus
  double reach = 1.0;     // the chance that drafts 1..i are all accepted
  for (int i = 0; i < k; ++i) {
    reach *= alpha[i];
    expected += reach;
  }
  return expected;
}

std::vector<double> acceptance_profile(const SpecStats& stats, int k) {
  if (k < 0) throw std::invalid_argument("acceptance_profile: k must be >= 0");
  const auto& hist = stats.accept_length_hist;
  // tail[i]: rounds that accepted at least i drafts.
  std::vector<double> tail(static_cast<size_t>(k) + 1, 0.0);
  for (size_t a = 0; a < hist.size(); ++a) {
    for (size_t i = 0; i <= std::min(a, static_cast<size_t>(k)); ++i) {
      tail[i] += static_cast<double>(hist[a]);
    }
  }
  if (tail[0] <= 0.0) {
    throw std::invalid_argument("acceptance_profile: the run recorded no rounds");
  }
  std::vector<double> alpha(static_cast<size_t>(k));
  for (int i = 1; i <= k; ++i) {
    alpha[i - 1] = tail[i - 1] > 0.0 ? tail[i] / tail[i - 1] : 0.0;
  }
  return alpha;
}

double expected_speedup(const CostCurve& curve, int batch, int k, std::span<const double> alpha) {
  const double tokens = expected_tokens_per_run(alpha, k);
  // Without speculation the batch emits one token per sequence per T(b, 0); with it, `tokens`
  // per sequence per T(b, k). Both at the same b: batching makes a draft position dearer.
  return tokens * curve.seconds(batch, 0) / curve.seconds(batch, k);
}

int choose_k(const CostCurve& curve, int batch, std::span<const double> alpha, int max_k) {
  if (max_k < 0) throw std::invalid_argument("choose_k: max_k must be >= 0");
  const int top = std::min({max_k, static_cast<int>(alpha.size()), curve.max_k()});
  int best_k = 0;
  // k = 0, plain decoding: the speed-up (1) every k must beat. Asking for it checks the rates and
  // the batch size even when no k > 0 is tried.
  double best = expected_speedup(curve, batch, 0, alpha);
  for (int k = 1; k <= top; ++k) {
    const double s = expected_speedup(curve, batch, k, alpha);
    if (s > best) {
      best = s;
      best_k = k;
    }
  }
  return best_k;
}

std::vector<double> replay_reach(std::span<const Token> drafts, const Logits& logits,
                                 double temperature) {
  if (static_cast<size_t>(logits.rows()) != drafts.size() + 1) {
    throw std::invalid_argument(
        "replay_reach: need drafts.size() + 1 = " + std::to_string(drafts.size() + 1) +
        " logits rows, got " + std::to_string(logits.rows()));
  }
  if (!(temperature >= 0.0) || !std::isfinite(temperature)) {  // NaN fails every comparison
    throw std::invalid_argument("replay_reach: temperature must be finite and >= 0, got " +
                                std::to_string(temperature));
  }
  std::vector<double> reach;
  reach.reserve(drafts.size());
  double all_accepted = 1.0;
  for (size_t i = 0; i < drafts.size(); ++i) {
    const std::span<const float> row = logits.row(static_cast<int>(i));
    const Token d = drafts[i];
    if (d < 0 || d >= logits.vocab()) {
      throw std::invalid_argument("replay_reach: draft id " + std::to_string(d) +
                                  " is outside the vocabulary");
    }
    double p = 0.0;
    if (temperature == 0.0) {
      p = argmax(row) == d ? 1.0 : 0.0;
    } else {
      p = softmax(row, temperature)[static_cast<size_t>(d)];
    }
    all_accepted *= p;
    reach.push_back(all_accepted);
  }
  return reach;
}

}  // namespace speclab
