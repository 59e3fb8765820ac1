#pragma once
// The numbers that describe a speculative run, named as in vLLM's logs.
#include <cstdint>
#include <string>
#include <vector>

namespace speclab {

struct SpecStats {
  std::int64_t prompt_tokens = 0;
  std::int64_t target_runs = 0;  // verify passes (decode steps for plain decoding); no prefill
  std::int64_t drafted = 0;      // draft tokens proposed and sent to verification
  std::int64_t accepted = 0;     // draft tokens kept
  std::int64_t emitted = 0;      // tokens added to the output
  // Positions count from 0: [0] is a round's first draft.
  std::vector<std::int64_t> drafted_at;   // [i]: rounds that had a draft at position i
  std::vector<std::int64_t> accepted_at;  // [i]: rounds whose draft at position i was kept
  // [a]: rounds that kept exactly a drafts. [0] counts the rounds without a draft (plain steps)
  // as well as those whose first draft was rejected; drafted_at[0] tells them apart.
  // record_round() keeps its sum equal to target_runs.
  std::vector<std::int64_t> accept_length_hist;
  // Seconds on the loop's clock (DecodeConfig::clock; the wall clock by default).
  double prefill_seconds = 0.0;
  double draft_seconds = 0.0;   // propose, observe and begin
  double verify_seconds = 0.0;  // target runs and the verify rule
  double total_seconds = 0.0;   // the whole call, prefill included

  // Adds one round to the counters. Requires 0 <= accepted_now <= drafted_now and
  // emitted_now >= 0; throws std::invalid_argument (and changes nothing) otherwise.
  void record_round(int drafted_now, int accepted_now, int emitted_now);

  // emitted / target_runs: the mean acceptance length (AL), tokens per run. 0 before any run.
  // Equals 1 + accepted / target_runs except when a round accepted a stop token among its
  // drafts: generation ends there and the target adds no token of its own.
  double tokens_per_run() const;
  // accepted / drafted; 0 when nothing was drafted.
  double acceptance_rate() const;
  // accepted_at[i] / drafted_at[i]: among the rounds that drafted position i, the share that
  // kept it (and so every draft before it). Rounds with shorter drafts, or none, are not in the
  // denominator, so 1 + the sum over i is tokens per run only when every round drafts k tokens.
  // 0 where nothing was drafted, and for i < 0 or past the longest draft.
  double acceptance_at(int i) const;
  // Time not spent drafting, verifying or in prefill: the loop's own bookkeeping, and the
  // caller's DecodeConfig::on_round callback (`speclab generate` prints the tokens there).
  double other_seconds() const;
  // One line: tokens, runs, tokens/run, acceptance, time split, and tokens/s as
  // emitted / total_seconds (prefill included: end to end, not decode-only).
  std::string summary() const;
};

}  // namespace speclab
