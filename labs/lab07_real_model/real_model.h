#pragma once
// Lab 07 -- your drafter on a real LLM. The chapter: book/lab07_real_model.md
//
// You write the glue that turns the drafters you built in labs 01-05 into a good drafter for a
// chat model (SmolLM2-135M-Instruct): the four pieces marked (lab 07) below, in starter.cpp.
// make_my_drafter() builds on YOUR OWN lab 01-05 code: with LAB_IMPL=starter this lab links your
// starters of those labs, with LAB_IMPL=solution the reference ones (labs/CMakeLists.txt,
// LAB_DEPS). The CLI runs the result as `--drafter mine`.
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini_engine/core/token.h"
#include "mini_engine/spec/drafter.h"
#include "mini_engine/spec/round.h"

namespace speclab {

// SmolLM2's end-of-generation tokens: 0 <|endoftext|> and 2 <|im_end|> (the end of a ChatML
// turn). Tokenizer::stop_tokens() gives them for any model; the CLI passes those.
inline const std::vector<Token> kSmolLM2StopTokens = {0, 2};

// --8<-- [start:stop_at_end_of_turn]
// (lab 07) `drafts` cut right after the first token that is in `stop_tokens`: that token is kept
// (the target may well accept it, and the reply then ends in this round), everything after it
// is dropped (the loop stops at the end of the turn, so those drafts could never be emitted and
// would only make the verify pass longer). Drafts without a stop token come back unchanged.
std::vector<Token> stop_at_end_of_turn(std::span<const Token> drafts,
                                       std::span<const Token> stop_tokens);
// --8<-- [end:stop_at_end_of_turn]

// --8<-- [start:DraftLengthController]
// Adapts the draft length to recent acceptance, within [k_min, k_max]. It starts at k_max.
// After each round, observe(drafted, accepted):
//   - drafted == 0 (the drafter had nothing to say): no change;
//   - every draft accepted: k grows by one, up to k_max (the text is copying: draft further);
//   - otherwise: k becomes accepted + 1, kept within [k_min, k_max] (draft about as far as the
//     last round got, plus the one token that would have been the correction; a round may have
//     accepted more than k_max when something else chose its length).
// The rule is deliberately simple: it reacts within one round both ways.
class DraftLengthController {
 public:
  // Throws std::invalid_argument unless 1 <= k_min <= k_max <= 64.
  DraftLengthController(int k_min, int k_max) : k_min_(k_min), k_max_(k_max), k_(k_max) {
    if (k_min < 1 || k_min > k_max || k_max > 64) {
      throw std::invalid_argument(
          "DraftLengthController: need 1 <= k_min <= k_max <= 64, got k_min=" +
          std::to_string(k_min) + " k_max=" + std::to_string(k_max));
    }
  }
  int next_k() const { return k_; }
  int k_min() const { return k_min_; }
  int k_max() const { return k_max_; }
  // (lab 07) Updates next_k() as described above. Throws std::invalid_argument when
  // drafted < 0, accepted < 0 or accepted > drafted.
  void observe(int drafted, int accepted);

 private:
  int k_min_;
  int k_max_;
  int k_;
};
// --8<-- [end:DraftLengthController]

// --8<-- [start:ChatDrafter]
struct ChatDrafterConfig {
  std::vector<Token> stop_tokens = kSmolLM2StopTokens;  // never draft past one of these
  bool adaptive_k = true;  // steer the draft length with a DraftLengthController
  int k_min = 1;           // its bounds
  int k_max = 8;
};

// Wraps an inner drafter (yours, from labs 01-05) with what a chat model needs. It checks no
// token ids itself; a call the inner drafter refuses (a negative id: std::invalid_argument, see
// Drafter) passes the refusal on and leaves the ChatDrafter as it was, the controller included.
class ChatDrafter final : public Drafter {
 public:
  // Throws std::invalid_argument for a null inner drafter or bad k bounds.
  ChatDrafter(std::unique_ptr<Drafter> inner, ChatDrafterConfig config)
      : inner_(std::move(inner)),
        config_(std::move(config)),
        controller_(config_.k_min, config_.k_max) {
    if (!inner_) throw std::invalid_argument("ChatDrafter: no inner drafter given");
  }
  std::string name() const override {
    return "chat(" + std::string(config_.adaptive_k ? "adaptive k, " : "") + inner_->name() + ")";
  }
  // (lab 07) Starts a reply. `prompt` is the WHOLE conversation so far -- system prompt, earlier
  // turns, the chat template's control tokens and the "assistant\n" cue -- and the inner drafter
  // must index all of it: that is where a chat reply copies from. Then, once the inner drafter
  // has accepted the prompt, resets the controller to k_max.
  void begin(std::span<const Token> prompt) override;
  // (lab 07) Asks the inner drafter for min(k, controller's next_k()) tokens when adaptive_k
  // (else for k) on the whole `context`, and returns its proposal cut by stop_at_end_of_turn at
  // config().stop_tokens. The tests check the k the inner drafter is given: asking it for k
  // and cutting afterwards spends drafting time on tokens that are thrown away.
  std::vector<Token> propose(std::span<const Token> context, int k) override;
  // (lab 07) Passes the round on to the inner drafter, and then, once it has accepted the round,
  // to the controller when adaptive_k.
  void observe(std::span<const Token> context, const RoundRecord& round) override;

  const DraftLengthController& controller() const { return controller_; }
  Drafter& inner() { return *inner_; }
  const ChatDrafterConfig& config() const { return config_; }

 private:
  std::unique_ptr<Drafter> inner_;
  ChatDrafterConfig config_;
  DraftLengthController controller_;
};
// --8<-- [end:ChatDrafter]

// --8<-- [start:make_my_drafter]
struct MyDrafterOptions {
  int k = 5;  // the drafts per round the loop will ask for (an n-gram pool sizes its values by it)
  std::vector<Token> stop_tokens = kSmolLM2StopTokens;
};

// (lab 07) Your drafter for a chat model: your own lab 01-05 drafter(s), composed and configured
// as you see fit, wrapped in a ChatDrafter. Never returns null. The tests require it to
//  - be lossless (it is, if it keeps the Drafter contract);
//  - stop its drafts at options.stop_tokens (pass them on to the ChatDrafter's config);
//  - draft as far as the loop's k when the copy goes that far: set the ChatDrafter's k_max to
//    options.k (the config's default, 8, would cap every draft when the loop asks for more);
//  - copy from the prompt: given a prompt that holds an earlier answer, and a context that
//    repeats the start of it, it drafts the answer's next tokens (begin() indexes the prompt);
//  - reach the acceptance length stated in tests/lab07/test_model.cpp on the code-editing
//    workload.
std::unique_ptr<Drafter> make_my_drafter(const MyDrafterOptions& options);
// --8<-- [end:make_my_drafter]

}  // namespace speclab
