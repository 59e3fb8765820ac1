#pragma once
// A deterministic, cheap stand-in for a language model, with text whose guessability is known.
#include <cstdint>
#include <string>
#include <vector>

#include "mini_engine/core/target.h"

namespace speclab {

enum class ToyRegime {
  periodic,  // greedy text cycles through a fixed pattern of `period` tokens (noise breaks it)
  markov,    // each token has a few likely successors; `noise` picks a non-top one at random
  random,    // the greedy token at position p is sigma(p) for a seeded permutation sigma: a
             // sequence that starts with make_prompt() never repeats a token, so nothing that
             // copies earlier text can guess it
};

// Parses "periodic" | "markov" | "random"; throws std::invalid_argument naming the valid values.
ToyRegime parse_toy_regime(const std::string& name);
std::string to_string(ToyRegime regime);

struct ToyTargetConfig {
  ToyRegime regime = ToyRegime::periodic;
  int vocab_size = 512;  // >= 8 (random regime: also > the longest sequence you will build)
  std::uint64_t seed = 0;
  int period = 16;      // periodic regime: pattern length, 2 <= period <= vocab_size
  double noise = -1.0;  // chance a position departs from the regime's rule, in [0, 1]; -1 = default
                        // (periodic 0, markov 0.3, random unused)
  int branching = 3;    // markov regime: successors per token, 2..8
  int max_length = 1 << 20;  // context capacity, >= 1
};

// The logits at a position are a pure function of (config, the tokens so far): a handful of
// candidate tokens get finite scores (the regime's choice is the largest) and every other token
// gets -infinity, so probabilities are exact and sparse. extend() costs O(rows * vocab).
class ToyTarget final : public Target {
 public:
  // Throws std::invalid_argument naming the out-of-range field.
  explicit ToyTarget(ToyTargetConfig config);

  std::string name() const override;
  int vocab_size() const override { return config_.vocab_size; }
  int max_length() const override { return config_.max_length; }
  std::span<const Token> tokens() const override { return tokens_; }
  Logits extend(std::span<const Token> tokens) override;
  void truncate(int new_len) override;

  // A prompt of `length` tokens that suits the regime (random: sigma(0..length-1)). Requires
  // length >= 1; throws std::invalid_argument otherwise.
  std::vector<Token> make_prompt(int length) const;
  // The scores for the token after `context` (does not touch the sequence; `context` may be
  // empty). Requires ids in [0, vocab_size()); throws std::invalid_argument when the last one,
  // the only one it reads, is not.
  std::vector<float> logits_after(std::span<const Token> context) const;
  const ToyTargetConfig& config() const { return config_; }

 private:
  Token permute(std::uint64_t x) const;  // the random regime's bijection on [0, vocab_size)
  ToyTargetConfig config_;
  std::vector<Token> pattern_;      // periodic regime
  std::vector<int> pattern_index_;  // token -> index in pattern_, or -1
  std::vector<Token> tokens_;
};

}  // namespace speclab
