#pragma once
// The ChatML chat template SmolLM2 was fine-tuned with. A conversation is rendered as
//
//   <|im_start|>system\n{system prompt}<|im_end|>\n      (only if the first message is not
//                                                          "system": the model's default prompt)
//   <|im_start|>{role}\n{content}<|im_end|>\n             (each message, in order)
//   <|im_start|>assistant\n                               (add_generation_prompt: the model's cue)
//
// and then tokenized with special-token parsing on, as llama.cpp does, so <|im_start|> and
// <|im_end|> become their control ids. The model ends its turn by emitting <|im_end|>, which is
// why that token is in Tokenizer::stop_tokens().
//
// This is not a Jinja interpreter. ChatTemplate::from_source() recognizes the ChatML family of
// templates (the one in SmolLM2's GGUF, tokenizer.chat_template) and reads the default system
// prompt out of it; any other template is rejected with TokenizerError rather than rendered wrong.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mini_engine/model/tokenizer.h"

namespace speclab {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant" (any text is rendered as given)
  std::string content;
};

class ChatTemplate {
 public:
  // ChatML with the given default system prompt (nullopt: none is inserted).
  static ChatTemplate chatml(std::optional<std::string> default_system_prompt);
  // Recognizes a ChatML Jinja template such as SmolLM2's. Throws TokenizerError naming
  // tokenizer.chat_template when `source` is not one.
  static ChatTemplate from_source(std::string_view source);

  // The prompt text for `messages`. As in the Jinja original: the default system prompt is
  // inserted before the first message when that message's role is not "system" (so an empty
  // conversation gets none), and add_generation_prompt appends "<|im_start|>assistant\n".
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  const std::optional<std::string>& default_system_prompt() const { return default_system_; }

 private:
  std::optional<std::string> default_system_;
};

// SmolLM2's default system prompt, as its template states it.
inline constexpr std::string_view kSmolLM2DefaultSystemPrompt =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

// The token ids of the rendered conversation: template.render(...) encoded with special-token
// parsing on. Note that this also turns "<|im_end|>" typed *inside* a message into the control
// token, exactly as llama.cpp and Hugging Face do; strip it from untrusted content if that matters.
// Throws what Tokenizer::encode throws (std::invalid_argument for a message holding bytes that
// decode above U+10FFFF).
std::vector<Token> render_chat(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                               std::span<const ChatMessage> messages, bool add_generation_prompt);
// Same, with the template read from the tokenizer's GGUF (tokenizer.chat_template). Throws
// TokenizerError naming the key when the file has no template or it is not ChatML.
std::vector<Token> render_chat(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt);

}  // namespace speclab
