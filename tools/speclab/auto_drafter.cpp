#include "auto_drafter.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "economics.h"
#include "mini_engine/spec/cost_curve.h"

namespace speclab::cli {
namespace {
// Speculating rounds after which a never-timed t(1) is measured with one plain round.
constexpr long kFirstPlainRound = 8;
// Proposals scored at once; more would mean a drafter proposing far ahead of the text.
constexpr std::size_t kMaxPending = 16;
// A timing sample counts at most this multiple of the current estimate.
constexpr double kClip = 3.0;
// Weight of a new timing sample in the running averages.
constexpr double kCostRate = 0.2;
}  // namespace

AutoDrafter::AutoDrafter(std::unique_ptr<Drafter> inner, AutoPolicyConfig config)
    : inner_(std::move(inner)), config_(std::move(config)) {
  if (!inner_) throw std::invalid_argument("AutoDrafter: no inner drafter given");
  if (!(config_.margin > 0.0)) throw std::invalid_argument("AutoDrafter: margin must be > 0");
  if (!(config_.prior_acceptance >= 0.0 && config_.prior_acceptance <= 1.0)) {
    throw std::invalid_argument("AutoDrafter: prior_acceptance must be in [0, 1]");
  }
  if (!(config_.prior_weight > 0.0)) {
    throw std::invalid_argument("AutoDrafter: prior_weight must be > 0");
  }
  if (!(config_.prior_cost_slope >= 0.0)) {
    throw std::invalid_argument("AutoDrafter: prior_cost_slope must be >= 0");
  }
  if (!(config_.forget > 0.0 && config_.forget <= 1.0)) {
    throw std::invalid_argument("AutoDrafter: forget must be in (0, 1]");
  }
  if (config_.refresh_rounds < 1) {
    throw std::invalid_argument("AutoDrafter: refresh_rounds must be >= 1");
  }
}

double AutoDrafter::now() const {
  if (config_.clock) return config_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string AutoDrafter::name() const { return "auto(" + inner_->name() + ")"; }

void AutoDrafter::begin(std::span<const Token> prompt) {
  // The inner drafter first: when it refuses the prompt, the generation running goes on with
  // the policy as it was.
  inner_->begin(prompt);
  reached_.clear();
  kept_.clear();
  pending_.clear();
  speculated_ = 0;
  plain_ = 0;
  round_start_ = now();
  timing_ = true;
}

double AutoDrafter::acceptance(int i) const {
  const auto idx = static_cast<size_t>(i - 1);
  const double reached = idx < reached_.size() ? reached_[idx] : 0.0;
  const double kept = idx < kept_.size() ? kept_[idx] : 0.0;
  return (kept + config_.prior_acceptance * config_.prior_weight) /
         (reached + config_.prior_weight);
}

std::vector<double> AutoDrafter::alpha(int k) const {
  std::vector<double> a;
  for (int i = 1; i <= k; ++i) a.push_back(acceptance(i));
  return a;
}

double AutoDrafter::expected_tokens(int k) const {
  return expected_tokens_per_run(alpha(k), k);  // lab 06
}

double AutoDrafter::relative_cost(int width) const {
  if (width <= 1) return 1.0;
  const double slope = slope_ >= 0.0 ? slope_ : config_.prior_cost_slope;
  return 1.0 + slope * (width - 1);
}

int AutoDrafter::choose_k(int limit) const {
  if (limit < 1) return 0;
  // The measured costs as lab 06's cost curve at batch size 1, T(1, k) = t(k + 1) / t(1), with
  // the margin charged to every k > 0: speculation must win by that much to be chosen.
  const CostCurve curve = CostCurve::from_function(
      {1}, limit,
      [this](int, int k) { return k == 0 ? 1.0 : relative_cost(k + 1) * config_.margin; },
      "auto policy (measured)");
  return speclab::choose_k(curve, 1, alpha(limit), limit);  // lab 06
}

std::vector<Token> AutoDrafter::propose(std::span<const Token> context, int k) {
  // Nothing of the policy changes before the inner drafter has answered (it may refuse).
  std::vector<Token> drafts = inner_->propose(context, k);
  if (drafts.empty()) return drafts;
  // Re-time t(1) now and then; early on, when it was never timed, after a few rounds.
  const long refresh_after = t1_ > 0.0 ? config_.refresh_rounds : kFirstPlainRound;
  const bool refresh = rounds_since_plain_ >= refresh_after;
  if (pending_.size() == kMaxPending) pending_.erase(pending_.begin());
  pending_.push_back({drafts, context.size()});
  const int chosen = refresh ? 0 : choose_k(std::min(k, static_cast<int>(drafts.size())));
  drafts.resize(static_cast<size_t>(chosen));
  return drafts;
}

void AutoDrafter::learn_acceptance(int offered, int kept) {
  const auto need = static_cast<size_t>(offered);
  if (reached_.size() < need) {
    reached_.resize(need, 0.0);
    kept_.resize(need, 0.0);
  }
  // Position i (0-based) was reached when every draft before it was right.
  for (int i = 0; i < offered && i <= kept; ++i) {
    reached_[i] = reached_[i] * config_.forget + 1.0;
    kept_[i] = kept_[i] * config_.forget + (i < kept ? 1.0 : 0.0);
  }
}

void AutoDrafter::learn_cost(int width, double seconds) {
  if (!(seconds > 0.0)) return;
  if (width == 1) {
    t1_ = t1_ > 0.0 ? (1 - kCostRate) * t1_ + kCostRate * std::min(seconds, kClip * t1_) : seconds;
    return;
  }
  if (!(t1_ > 0.0)) return;  // a slope needs t(1)
  const double predicted = t1_ * relative_cost(width);
  const double ratio = std::min(seconds, kClip * predicted) / t1_;
  const double sample = std::clamp((ratio - 1.0) / (width - 1), 0.0, 4.0);
  slope_ = slope_ >= 0.0 ? (1 - kCostRate) * slope_ + kCostRate * sample : sample;
}

void AutoDrafter::observe(std::span<const Token> context, const RoundRecord& round) {
  // The round's cost: everything since the previous round ended (propose, the verify pass, the
  // loop's bookkeeping and the previous observe), not the verify pass alone. The round ends
  // here, so the inner drafter's observe counts in the next one; but it runs before the policy
  // learns anything: when it refuses, the round stays open, its cost not yet counted.
  const double t = now();
  inner_->observe(context, round);
  const int drafted = static_cast<int>(round.drafts.size());
  if (timing_) learn_cost(drafted + 1, t - round_start_);
  round_start_ = t;
  timing_ = true;
  if (drafted > 0) {
    ++speculated_;
    ++rounds_since_plain_;
  } else {
    ++plain_;
    rounds_since_plain_ = 0;
  }
  // Score each proposal once the text has decided it: at its first wrong token, or when every
  // one of its tokens has been matched.
  std::erase_if(pending_, [&](const Pending& p) {
    if (context.size() <= p.at) return false;
    const size_t known = std::min(context.size() - p.at, p.tokens.size());
    size_t matched = 0;
    while (matched < known && context[p.at + matched] == p.tokens[matched]) ++matched;
    if (matched < known || matched == p.tokens.size()) {
      learn_acceptance(static_cast<int>(p.tokens.size()), static_cast<int>(matched));
      return true;
    }
    return false;
  });
}

}  // namespace speclab::cli
