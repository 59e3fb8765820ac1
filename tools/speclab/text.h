#pragma once
// How text becomes tokens and back, for the CLI. A real model has a tokenizer and a chat
// template; the toy target has neither, so its "text" is token ids written as numbers.
#include <cstdio>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "mini_engine/core/printable.h"  // printable(), which UsageError applies
#include "mini_engine/core/token.h"
#include "mini_engine/spec/round.h"

namespace speclab {
class GgufFile;
}

namespace speclab::cli {

// Bad input from the user (a flag value, a prompt, a file): the CLI prints the message and
// exits with status 2. Anything else that goes wrong exits with status 1. The message is kept
// printable(): it often quotes what the user typed.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(std::string_view message) : std::runtime_error(printable(message)) {}
};

// The byte offset of the first invalid UTF-8 sequence in `text` (overlong forms, surrogates
// and code points past U+10FFFF count as invalid), or npos when `text` is valid UTF-8.
std::size_t find_invalid_utf8(std::string_view text);

// Throws UsageError("<what> is not valid UTF-8 (byte N: 0xXX)") when `text` is not valid UTF-8.
void require_utf8(std::string_view text, const std::string& what);

// The length of the longest prefix of `text` that does not end inside a multi-byte UTF-8
// character: what a streaming printer may print now without splitting a character.
std::size_t complete_utf8_prefix(std::string_view text);

// Text <-> tokens for one model, plus its chat template. Implementations are stateless.
class TextCodec {
 public:
  virtual ~TextCodec() = default;
  // "token ids" for the toy target, the tokenizer's name for a real model.
  virtual std::string name() const = 0;
  // True when the model reads real text; false when "text" means token ids (the toy target).
  virtual bool is_text() const = 0;

  // The tokens of `text` with no template around it. Throws UsageError on text the codec
  // cannot read (invalid UTF-8, or for the toy: something that is not a list of token ids).
  virtual std::vector<Token> encode(std::string_view text) const = 0;
  // The text of `tokens`, token by token: decode(a + b) == decode(a) + decode(b), so a stream
  // can be decoded a round at a time (a character's bytes may still be split between rounds).
  virtual std::string decode(std::span<const Token> tokens) const = 0;

  // The chat template, one turn at a time, so a conversation's tokens only ever grow:
  //   system_prompt(s)  the conversation's opening (may be empty)
  //   user_turn(u)      one user message followed by the header that starts the reply
  //   close_reply(...)  what follows the model's reply tokens to end its turn
  virtual std::vector<Token> system_prompt(std::string_view system) const = 0;
  virtual std::vector<Token> user_turn(std::string_view user) const = 0;
  // `stopped` tells whether the reply already ends with a stop token.
  virtual std::vector<Token> close_reply(bool stopped) const = 0;
  // Tokens that end a reply (the end-of-turn token); empty when nothing does.
  virtual std::vector<Token> stop_tokens() const = 0;
};

// The toy target's codec: text is token ids separated by spaces or commas ("3 1 4 1 5"), each
// in [0, vocab). The chat template is plain concatenation, and nothing stops a reply.
std::unique_ptr<TextCodec> make_token_id_codec(int vocab_size);

// The codec of a real model, from its GGUF: the BPE tokenizer and the ChatML chat template (the
// template's default system prompt opens a conversation that has none). Throws UsageError when
// the file's tokenizer or template is missing or not supported.
std::unique_ptr<TextCodec> make_gguf_codec(const GgufFile& file);

// Prints generated tokens as they arrive. With color on, tokens that came from accepted drafts
// are highlighted, so a reader sees where speculation paid. Stop tokens are not printed.
class TokenPrinter {
 public:
  // `out` and `codec` must outlive the printer.
  TokenPrinter(const TextCodec& codec, std::FILE* out, bool color,
               std::vector<Token> hidden_tokens = {});
  // Prints one round's emitted tokens: round.emitted[0..accepted) highlighted, the rest plain.
  void print_round(const RoundRecord& round);
  // Prints whatever was held back (an incomplete UTF-8 character at the very end).
  void finish();

  static constexpr const char* kHighlight = "\x1b[1;32m";  // bold green
  static constexpr const char* kReset = "\x1b[0m";

 private:
  void emit(std::span<const Token> tokens, bool highlighted);
  const TextCodec& codec_;
  std::FILE* out_;
  bool color_;
  std::vector<Token> hidden_;
  std::string held_;  // decoded bytes not written yet: an incomplete trailing character
};

// True when `stream` is a terminal and the NO_COLOR convention (https://no-color.org) is off.
bool color_wanted(std::FILE* stream);

}  // namespace speclab::cli
