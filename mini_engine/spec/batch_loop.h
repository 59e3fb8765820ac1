#pragma once
// The batched speculative loop: several requests decoded in lock-step, every step verifying the
// drafts of all of them in ONE BatchTarget::extend_batch call. The single-sequence loops in
// loop.h are unchanged; for every request this loop emits exactly the tokens run_speculative
// (or run_baseline, for a request without drafts) would emit for it alone.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "mini_engine/core/batch_target.h"
#include "mini_engine/core/clock.h"
#include "mini_engine/spec/drafter.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/spec/verify.h"

namespace speclab {

// One request of a batch. The loop does not own the drafter, which must outlive the call. A
// drafter that keeps state (most do) must serve one request only: begin(), propose() and
// observe() are called for every request that names it, interleaved.
struct BatchRequest {
  std::vector<Token> prompt;   // non-empty
  Drafter* drafter = nullptr;  // nullptr: this request never drafts (plain decoding)
  DecodeConfig config;         // max_new_tokens, k (0..64; 0 = no drafts), sampling,
                               // stop_tokens and on_round, as for run_speculative; its clock
                               // is not read (BatchDecodeConfig::clock times every request)
};

// What one lock-step verify call did.
struct BatchStepRecord {
  int step = 0;        // 0, 1, ... over the decode phase
  int active = 0;      // requests in this call
  int fed_tokens = 0;  // tokens fed over all of them: active + drafted
  int drafted = 0;
  int accepted = 0;
  int emitted = 0;
  double seconds = 0.0;  // the extend_batch call and the verification, on the loop's clock
};

// Batch-wide numbers. Per-request numbers are in BatchGenerationResult::requests[i].stats.
struct BatchStats {
  std::int64_t steps = 0;       // extend_batch calls while decoding (the prefill call excluded)
  std::int64_t fed_tokens = 0;  // tokens those calls fed
  std::int64_t drafted = 0;
  std::int64_t accepted = 0;
  std::int64_t emitted = 0;
  std::vector<std::int64_t> steps_at_batch;  // [b]: steps that had b active requests
  double prefill_seconds = 0.0;
  double draft_seconds = 0.0;
  double verify_seconds = 0.0;
  double total_seconds = 0.0;

  // emitted / total_seconds: the batch's throughput. 0 before any time passed.
  double tokens_per_second() const;
};

struct BatchDecodeConfig {
  // When set: the draft length for every drafting request in a step, given how many requests are
  // active in it (a batch-aware policy, as lab 06 builds). It replaces each request's config.k
  // and must return 0..64; 0 means no drafts this step. Requests without a drafter never draft.
  std::function<int(int active)> k_for_batch;
  // Times draft, verify and prefill. nullptr: the wall clock. A ToyBatchTarget's simulated clock
  // makes timing exact: only what the target charges counts. Not owned: must outlive the call.
  const Clock* clock = nullptr;
  // Called after every lock-step verify call.
  std::function<void(const BatchStepRecord&)> on_step;
};

struct BatchGenerationResult {
  // One per request, in request order. stats.target_runs counts the steps the request took part
  // in; stats.verify_seconds is the time of those steps (the time it waited, not a share);
  // stats.total_seconds runs from the start of the batch until the request finished.
  std::vector<GenerationResult> requests;
  BatchStats stats;
};

// Decodes every request in lock-step. One batched prefill puts each prompt but its last token
// into a new sequence of `target`; then each step asks every active request's drafter for up to
// k drafts (k capped near max_new_tokens and the context limit, as in run_speculative), verifies
// all of them in one extend_batch call with `verify`, rolls each sequence back to its accepted
// tokens and emits. A request leaves the batch when it reaches max_new_tokens, a stop token or
// the end of the context (its GenerationResult::finish says which, as run_speculative's would).
// The loop's sequences are removed from `target` before it returns or throws; sequences it
// did not add are not touched. No requests: an empty result, and no target call.
// Throws std::invalid_argument for an empty `verify`, naming the request for an empty prompt,
// a bad config or id, and for k_for_batch out of range; std::logic_error naming the request and
// drafter or rule when either breaks its contract (as in run_speculative, a target token outside
// the vocabulary included); ContextOverflow naming the request when a prompt alone is longer than
// max_length(); and std::runtime_error naming the request when a chosen token's logit is NaN or
// +infinity (as in run_baseline).
BatchGenerationResult run_speculative_batch(BatchTarget& target,
                                            std::span<const BatchRequest> requests,
                                            const VerifyRule& verify,
                                            const BatchDecodeConfig& config = {});

}  // namespace speclab
