#include "mini_engine/spec/loop.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace speclab {
namespace {

// The clock a loop times itself with: the config's, or the wall clock.
const Clock& clock_of(const DecodeConfig& c) {
  static const WallClock wall;
  return c.clock ? *c.clock : static_cast<const Clock&>(wall);
}

void check_common(const Target& target, std::span<const Token> prompt, const DecodeConfig& c) {
  if (prompt.empty()) throw std::invalid_argument("the prompt is empty: give at least one token");
  if (c.max_new_tokens < 1) {
    throw std::invalid_argument("max_new_tokens must be >= 1, got " +
                                std::to_string(c.max_new_tokens));
  }
  if (!(c.sampling.temperature >= 0.0) || !std::isfinite(c.sampling.temperature)) {
    throw std::invalid_argument("temperature must be finite and >= 0, got " +
                                std::to_string(c.sampling.temperature));
  }
  for (Token t : prompt) {
    if (t < 0 || t >= target.vocab_size()) {
      throw std::invalid_argument("prompt token id " + std::to_string(t) +
                                  " is outside the vocabulary [0, " +
                                  std::to_string(target.vocab_size()) + ")");
    }
  }
  if (prompt.size() > static_cast<size_t>(target.max_length())) {
    throw ContextOverflow("the prompt has " + std::to_string(prompt.size()) + " tokens but " +
                          target.name() + " holds at most " + std::to_string(target.max_length()));
  }
}

// Leaves the target holding prompt[0 .. size-1): everything but the last prompt token, which the
// first decode step feeds. Reuses the longest common prefix already in the target.
void prefill(Target& target, std::span<const Token> prompt) {
  const std::span<const Token> want = prompt.first(prompt.size() - 1);
  const std::span<const Token> have = target.tokens();
  size_t common = 0;
  while (common < want.size() && common < have.size() && want[common] == have[common]) ++common;
  target.truncate(static_cast<int>(common));
  if (common < want.size()) target.append(want.subspan(common));  // no one reads its logits
}

// Throws std::logic_error unless `vr` is the accepted drafts plus one in-vocabulary target token.
void check_verdict(const VerifyResult& vr, std::span<const Token> drafts, int vocab_size) {
  const int n_drafts = static_cast<int>(drafts.size());
  if (vr.accepted < 0 || vr.accepted > n_drafts ||
      vr.emitted.size() != static_cast<size_t>(vr.accepted) + 1 ||
      !std::equal(drafts.begin(), drafts.begin() + vr.accepted, vr.emitted.begin())) {
    throw std::logic_error(
        "verify rule broke its contract: with " + std::to_string(n_drafts) +
        " drafts it returned accepted=" + std::to_string(vr.accepted) + " and " +
        std::to_string(vr.emitted.size()) +
        " emitted tokens; emitted must be the accepted drafts plus exactly one target token");
  }
  const Token t = vr.emitted.back();
  if (t < 0 || t >= vocab_size) {
    throw std::logic_error("verify rule returned token id " + std::to_string(t) +
                           ", outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
  }
}

bool is_stop(const DecodeConfig& c, Token t) {
  return std::find(c.stop_tokens.begin(), c.stop_tokens.end(), t) != c.stop_tokens.end();
}

}  // namespace

const char* to_string(Finish finish) {
  switch (finish) {
    case Finish::max_new_tokens: return "max_new_tokens";
    case Finish::stop_token: return "stop_token";
    case Finish::context_full: return "context_full";
  }
  return "unknown";
}

GenerationResult run_baseline(Target& target, std::span<const Token> prompt,
                              const DecodeConfig& config) {
  check_common(target, prompt, config);
  GenerationResult result;
  result.stats.prompt_tokens = static_cast<std::int64_t>(prompt.size());
  const Clock& clock = clock_of(config);
  const double t_start = clock.now();
  prefill(target, prompt);
  result.stats.prefill_seconds = clock.now() - t_start;

  Token last = prompt.back();
  auto position = static_cast<std::int64_t>(prompt.size());
  while (static_cast<int>(result.tokens.size()) < config.max_new_tokens) {
    if (target.length() + 1 > target.max_length()) {
      result.finish = Finish::context_full;
      break;
    }
    const double t0 = clock.now();
    const Logits logits = target.extend(std::span<const Token>(&last, 1));
    const Token next = sample_at(logits.row(0), config.sampling, position);
    require_finite_choices(logits, std::span<const Token>(&next, 1), position, target.name());
    const double verify_s = clock.now() - t0;
    result.stats.verify_seconds += verify_s;
    result.stats.record_round(0, 0, 1);
    result.tokens.push_back(next);
    if (config.on_round) {
      RoundRecord r;
      r.position = position;
      r.emitted = {next};
      r.logits = &logits;
      r.verify_seconds = verify_s;
      config.on_round(r);
    }
    last = next;
    ++position;
    if (is_stop(config, next)) {
      result.finish = Finish::stop_token;
      break;
    }
  }
  result.stats.total_seconds = clock.now() - t_start;
  return result;
}

GenerationResult run_speculative(Target& target, Drafter& drafter, const VerifyRule& verify,
                                 std::span<const Token> prompt, const DecodeConfig& config) {
  check_common(target, prompt, config);
  if (config.k < 1 || config.k > kMaxDrafts) {
    throw std::invalid_argument("k (drafts per round) must be in [1, " +
                                std::to_string(kMaxDrafts) + "], got " + std::to_string(config.k));
  }
  if (!verify) throw std::invalid_argument("run_speculative: no verify rule given");
  GenerationResult result;
  result.stats.prompt_tokens = static_cast<std::int64_t>(prompt.size());
  const Clock& clock = clock_of(config);
  const double t_start = clock.now();
  prefill(target, prompt);
  std::vector<Token> context(prompt.begin(), prompt.end());
  result.stats.prefill_seconds = clock.now() - t_start;

  // The drafter's own set-up counts as draft time: the first round's record carries it.
  double t0 = clock.now();
  drafter.begin(prompt);
  double setup_seconds = clock.now() - t0;

  while (static_cast<int>(result.tokens.size()) < config.max_new_tokens) {
    const int remaining = config.max_new_tokens - static_cast<int>(result.tokens.size());
    // The verify pass feeds [last] + drafts; the target already holds context minus its last.
    const int room = target.max_length() - static_cast<int>(context.size());
    if (room < 0) {  // not even [last] fits
      result.finish = Finish::context_full;
      break;
    }
    const int k = std::min({config.k, remaining - 1, room});

    RoundRecord round;
    round.position = static_cast<std::int64_t>(context.size());
    t0 = clock.now();
    if (k > 0) round.drafts = drafter.propose(context, k);
    round.draft_seconds = clock.now() - t0;
    if (static_cast<int>(round.drafts.size()) > std::max(k, 0)) {
      throw std::logic_error("drafter '" + drafter.name() + "' proposed " +
                             std::to_string(round.drafts.size()) +
                             " tokens but this round's draft budget k is " + std::to_string(k));
    }
    for (Token t : round.drafts) {
      if (t < 0 || t >= target.vocab_size()) {
        throw std::logic_error("drafter '" + drafter.name() + "' proposed token id " +
                               std::to_string(t) + ", outside the vocabulary");
      }
    }

    t0 = clock.now();
    std::vector<Token> fed;
    fed.reserve(round.drafts.size() + 1);
    fed.push_back(context.back());
    fed.insert(fed.end(), round.drafts.begin(), round.drafts.end());
    const Logits logits = target.extend(fed);
    VerifyResult vr;
    try {
      vr = verify(VerifyInput{round.drafts, logits, round.position, config.sampling});
      check_verdict(vr, round.drafts, target.vocab_size());
      require_finite_choices(logits, vr.emitted, round.position, target.name());
    } catch (...) {
      // Take the unverified [last] + drafts back out, as before the round.
      target.truncate(static_cast<int>(context.size()) - 1);
      throw;
    }
    round.verify_seconds = clock.now() - t0;

    const int n_drafts = static_cast<int>(round.drafts.size());
    // Roll back the rejected drafts: keep context minus last, the old last, and the accepted.
    target.truncate(static_cast<int>(context.size()) + vr.accepted);

    // Emit, stopping right after a stop token.
    round.accepted = vr.accepted;
    for (size_t i = 0; i < vr.emitted.size(); ++i) {
      round.emitted.push_back(vr.emitted[i]);
      if (is_stop(config, vr.emitted[i])) {
        result.finish = Finish::stop_token;
        break;
      }
    }
    const bool stopped = result.finish == Finish::stop_token;
    if (stopped) {
      round.accepted = std::min(round.accepted, static_cast<int>(round.emitted.size()));
      // The target may hold tokens past the stop; keep it consistent with the emitted text.
      target.truncate(
          std::min(target.length(), static_cast<int>(context.size() + round.emitted.size()) - 1));
    }
    // Only when the extra token was emitted too (a stop token may cut the round short).
    round.bonus = n_drafts > 0 && round.accepted == n_drafts &&
                  round.emitted.size() == static_cast<size_t>(n_drafts) + 1;
    context.insert(context.end(), round.emitted.begin(), round.emitted.end());
    result.tokens.insert(result.tokens.end(), round.emitted.begin(), round.emitted.end());
    result.stats.verify_seconds += round.verify_seconds;
    result.stats.record_round(n_drafts, round.accepted, static_cast<int>(round.emitted.size()));

    round.logits = &logits;
    t0 = clock.now();
    drafter.observe(context, round);  // sees propose()'s time alone (round.h)
    // Observing and (first round) begin() are the drafter's time too: the record passed to
    // on_round includes them, so the rounds' draft_seconds add up to the stats'.
    round.draft_seconds += clock.now() - t0 + setup_seconds;
    setup_seconds = 0.0;
    result.stats.draft_seconds += round.draft_seconds;
    if (config.on_round) config.on_round(round);
    if (stopped) break;
  }
  result.stats.total_seconds = clock.now() - t_start;
  return result;
}

}  // namespace speclab
