#pragma once
// Lab 03 -- NASD: n-gram assisted speculative decoding with top-k enrichment and sampled
// verification. The chapter: book/lab03_nasd.md
//
// You implement, in starter.cpp: top_k_tokens, record_round and verify_sampled.
// The n-gram storage comes from lab 02. This lab links lab 02's *reference* solution, so you can
// do lab 03 before (or without) finishing lab 02 (the chapter, "Before you start").
// Everything below the glue line is given; you do not need to change it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mini_engine/core/logits.h"
#include "mini_engine/core/token.h"
#include "mini_engine/sampling/sampling.h"
#include "mini_engine/spec/drafter.h"
#include "mini_engine/spec/round.h"
#include "mini_engine/spec/verify.h"
#include "ngram_storage.h"

namespace speclab {

// --8<-- [start:top_k_tokens]
// The `k` highest-scoring tokens of `row`, best first; equal scores go to the lower id.
// Requires every score to be finite or -infinity, as logits are. Tokens scored -infinity
// (probability 0 at every temperature) are never returned, so fewer than k come back when fewer
// than k tokens are possible. Returns {} when k == 0.
// Throws std::invalid_argument when k < 0.
std::vector<Token> top_k_tokens(std::span<const float> row, int k);
// --8<-- [end:top_k_tokens]

// --8<-- [start:record_round]
// Teaches `storage` what one verify round showed. For each emitted token i -- it sits at sequence
// position round.position + i and follows the real text context[0 .. round.position + i) --
//   1. records round.emitted[i] after that text;
//   2. when filler_top_k > 1, also records top_k_tokens(round.logits->row(i), filler_top_k),
//      in rank order, after the same text.
// So filler_top_k == 1 records the emitted tokens only. Only rows 0 .. emitted.size()-1 are
// read: row i scores position round.position + i given real text. Later rows were computed
// after a rejected draft, for a context that never happened.
// Requires: context ends with round.emitted (context.size() == round.position +
// round.emitted.size(), and those last tokens of context are round.emitted, in order),
// round.position >= 0, filler_top_k >= 1, and, when round.emitted is not empty, round.logits
// is not null and has at least round.emitted.size() rows, even at filler_top_k 1, which reads
// none. A round that emitted nothing reads no row: its round.logits may be null.
// Throws std::invalid_argument otherwise, before recording anything.
void record_round(NGramModel& storage, std::span<const Token> context, const RoundRecord& round,
                  int filler_top_k);
// --8<-- [end:record_round]

// --8<-- [start:verify_sampled]
// Sampled verification. `logits` has drafts.size() + 1 rows; row i scores the token at sequence
// position `position + i`, after the context extended by drafts[0..i).
// For i = 0, 1, ...: draw x = sample_at(logits.row(i), sampling, position + i), the token plain
// decoding would draw there. While i < drafts.size() and x == drafts[i], accept the draft and go
// on. At the first mismatch emit x itself -- the token already drawn, not a new draw -- and stop.
// When every draft was accepted, emit the draw from the last row (the bonus).
// With the engine's counter-based RNG this emits exactly the tokens run_baseline emits with the
// same SamplingParams, token for token; temperature 0 gives verify_greedy's result.
// Returns accepted drafts followed by one target token: emitted.size() == accepted + 1.
// Throws std::invalid_argument when logits.rows() != drafts.size() + 1 or position < 0.
VerifyResult verify_sampled(std::span<const Token> drafts, const Logits& logits,
                            std::int64_t position, const SamplingParams& sampling);
// --8<-- [end:verify_sampled]

// ---- glue: the engine-facing drafter and verify rule (not part of the exercise) ----

struct NasdConfig {
  int n = 3;                    // longest n-gram: the context is up to n-1 tokens
  int min_context = 1;          // back-off floor of the NGramStorage
  int filler_top_k = 3;         // 1: learn only the emitted tokens; k > 1: also the target's top-k
  bool stop_if_unknown = true;  // end the draft at the first miss instead of padding
};

// NASD as an engine Drafter: begin() seeds a fresh NGramStorage with the prompt, propose() is
// draft(), and observe() is record_round() with the round's logits.
// A prompt the storage refuses (a negative id: std::invalid_argument naming it) makes begin()
// throw and leaves the running generation as it was: the fresh storage replaces the old one only
// once it is seeded. A round with a negative id among its emitted tokens or the n-1 tokens before
// the first (its key) makes observe() throw std::invalid_argument naming it and its position in
// `context` before record_round is called, so nothing of the round is recorded. propose() only
// reads the storage and changes nothing: a negative id in the context is not refused (no stored
// n-gram holds one, so a key holding it matches nothing), and with padding (stop_if_unknown
// false) it can come back as a guess.
class NasdDrafter final : public Drafter {
 public:
  explicit NasdDrafter(NasdConfig config = {})
      : config_(config), storage_(config.n, config.min_context) {
    if (config.filler_top_k < 1) {
      throw std::invalid_argument("NasdDrafter: filler_top_k must be >= 1, got " +
                                  std::to_string(config.filler_top_k));
    }
  }
  std::string name() const override {
    return "nasd(n=" + std::to_string(config_.n) +
           ", min_context=" + std::to_string(config_.min_context) +
           ", filler_top_k=" + std::to_string(config_.filler_top_k) +
           (config_.stop_if_unknown ? "" : ", pad") + ")";
  }
  void begin(std::span<const Token> prompt) override {
    NGramStorage fresh(config_.n, config_.min_context);
    fresh.seed(prompt);
    storage_ = std::move(fresh);
  }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    return draft(storage_, context, k, config_.stop_if_unknown);
  }
  void observe(std::span<const Token> context, const RoundRecord& round) override {
    // All or nothing: record_round records the round token by token, and the storage refuses a
    // negative id only when it gets there, with the tokens before it recorded. So the ids those
    // updates read (the emitted tokens and the n-1 before the first, its key) are checked first.
    // A round that does not fit the context is left to record_round, which refuses it whole.
    const std::size_t first = static_cast<std::size_t>(round.position);
    if (round.position >= 0 && first + round.emitted.size() == context.size()) {
      const std::size_t key = static_cast<std::size_t>(config_.n - 1);
      for (std::size_t i = first > key ? first - key : 0; i < context.size(); ++i) {
        if (context[i] < 0) {
          throw std::invalid_argument("NasdDrafter::observe: token id " +
                                      std::to_string(context[i]) + " at position " +
                                      std::to_string(i) + " is negative");
        }
      }
    }
    record_round(storage_, context, round, config_.filler_top_k);
  }
  // The current generation's storage. The reference stays valid across begin(), which replaces
  // what it refers to.
  const NGramStorage& storage() const { return storage_; }

 private:
  NasdConfig config_;
  NGramStorage storage_;
};

// verify_sampled as an engine VerifyRule (uses the round's position and SamplingParams).
inline VerifyRule sampled_verify_rule() {
  return [](const VerifyInput& in) {
    return verify_sampled(in.drafts, in.logits, in.position, in.sampling);
  };
}

}  // namespace speclab
