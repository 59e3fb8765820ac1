#pragma once
// The one interface every model implements: the ToyTarget, CpuLlama and CudaLlama alike.
#include <span>
#include <string>

#include "mini_engine/core/logits.h"
#include "mini_engine/core/token.h"

namespace speclab {

// A Target holds one sequence (its KV cache, for a real model) and turns appended tokens into
// logits. Not copyable: it owns model state that is expensive or impossible to duplicate.
// Not thread-safe: call one Target from one thread at a time (a real model runs its own worker
// threads inside a call). Separate Targets are independent.
class Target {
 public:
  Target() = default;
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;
  virtual ~Target() = default;

  virtual std::string name() const = 0;
  virtual int vocab_size() const = 0;
  // The most tokens the sequence may hold.
  virtual int max_length() const = 0;
  // The tokens currently in the sequence, oldest first. The span points into the Target: valid
  // until the next extend(), append() or truncate().
  virtual std::span<const Token> tokens() const = 0;
  int length() const { return static_cast<int>(tokens().size()); }

  // Appends `tokens` to the sequence in one pass and returns tokens.size() rows: row i scores the
  // token that follows tokens[i] (given everything before it).
  // Requires non-empty `tokens`, every id in [0, vocab_size()).
  // Throws std::invalid_argument for no tokens or a bad id and ContextOverflow past max_length();
  // in every case the sequence is left unchanged.
  virtual Logits extend(std::span<const Token> tokens) = 0;

  // Appends `tokens` like extend() but computes no logits: a prefill whose scores nobody reads.
  // Same requirements and errors as extend(), and the same sequence afterwards. The default
  // calls extend() and drops the rows; a real model overrides it to skip the output projection
  // (a fifth of SmolLM2's work per token) and the rows x vocab result.
  virtual void append(std::span<const Token> tokens) { extend(tokens); }

  // Rolls the sequence back to its first `new_len` tokens, so rejected drafts leave no trace.
  // Requires 0 <= new_len <= length(); throws std::out_of_range otherwise.
  virtual void truncate(int new_len) = 0;
};

}  // namespace speclab
