#pragma once
// The other half: a verify rule decides which drafts survive one target pass.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "mini_engine/core/logits.h"
#include "mini_engine/sampling/sampling.h"

namespace speclab {

// What a verify rule returns. `emitted` is drafts[0..accepted) followed by exactly one token
// chosen by the target: the correction at the first rejected draft, or the bonus token when
// every draft was accepted. So emitted.size() == accepted + 1, always.
struct VerifyResult {
  int accepted = 0;
  std::vector<Token> emitted;
};

// Everything a verify rule may look at. Its spans and references are valid only during the call.
struct VerifyInput {
  std::span<const Token> drafts;
  const Logits& logits;            // drafts.size() + 1 rows; row i scores the token after
                                   // context + drafts[0..i)
  std::int64_t position;           // absolute index in the sequence of the first emitted token
  const SamplingParams& sampling;  // temperature, seed: for rules that sample
};

// The loops throw std::logic_error ("verify rule ...") when a rule's result breaks VerifyResult's
// contract or its target token is outside the vocabulary. A rule may throw: the exception passes
// through the loop, which leaves no unverified draft in the target.
using VerifyRule = std::function<VerifyResult(const VerifyInput&)>;

}  // namespace speclab
