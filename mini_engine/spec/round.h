#pragma once
// What one verify round did: the record drafters learn from and traces are written from.
#include <cstdint>
#include <vector>

#include "mini_engine/core/logits.h"

namespace speclab {

struct RoundRecord {
  std::int64_t position = 0;  // index in the sequence of the first token this round emitted
  std::vector<Token> drafts;  // what the drafter proposed
  int accepted = 0;           // leading drafts the verify rule kept
  std::vector<Token>
      emitted;         // drafts[0..accepted) + the correction or bonus token (cut at a stop token)
  bool bonus = false;  // every draft was accepted and the extra token, emitted too, came for free
  const Logits* logits = nullptr;  // the verify pass: drafts.size() + 1 rows; valid only
                                   // during the Drafter::observe / on_round call
  double draft_seconds = 0.0;      // propose(); in on_round also observe() (and, in the first
                                   // round, begin()): the rounds add up to SpecStats::draft_seconds
  double verify_seconds = 0.0;     // the verify pass and the verify rule
};

}  // namespace speclab
