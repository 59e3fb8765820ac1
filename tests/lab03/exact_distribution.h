#pragma once
// Lab 03 test helpers: exact distributions of the first tokens on the ToyTarget, and the
// goodness-of-fit statistics the statistical tests use. Independent of the code under test.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mini_engine/core/logits.h"
#include "mini_engine/sampling/sampling.h"
#include "mini_engine/spec/drafter.h"
#include "mini_engine/targets/toy_target.h"

namespace speclab::testing {

using Seq = std::vector<Token>;
using Dist = std::map<Seq, double>;  // first-M-token sequence -> probability

// The target's next-token probabilities after `context` at `temperature` (> 0): (token, p) for
// every token with p > 0.
inline std::vector<std::pair<Token, double>> next_probs(const ToyTarget& t,
                                                        std::span<const Token> context,
                                                        double temperature) {
  const std::vector<double> p = softmax(t.logits_after(context), temperature);
  std::vector<std::pair<Token, double>> out;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] > 0.0) out.emplace_back(static_cast<Token>(i), p[i]);
  }
  return out;
}

// Plain (ancestral) sampling: P(x1..xM) = prod_i p(x_i | prompt x_<i).
inline Dist plain_distribution(const ToyTarget& t, const Seq& prompt, int m, double temperature) {
  Dist out;
  std::function<void(Seq&, double)> walk = [&](Seq& text, double prob) {
    if (static_cast<int>(text.size() - prompt.size()) == m) {
      out[Seq(text.begin() + static_cast<std::ptrdiff_t>(prompt.size()), text.end())] += prob;
      return;
    }
    for (auto [x, p] : next_probs(t, text, temperature)) {
      text.push_back(x);
      walk(text, prob * p);
      text.pop_back();
    }
  };
  Seq text = prompt;
  walk(text, 1.0);
  return out;
}

// Speculative decoding with a drafter whose proposals are a pure function of the context, exactly
// as run_speculative schedules it (k capped at remaining - 1), with one of two verify rules:
//   fresh_after_mismatch == false: the draw x ~ p is compared with the draft and emitted on a
//       mismatch (P(emit x != d) = p(x), P(accept d) = p(d));
//   fresh_after_mismatch == true: the NASD pseudo-code's rule -- on a mismatch (probability
//       1 - p(d)) a fresh y ~ p is emitted, which may be d itself.
// Returns the distribution of the first m emitted tokens.
using ProposeFn = std::function<Seq(const Seq& context, int k)>;
inline Dist speculative_distribution(const ToyTarget& t, const Seq& prompt, int m, int k,
                                     double temperature, const ProposeFn& propose,
                                     bool fresh_after_mismatch) {
  Dist out;
  const auto emitted = [&](const Seq& text) {
    return static_cast<int>(text.size() - prompt.size());
  };
  const auto finish = [&](const Seq& text, double prob) {
    out[Seq(text.begin() + static_cast<std::ptrdiff_t>(prompt.size()),
            text.begin() + static_cast<std::ptrdiff_t>(prompt.size()) + m)] += prob;
  };
  std::function<void(Seq&, double)> round = [&](Seq& text, double prob) {
    if (emitted(text) >= m) {
      finish(text, prob);
      return;
    }
    const int kk = std::min(k, m - emitted(text) - 1);
    const Seq drafts = kk > 0 ? propose(text, kk) : Seq{};
    // Walk the drafts: accept while the draw matches.
    std::function<void(Seq&, std::size_t, double)> step = [&](Seq& cur, std::size_t i, double pr) {
      const auto probs = next_probs(t, cur, temperature);
      if (i == drafts.size()) {  // bonus (or plain step when there are no drafts)
        for (auto [x, p] : probs) {
          cur.push_back(x);
          round(cur, pr * p);
          cur.pop_back();
        }
        return;
      }
      const Token d = drafts[i];
      double p_d = 0.0;
      for (auto [x, p] : probs) p_d += x == d ? p : 0.0;
      if (p_d > 0.0) {  // accepted
        cur.push_back(d);
        step(cur, i + 1, pr * p_d);
        cur.pop_back();
      }
      for (auto [x, p] : probs) {  // rejected: what comes out instead
        const double w = fresh_after_mismatch ? (1.0 - p_d) * p : (x == d ? 0.0 : p);
        if (w == 0.0) continue;
        cur.push_back(x);
        round(cur, pr * w);
        cur.pop_back();
      }
    };
    step(text, 0, prob);
  };
  Seq text = prompt;
  round(text, 1.0);
  return out;
}

// Total variation distance: half the L1 distance.
inline double total_variation(const Dist& a, const Dist& b) {
  double sum = 0.0;
  for (const auto& [s, p] : a) {
    const auto it = b.find(s);
    sum += std::abs(p - (it == b.end() ? 0.0 : it->second));
  }
  for (const auto& [s, p] : b) {
    if (!a.contains(s)) sum += p;
  }
  return 0.5 * sum;
}

inline Dist empirical(const std::map<Seq, std::int64_t>& counts, std::int64_t n) {
  Dist d;
  for (const auto& [s, c] : counts) d[s] = static_cast<double>(c) / static_cast<double>(n);
  return d;
}

struct ChiSquare {
  double statistic = 0.0;
  int dof = 0;
  double p_value = 1.0;  // upper tail, Wilson-Hilferty approximation (good to ~1e-3 relative
                         // for dof >= 5, and far more than good enough for a 1e-6 threshold)
};

// Pearson's chi-square of observed counts against `expected` probabilities. Cells with an
// expected count below 5 are pooled into one cell (merged with the smallest other cell if the
// pool is still below 5). An observed sequence with expected probability 0 makes the statistic
// infinite.
inline ChiSquare chi_square(const std::map<Seq, std::int64_t>& observed, const Dist& expected,
                            std::int64_t n) {
  for (const auto& [s, c] : observed) {
    if (c > 0 && !expected.contains(s)) return ChiSquare{INFINITY, 1, 0.0};
  }
  std::vector<std::pair<double, double>> cells;  // (expected count, observed count)
  double pool_e = 0.0, pool_o = 0.0;
  for (const auto& [s, p] : expected) {
    const double e = p * static_cast<double>(n);
    const auto it = observed.find(s);
    const double o = it == observed.end() ? 0.0 : static_cast<double>(it->second);
    if (e < 5.0) {
      pool_e += e;
      pool_o += o;
    } else {
      cells.emplace_back(e, o);
    }
  }
  if (pool_e > 0.0) {
    if (pool_e < 5.0 && !cells.empty()) {
      auto smallest = std::min_element(cells.begin(), cells.end());
      smallest->first += pool_e;
      smallest->second += pool_o;
    } else {
      cells.emplace_back(pool_e, pool_o);
    }
  }
  ChiSquare r;
  for (auto [e, o] : cells) r.statistic += (o - e) * (o - e) / e;
  r.dof = static_cast<int>(cells.size()) - 1;
  if (r.dof < 1) return r;
  const double d = r.dof;
  const double z =
      (std::cbrt(r.statistic / d) - (1.0 - 2.0 / (9.0 * d))) / std::sqrt(2.0 / (9.0 * d));
  r.p_value = 0.5 * std::erfc(z / std::sqrt(2.0));
  return r;
}

// The perfect greedy drafter for a ToyTarget: proposes the target's own argmax chain. A pure
// function of the context, so the exact distributions above apply to it.
inline Seq greedy_chain(const ToyTarget& t, const Seq& context, int k) {
  Seq text = context, out;
  for (int i = 0; i < k; ++i) {
    const Token next = argmax(t.logits_after(text));
    out.push_back(next);
    text.push_back(next);
  }
  return out;
}

class GreedyOracleDrafter final : public Drafter {
 public:
  explicit GreedyOracleDrafter(const ToyTarget& t) : t_(t) {}
  std::string name() const override { return "greedy-oracle"; }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    return greedy_chain(t_, Seq(context.begin(), context.end()), k);
  }

 private:
  const ToyTarget& t_;
};

// Always proposes k copies of one token: mostly wrong, so nearly every round is a correction.
class ConstantDrafter final : public Drafter {
 public:
  explicit ConstantDrafter(Token t) : t_(t) {}
  std::string name() const override { return "constant(" + std::to_string(t_) + ")"; }
  std::vector<Token> propose(std::span<const Token>, int k) override {
    return std::vector<Token>(static_cast<std::size_t>(k), t_);
  }

 private:
  Token t_;
};

}  // namespace speclab::testing
