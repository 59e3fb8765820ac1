#include "mini_engine/spec/batch_loop.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace speclab {
namespace {

std::string req_name(size_t i) { return "request " + std::to_string(i); }

void check_request(const BatchTarget& target, const BatchRequest& r, size_t i) {
  const std::string who = req_name(i);
  if (r.prompt.empty()) throw std::invalid_argument(who + ": the prompt is empty");
  const DecodeConfig& c = r.config;
  if (c.max_new_tokens < 1) {
    throw std::invalid_argument(who + ": max_new_tokens must be >= 1, got " +
                                std::to_string(c.max_new_tokens));
  }
  if (c.k < 0 || c.k > kMaxDrafts) {
    throw std::invalid_argument(who + ": k (drafts per round) must be in [0, 64], got " +
                                std::to_string(c.k));
  }
  if (!(c.sampling.temperature >= 0.0) || !std::isfinite(c.sampling.temperature)) {
    throw std::invalid_argument(who + ": temperature must be finite and >= 0, got " +
                                std::to_string(c.sampling.temperature));
  }
  for (Token t : r.prompt) {
    if (t < 0 || t >= target.vocab_size()) {
      throw std::invalid_argument(who + ": prompt token id " + std::to_string(t) +
                                  " is outside the vocabulary [0, " +
                                  std::to_string(target.vocab_size()) + ")");
    }
  }
  if (r.prompt.size() > static_cast<size_t>(target.max_length())) {
    throw ContextOverflow(who + ": the prompt has " + std::to_string(r.prompt.size()) +
                          " tokens but " + target.name() + " holds at most " +
                          std::to_string(target.max_length()));
  }
}

bool is_stop(const DecodeConfig& c, Token t) {
  return std::find(c.stop_tokens.begin(), c.stop_tokens.end(), t) != c.stop_tokens.end();
}

// Removes the loop's sequences from the target however the loop ends.
struct SequenceGuard {
  BatchTarget& target;
  std::vector<int> ids;
  ~SequenceGuard() {
    for (int id : ids) {
      try {
        target.remove_sequence(id);
      } catch (...) {  // already gone: nothing to clean up
      }
    }
  }
};

// A request's running state.
struct Live {
  int seq = -1;
  std::vector<Token> context;  // prompt + emitted
};

}  // namespace

double BatchStats::tokens_per_second() const {
  return total_seconds > 0.0 ? static_cast<double>(emitted) / total_seconds : 0.0;
}

BatchGenerationResult run_speculative_batch(BatchTarget& target,
                                            std::span<const BatchRequest> requests,
                                            const VerifyRule& verify,
                                            const BatchDecodeConfig& config) {
  if (!verify) throw std::invalid_argument("run_speculative_batch: no verify rule given");
  for (size_t i = 0; i < requests.size(); ++i) check_request(target, requests[i], i);
  const WallClock wall;
  const Clock& clock = config.clock ? *config.clock : static_cast<const Clock&>(wall);

  BatchGenerationResult out;
  out.requests.resize(requests.size());
  if (requests.empty()) return out;
  const double t_start = clock.now();

  SequenceGuard guard{target, {}};
  std::vector<Live> live(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    live[i].seq = target.add_sequence();
    guard.ids.push_back(live[i].seq);
    live[i].context = requests[i].prompt;
    out.requests[i].stats.prompt_tokens = static_cast<std::int64_t>(requests[i].prompt.size());
  }

  // One batched prefill: every prompt but its last token, which the first step feeds.
  {
    std::vector<BatchItem> items;
    for (size_t i = 0; i < requests.size(); ++i) {
      const auto& p = requests[i].prompt;
      if (p.size() > 1)
        items.push_back({live[i].seq, std::span<const Token>(p).first(p.size() - 1)});
    }
    const double t0 = clock.now();
    if (!items.empty()) target.append_batch(items);  // no one reads the prompt's logits
    const double dt = clock.now() - t0;
    out.stats.prefill_seconds = dt;
    for (auto& r : out.requests) r.stats.prefill_seconds = dt;
  }
  // Each request's begin() is draft time; its first round's record carries it too (round.h).
  std::vector<double> setup_seconds(requests.size(), 0.0);
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].drafter == nullptr) continue;
    const double t0 = clock.now();
    requests[i].drafter->begin(requests[i].prompt);
    const double dt = clock.now() - t0;
    out.requests[i].stats.draft_seconds += dt;
    out.stats.draft_seconds += dt;
    setup_seconds[i] = dt;
  }

  std::vector<size_t> active(requests.size());
  for (size_t i = 0; i < active.size(); ++i) active[i] = i;
  std::vector<RoundRecord> rounds;
  std::vector<std::vector<Token>> fed;
  for (int step = 0; !active.empty(); ++step) {
    const int n_active = static_cast<int>(active.size());
    int k_step = -1;
    if (config.k_for_batch) {
      k_step = config.k_for_batch(n_active);
      if (k_step < 0 || k_step > kMaxDrafts) {
        throw std::invalid_argument("k_for_batch(" + std::to_string(n_active) + ") returned " +
                                    std::to_string(k_step) + ", outside [0, 64]");
      }
    }

    // Propose.
    rounds.assign(active.size(), RoundRecord{});
    fed.assign(active.size(), {});
    std::vector<BatchItem> items;
    items.reserve(active.size());
    BatchStepRecord rec;
    rec.step = step;
    rec.active = n_active;
    for (size_t a = 0; a < active.size(); ++a) {
      const size_t i = active[a];
      const BatchRequest& req = requests[i];
      Live& L = live[i];
      GenerationResult& res = out.requests[i];
      const int remaining = req.config.max_new_tokens - static_cast<int>(res.tokens.size());
      // >= 0: a request whose next [last] would not fit left the batch after its last round.
      const int room = target.max_length() - static_cast<int>(L.context.size());
      const int k_base = k_step >= 0 ? k_step : req.config.k;
      const int k = req.drafter ? std::min({k_base, remaining - 1, room}) : 0;
      RoundRecord& round = rounds[a];
      round.position = static_cast<std::int64_t>(L.context.size());
      const double t0 = clock.now();
      if (k > 0) round.drafts = req.drafter->propose(L.context, k);
      round.draft_seconds = clock.now() - t0;
      if (static_cast<int>(round.drafts.size()) > std::max(k, 0)) {
        throw std::logic_error(req_name(i) + ": drafter '" + req.drafter->name() + "' proposed " +
                               std::to_string(round.drafts.size()) +
                               " tokens but this round's draft budget k is " + std::to_string(k));
      }
      for (Token t : round.drafts) {
        if (t < 0 || t >= target.vocab_size()) {
          throw std::logic_error(req_name(i) + ": drafter '" + req.drafter->name() +
                                 "' proposed token id " + std::to_string(t) +
                                 ", outside the vocabulary");
        }
      }
      fed[a].reserve(round.drafts.size() + 1);
      fed[a].push_back(L.context.back());
      fed[a].insert(fed[a].end(), round.drafts.begin(), round.drafts.end());
      items.push_back({L.seq, fed[a]});
      rec.fed_tokens += static_cast<int>(fed[a].size());
      rec.drafted += static_cast<int>(round.drafts.size());
      res.stats.draft_seconds += round.draft_seconds;
      out.stats.draft_seconds += round.draft_seconds;
    }

    // Verify every request in one target call.
    const double t_verify = clock.now();
    const std::vector<Logits> logits = target.extend_batch(items);
    if (logits.size() != items.size()) {
      throw std::logic_error(target.name() + ": extend_batch returned " +
                             std::to_string(logits.size()) + " results for " +
                             std::to_string(items.size()) + " items");
    }
    std::vector<VerifyResult> verdicts;
    verdicts.reserve(active.size());
    for (size_t a = 0; a < active.size(); ++a) {
      const size_t i = active[a];
      const RoundRecord& round = rounds[a];
      VerifyResult vr =
          verify(VerifyInput{round.drafts, logits[a], round.position, requests[i].config.sampling});
      const int n_drafts = static_cast<int>(round.drafts.size());
      if (vr.accepted < 0 || vr.accepted > n_drafts ||
          vr.emitted.size() != static_cast<size_t>(vr.accepted) + 1 ||
          !std::equal(round.drafts.begin(), round.drafts.begin() + vr.accepted,
                      vr.emitted.begin())) {
        throw std::logic_error(
            req_name(i) + ": verify rule broke its contract: with " + std::to_string(n_drafts) +
            " drafts it returned accepted=" + std::to_string(vr.accepted) + " and " +
            std::to_string(vr.emitted.size()) +
            " emitted tokens; emitted must be the accepted drafts plus exactly one target token");
      }
      if (vr.emitted.back() < 0 || vr.emitted.back() >= target.vocab_size()) {
        throw std::logic_error(req_name(i) + ": verify rule returned token id " +
                               std::to_string(vr.emitted.back()) + ", outside the vocabulary [0, " +
                               std::to_string(target.vocab_size()) + ")");
      }
      require_finite_choices(logits[a], vr.emitted, round.position,
                             req_name(i) + ": " + target.name());
      verdicts.push_back(std::move(vr));
    }
    const double step_seconds = clock.now() - t_verify;
    rec.seconds = step_seconds;

    // Roll back, emit, observe.
    std::vector<size_t> still;
    for (size_t a = 0; a < active.size(); ++a) {
      const size_t i = active[a];
      const BatchRequest& req = requests[i];
      Live& L = live[i];
      GenerationResult& res = out.requests[i];
      RoundRecord& round = rounds[a];
      const VerifyResult& vr = verdicts[a];
      const int n_drafts = static_cast<int>(round.drafts.size());
      target.truncate(L.seq, static_cast<int>(L.context.size()) + vr.accepted);
      round.accepted = vr.accepted;
      round.verify_seconds = step_seconds;
      bool stopped = false;
      for (Token t : vr.emitted) {
        round.emitted.push_back(t);
        if (is_stop(req.config, t)) {
          stopped = true;
          break;
        }
      }
      if (stopped) {
        round.accepted = std::min(round.accepted, static_cast<int>(round.emitted.size()));
        target.truncate(L.seq,
                        std::min(target.length(L.seq),
                                 static_cast<int>(L.context.size() + round.emitted.size()) - 1));
        res.finish = Finish::stop_token;
      }
      // Only when the extra token was emitted too (a stop token may cut the round short).
      round.bonus = n_drafts > 0 && round.accepted == n_drafts &&
                    round.emitted.size() == static_cast<size_t>(n_drafts) + 1;
      L.context.insert(L.context.end(), round.emitted.begin(), round.emitted.end());
      res.tokens.insert(res.tokens.end(), round.emitted.begin(), round.emitted.end());
      res.stats.verify_seconds += step_seconds;
      res.stats.record_round(n_drafts, round.accepted, static_cast<int>(round.emitted.size()));
      rec.accepted += round.accepted;
      rec.emitted += static_cast<int>(round.emitted.size());

      round.logits = &logits[a];
      if (req.drafter) {
        const double t0 = clock.now();
        req.drafter->observe(L.context, round);
        const double dt = clock.now() - t0;
        res.stats.draft_seconds += dt;
        out.stats.draft_seconds += dt;
        // The record passed to on_round holds all of the round's drafter time, as in
        // run_speculative: propose, observe and (first round) begin.
        round.draft_seconds += dt + setup_seconds[i];
        setup_seconds[i] = 0.0;
      }
      if (req.config.on_round) req.config.on_round(round);
      round.logits = nullptr;
      // Why it ends, in run_speculative's order: a stop token, max_new_tokens, a full context.
      if (!stopped && static_cast<int>(res.tokens.size()) < req.config.max_new_tokens &&
          L.context.size() > static_cast<size_t>(target.max_length())) {
        res.finish = Finish::context_full;
      }
      if (stopped || static_cast<int>(res.tokens.size()) >= req.config.max_new_tokens ||
          res.finish == Finish::context_full) {
        res.stats.total_seconds = clock.now() - t_start;
      } else {
        still.push_back(i);
      }
    }

    ++out.stats.steps;
    out.stats.fed_tokens += rec.fed_tokens;
    out.stats.drafted += rec.drafted;
    out.stats.accepted += rec.accepted;
    out.stats.emitted += rec.emitted;
    out.stats.verify_seconds += step_seconds;
    if (out.stats.steps_at_batch.size() <= static_cast<size_t>(n_active)) {
      out.stats.steps_at_batch.resize(static_cast<size_t>(n_active) + 1, 0);
    }
    ++out.stats.steps_at_batch[n_active];
    if (config.on_step) config.on_step(rec);
    active = std::move(still);
  }
  out.stats.total_seconds = clock.now() - t_start;
  return out;
}

}  // namespace speclab
