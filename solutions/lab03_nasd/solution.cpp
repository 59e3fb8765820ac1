// Lab 03 reference solution: top-k enrichment of the n-gram storage and lossless sampled
// verification.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "nasd.h"

namespace speclab {

std::vector<Token> top_k_tokens(std::span<const float> row, int k) {
  if (k < 0) throw std::invalid_argument("top_k_tokens: k must be >= 0, got " + std::to_string(k));
  // No row has more than row.size() tokens to return (k may be far larger: INT_MAX reserved 8 GB).
  const auto keep = std::min(static_cast<std::size_t>(k), row.size());
  // One pass over the row, holding the best tokens seen so far, best first. A token must beat
  // `bar`: -infinity (impossible tokens never count; NaN fails every comparison) while the list
  // has room, then the list's last score. With k much smaller than the vocabulary almost every
  // token costs that one comparison: no copy of the ids, no sort (collecting and sorting
  // SmolLM2's 49152 ids cost about 15 times more, on every verified token: book/lab03_nasd.md).
  std::vector<Token> best;
  if (keep == 0) return best;
  best.reserve(keep + 1);
  float bar = -INFINITY;
  for (std::size_t i = 0; i < row.size(); ++i) {
    const float s = row[i];
    if (!(s > bar)) continue;
    // After every kept token scoring at least s: they have lower ids, so ties stay in id order.
    const auto at = std::find_if(best.begin(), best.end(), [&](Token b) { return row[b] < s; });
    best.insert(at, static_cast<Token>(i));
    if (best.size() > keep) best.pop_back();
    if (best.size() == keep) bar = row[best.back()];
  }
  return best;
}

void record_round(NGramModel& storage, std::span<const Token> context, const RoundRecord& round,
                  int filler_top_k) {
  const std::size_t n_emitted = round.emitted.size();
  if (filler_top_k < 1) {
    throw std::invalid_argument("record_round: filler_top_k must be >= 1, got " +
                                std::to_string(filler_top_k));
  }
  if (round.position < 0) {
    throw std::invalid_argument("record_round: round.position must be >= 0, got " +
                                std::to_string(round.position));
  }
  if (static_cast<std::size_t>(round.position) + n_emitted != context.size()) {
    throw std::invalid_argument(
        "record_round: context must end with the round's emitted tokens, so its size must be "
        "round.position + emitted.size() = " +
        std::to_string(round.position) + " + " + std::to_string(n_emitted) + "; got a context of " +
        std::to_string(context.size()) + " tokens");
  }
  const auto tail = context.last(n_emitted);
  const auto differs = std::mismatch(round.emitted.begin(), round.emitted.end(), tail.begin());
  if (differs.first != round.emitted.end()) {
    const auto i = static_cast<std::size_t>(differs.first - round.emitted.begin());
    throw std::invalid_argument(
        "record_round: context must end with the round's emitted tokens, "
        "but emitted[" +
        std::to_string(i) + "] = " + std::to_string(*differs.first) + " and context[" +
        std::to_string(round.position + static_cast<std::int64_t>(i)) +
        "] = " + std::to_string(*differs.second));
  }
  if (n_emitted > 0 &&
      (round.logits == nullptr || round.logits->rows() < static_cast<int>(n_emitted))) {
    throw std::invalid_argument("record_round: the round needs one logits row per emitted token: " +
                                std::to_string(n_emitted) + " emitted, " +
                                (round.logits == nullptr
                                     ? std::string("round.logits is null")
                                     : std::to_string(round.logits->rows()) + " rows"));
  }
  const auto first = static_cast<std::size_t>(round.position);
  for (std::size_t i = 0; i < n_emitted; ++i) {
    const std::span<const Token> before = context.first(first + i);  // real text only
    storage.update(before, std::span<const Token>(&round.emitted[i], 1));
    if (filler_top_k > 1) {
      const std::span<const float> row = round.logits->row(static_cast<int>(i));
      storage.update(before, top_k_tokens(row, filler_top_k));
    }
  }
}

VerifyResult verify_sampled(std::span<const Token> drafts, const Logits& logits,
                            std::int64_t position, const SamplingParams& sampling) {
  if (static_cast<std::size_t>(logits.rows()) != drafts.size() + 1) {
    throw std::invalid_argument(
        "verify_sampled: need drafts.size() + 1 = " + std::to_string(drafts.size() + 1) +
        " logits rows, got " + std::to_string(logits.rows()));
  }
  if (position < 0) {
    throw std::invalid_argument("verify_sampled: position must be >= 0, got " +
                                std::to_string(position));
  }
  VerifyResult result;
  const auto k = static_cast<std::int64_t>(drafts.size());
  for (std::int64_t i = 0; i < k; ++i) {
    // The token plain decoding draws at this position, given context + drafts[0..i).
    const Token x = sample_at(logits.row(static_cast<int>(i)), sampling, position + i);
    if (x != drafts[static_cast<std::size_t>(i)]) {
      result.emitted.push_back(x);  // the correction: the draw itself, never a fresh one
      return result;
    }
    result.emitted.push_back(x);
    ++result.accepted;
  }
  result.emitted.push_back(sample_at(logits.row(static_cast<int>(k)), sampling, position + k));
  return result;
}

}  // namespace speclab
