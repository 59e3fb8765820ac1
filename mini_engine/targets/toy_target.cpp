#include "mini_engine/targets/toy_target.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "mini_engine/sampling/rng.h"

namespace speclab {
namespace {

constexpr float kNever = -std::numeric_limits<float>::infinity();
// Scores of the candidates at a position, best first. softmax -> about 0.81 / 0.11 / 0.04 / ...
constexpr float kScores[] = {4.0f, 2.0f, 1.0f, 0.5f, 0.25f, 0.0f, -0.25f, -0.5f};
// Streams of counter_hash, so that the toy's choices never correlate with each other.
enum Stream : std::uint64_t { kNoise = 101, kNoiseToken, kAlt, kSuccessor, kPattern, kPerm };

double unit(std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

}  // namespace

ToyRegime parse_toy_regime(const std::string& name) {
  if (name == "periodic") return ToyRegime::periodic;
  if (name == "markov") return ToyRegime::markov;
  if (name == "random") return ToyRegime::random;
  throw std::invalid_argument("unknown toy regime '" + name +
                              "': valid values are periodic, markov, random");
}

std::string to_string(ToyRegime regime) {
  switch (regime) {
    case ToyRegime::periodic: return "periodic";
    case ToyRegime::markov: return "markov";
    case ToyRegime::random: return "random";
  }
  return "?";
}

ToyTarget::ToyTarget(ToyTargetConfig config) : config_(config) {
  auto fail = [](const std::string& msg) { throw std::invalid_argument("ToyTarget: " + msg); };
  if (config_.vocab_size < 8) fail("vocab_size must be >= 8");
  if (config_.max_length < 1) fail("max_length must be >= 1");
  if (config_.regime == ToyRegime::periodic &&
      (config_.period < 2 || config_.period > config_.vocab_size)) {
    fail("period must be in [2, vocab_size]");
  }
  if (config_.regime == ToyRegime::markov && (config_.branching < 2 || config_.branching > 8)) {
    fail("branching must be in [2, 8]");
  }
  if (config_.noise == -1.0) config_.noise = config_.regime == ToyRegime::markov ? 0.3 : 0.0;
  if (!(config_.noise >= 0.0 && config_.noise <= 1.0)) {
    fail("noise must be in [0, 1] (or -1 for the default)");
  }

  // The periodic pattern: `period` distinct tokens, chosen by a seeded shuffle. Only the
  // periodic regime has one (and only it checks `period`).
  if (config_.regime != ToyRegime::periodic) return;
  std::vector<Token> all(config_.vocab_size);
  std::iota(all.begin(), all.end(), 0);
  for (int i = config_.vocab_size - 1; i > 0; --i) {
    const auto j = counter_hash(config_.seed, kPattern, static_cast<std::uint64_t>(i)) % (i + 1);
    std::swap(all[i], all[j]);
  }
  pattern_.assign(all.begin(), all.begin() + config_.period);
  pattern_index_.assign(config_.vocab_size, -1);
  for (int i = 0; i < config_.period; ++i) pattern_index_[pattern_[i]] = i;
}

std::string ToyTarget::name() const {
  return "toy/" + to_string(config_.regime) + "(vocab=" + std::to_string(config_.vocab_size) +
         ", seed=" + std::to_string(config_.seed) + ")";
}

Token ToyTarget::permute(std::uint64_t x) const {
  // A bijection on [0, V): cycle-walk a keyed bijection on the next power of two.
  const std::uint64_t v = static_cast<std::uint64_t>(config_.vocab_size);
  std::uint64_t bits = 1;
  while ((1ULL << bits) < v) ++bits;
  const std::uint64_t mask = (1ULL << bits) - 1;
  const std::uint64_t mult = (counter_hash(config_.seed, kPerm, 0) | 1ULL) & mask;  // odd
  const std::uint64_t add = counter_hash(config_.seed, kPerm, 1) & mask;
  x %= v;
  do {
    x = (x * mult + add) & mask;  // odd multiplier + add: a bijection mod 2^bits
    x ^= x >> (bits / 2 + 1);     // xor-shift: also a bijection
  } while (x >= v);
  return static_cast<Token>(x);
}

std::vector<float> ToyTarget::logits_after(std::span<const Token> context) const {
  const int v = config_.vocab_size;
  const auto pos = static_cast<std::uint64_t>(context.size());
  const std::uint64_t seed = config_.seed;
  const Token last = context.empty() ? 0 : context.back();
  if (last < 0 || last >= v) {
    throw std::invalid_argument("ToyTarget::logits_after: the last context token " +
                                std::to_string(last) + " is outside the vocabulary [0, " +
                                std::to_string(v) + ")");
  }
  std::vector<Token> candidates;  // best first, distinct

  auto add = [&](Token t) {
    if (std::find(candidates.begin(), candidates.end(), t) == candidates.end()) {
      candidates.push_back(t);
    }
  };
  auto any_token = [&](std::uint64_t stream, std::uint64_t j) {
    return static_cast<Token>(counter_hash(seed, stream, pos, j) % static_cast<std::uint64_t>(v));
  };
  const bool noisy = unit(counter_hash(seed, kNoise, pos)) < config_.noise;

  switch (config_.regime) {
    case ToyRegime::periodic: {
      const int idx = pattern_index_[last];
      const Token next = idx < 0 ? pattern_[0] : pattern_[(idx + 1) % config_.period];
      if (noisy) add(any_token(kNoiseToken, 0));
      add(next);
      add(any_token(kAlt, 0));
      add(any_token(kAlt, 1));
      break;
    }
    case ToyRegime::markov: {
      std::vector<Token> succ;
      for (int j = 0; j < config_.branching; ++j) {
        succ.push_back(static_cast<Token>(
            counter_hash(seed, kSuccessor, static_cast<std::uint64_t>(last), j) % v));
      }
      if (noisy) {
        const auto r = 1 + counter_hash(seed, kNoiseToken, pos) % (config_.branching - 1);
        std::swap(succ[0], succ[r]);
      }
      for (Token t : succ) add(t);
      break;
    }
    case ToyRegime::random: {
      add(permute(pos));
      add(any_token(kAlt, 0));
      add(any_token(kAlt, 1));
      break;
    }
  }
  std::vector<float> row(v, kNever);
  for (size_t i = 0; i < candidates.size() && i < std::size(kScores); ++i) {
    row[candidates[i]] = kScores[i];
  }
  return row;
}

Logits ToyTarget::extend(std::span<const Token> tokens) {
  if (tokens.empty()) throw std::invalid_argument("ToyTarget::extend: no tokens to append");
  for (Token t : tokens) {
    if (t < 0 || t >= config_.vocab_size) {
      throw std::invalid_argument("ToyTarget::extend: token id " + std::to_string(t) +
                                  " is outside the vocabulary [0, " +
                                  std::to_string(config_.vocab_size) + ")");
    }
  }
  if (tokens_.size() + tokens.size() > static_cast<size_t>(config_.max_length)) {
    throw ContextOverflow("ToyTarget: appending " + std::to_string(tokens.size()) + " tokens to " +
                          std::to_string(tokens_.size()) + " would exceed max_length " +
                          std::to_string(config_.max_length));
  }
  Logits out(static_cast<int>(tokens.size()), config_.vocab_size);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens_.push_back(tokens[i]);
    const std::vector<float> row = logits_after(tokens_);
    std::copy(row.begin(), row.end(), out.row(static_cast<int>(i)).begin());
  }
  return out;
}

void ToyTarget::truncate(int new_len) {
  if (new_len < 0 || new_len > length()) {
    throw std::out_of_range("ToyTarget::truncate(" + std::to_string(new_len) + "): sequence has " +
                            std::to_string(length()) + " tokens");
  }
  tokens_.resize(static_cast<size_t>(new_len));
}

std::vector<Token> ToyTarget::make_prompt(int length) const {
  if (length < 1) throw std::invalid_argument("ToyTarget::make_prompt: length must be >= 1");
  std::vector<Token> prompt(static_cast<size_t>(length));
  for (int i = 0; i < length; ++i) {
    if (config_.regime == ToyRegime::random) {
      prompt[i] = permute(static_cast<std::uint64_t>(i));
    } else {
      prompt[i] = static_cast<Token>(counter_hash(config_.seed, kAlt, 1000003, i) %
                                     static_cast<std::uint64_t>(config_.vocab_size));
    }
  }
  return prompt;
}

}  // namespace speclab
