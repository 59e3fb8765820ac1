#pragma once
// `--drafter auto`: a policy that decides, round by round, whether to speculate and how far.
//
// Speculating k tokens pays when the tokens a round is expected to emit,
//     E(k) = 1 + a_1 + a_1 a_2 + ... + a_1 ... a_k       (a_i: chance draft i is kept, given
//                                                          that drafts 1..i-1 were kept)
// grow faster than the cost of the wider verify pass, t(k+1), against one plain step t(1) that
// emits one token. The policy measures both sides while it runs:
//   - acceptance: every round it asks the inner drafter for a full proposal, sends only the
//     prefix it chooses (possibly nothing), and later scores the WHOLE proposal against the
//     tokens the target actually produced. A draft token is kept exactly when it equals the
//     target's token there, so this is the acceptance the policy would have seen had it sent
//     everything: it learns a_i at every depth, also while it sends few drafts or none, without
//     paying for a verify pass.
//   - cost: the wall time of each round (from one observe() to the next, so drafting, the
//     verify pass and the loop's own overhead all count), as t(1) from plain rounds and one
//     pooled slope, t(w) / t(1) = 1 + s (w - 1), from the wider ones. A sample far above the
//     current estimate (another process took the CPU) is clipped, so one spike cannot switch
//     speculation off. Before anything is timed a prior slope stands in.
// Each round it picks the k in 0..k_max that maximizes E(k) / t(k+1), and speculates only when
// that beats plain decoding, 1 / t(1), by `margin`. The arithmetic is lab 06's (economics.h):
// E(k) is expected_tokens_per_run and the choice is choose_k on the measured cost curve, so with
// LAB_IMPL=starter your own lab 06 steers `--drafter auto`. On text that copying cannot guess the
// proposals fail, a_i falls, and the policy settles on plain decoding (k = 0).
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mini_engine/spec/drafter.h"

namespace speclab::cli {

struct AutoPolicyConfig {
  double margin = 1.05;            // speculate only when expected tokens/s >= margin x plain
  double prior_acceptance = 0.5;   // a_i before any evidence
  double prior_weight = 1.0;       // how many rounds of evidence the prior is worth
  double prior_cost_slope = 0.15;  // t(w)/t(1) = 1 + slope (w - 1) before any wide pass is timed
  double forget = 0.97;            // per-update decay of old evidence, so the policy adapts
  std::function<double()> clock;   // now, in seconds; empty = std::chrono::steady_clock (a test
                                   // may pass its own to set round costs exactly)
  int refresh_rounds = 64;         // at most this many speculating rounds in a row before one
                                   // plain round re-times t(1) (8 while t(1) was never timed)
};

// Wraps `inner` (any drafter) with the policy. The inner drafter sees every begin() and
// observe(), so its own state stays complete whether or not its drafts are used.
// AutoDrafter checks no token ids itself. begin(), propose() and observe() call the inner drafter
// before they change anything of the policy, so a call the inner drafter refuses (a negative id:
// std::invalid_argument, see Drafter) passes the refusal on and leaves the policy as it was: its
// evidence, its cost model, its round counts and the open round, whose cost is counted when an
// accepted observe() closes it.
class AutoDrafter final : public Drafter {
 public:
  // Throws std::invalid_argument when inner is null or a config field is out of range.
  explicit AutoDrafter(std::unique_ptr<Drafter> inner, AutoPolicyConfig config = {});

  std::string name() const override;
  // Starts a request: acceptance evidence is reset (the text may be different), the cost
  // model is kept (the hardware is not).
  void begin(std::span<const Token> prompt) override;
  std::vector<Token> propose(std::span<const Token> context, int k) override;
  void observe(std::span<const Token> context, const RoundRecord& round) override;

  // The policy's choice for a proposal of up to `limit` drafts: 0 = do not speculate (lab 06's
  // choose_k).
  int choose_k(int limit) const;
  // E(k) under the current acceptance estimates (lab 06's expected_tokens_per_run).
  double expected_tokens(int k) const;
  // Estimated time of a round whose verify pass covers `width` tokens, relative to a plain
  // round (width 1).
  double relative_cost(int width) const;
  // The current estimate of a_i (1-based position i).
  double acceptance(int i) const;
  // a_1 .. a_k.
  std::vector<double> alpha(int k) const;

  // Rounds since begin() that speculated / that did not (for reports and tests).
  long speculated_rounds() const { return speculated_; }
  long plain_rounds() const { return plain_; }

 private:
  // A proposal waiting to be scored against the text: made at sequence position `at`.
  struct Pending {
    std::vector<Token> tokens;
    std::size_t at = 0;
  };
  void learn_acceptance(int offered, int kept);
  void learn_cost(int width, double seconds);
  double now() const;

  std::unique_ptr<Drafter> inner_;
  AutoPolicyConfig config_;
  // Acceptance evidence per 1-based position (index i-1), exponentially forgotten: proposals
  // that reached position i (all drafts before it were right) and those right at i too.
  std::vector<double> reached_;
  std::vector<double> kept_;
  std::vector<Pending> pending_;  // oldest first; at most kMaxPending
  // Cost model: t(1) in seconds and the slope s of t(w) / t(1); < 0 = not measured yet.
  double t1_ = -1.0;
  double slope_ = -1.0;
  double round_start_ = 0.0;  // when the current round began (clock seconds)
  bool timing_ = false;       // round_start_ is valid
  long speculated_ = 0;
  long plain_ = 0;
  long rounds_since_plain_ = 0;  // t(1) is re-measured now and then, so it never goes stale
};

}  // namespace speclab::cli
