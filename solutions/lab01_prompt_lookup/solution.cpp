// Lab 01 reference solution: prompt lookup drafting and greedy verification.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "prompt_lookup.h"

namespace speclab {

std::vector<Token> ngram_propose(std::span<const Token> context, int n, int k) {
  if (n < 1) throw std::invalid_argument("ngram_propose: n must be >= 1, got " + std::to_string(n));
  if (k < 0) throw std::invalid_argument("ngram_propose: k must be >= 0, got " + std::to_string(k));
  const auto len = static_cast<std::ptrdiff_t>(context.size());
  if (k == 0 || len <= n) return {};
  const std::span<const Token> suffix = context.last(static_cast<size_t>(n));
  // Candidate starts run from len-n-1 down to 0: start len-n is the suffix itself.
  for (std::ptrdiff_t start = len - n - 1; start >= 0; --start) {
    if (std::equal(suffix.begin(), suffix.end(), context.begin() + start)) {
      const std::ptrdiff_t from = start + n;
      const std::ptrdiff_t to = std::min(len, from + k);
      return {context.begin() + from, context.begin() + to};
    }
  }
  return {};
}

VerifyResult verify_greedy(std::span<const Token> drafts, const Logits& logits) {
  if (static_cast<size_t>(logits.rows()) != drafts.size() + 1) {
    throw std::invalid_argument(
        "verify_greedy: need drafts.size() + 1 = " + std::to_string(drafts.size() + 1) +
        " logits rows, got " + std::to_string(logits.rows()));
  }
  VerifyResult result;
  for (size_t i = 0; i < drafts.size(); ++i) {
    const Token target_choice = argmax(logits.row(static_cast<int>(i)));
    if (drafts[i] != target_choice) {
      result.emitted.push_back(target_choice);  // the correction
      return result;
    }
    result.emitted.push_back(drafts[i]);
    ++result.accepted;
  }
  result.emitted.push_back(argmax(logits.row(static_cast<int>(drafts.size()))));  // the bonus
  return result;
}

}  // namespace speclab
