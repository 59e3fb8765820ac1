// The TextCodec of a real model: its GGUF's BPE tokenizer and ChatML chat template.
//
// The template is applied one turn at a time, and tokenized the way llama.cpp tokenizes a whole
// rendered ChatML prompt: the control tokens (<|im_start|>, <|im_end|>) are placed as ids, and
// each stretch of text between two of them is encoded on its own. So a conversation's tokens
// are the same whether it is rendered at once or grown turn by turn, and user text that happens
// to contain "<|im_end|>" stays text instead of ending the turn.
#include <optional>
#include <string>

#include "mini_engine/model/chat_template.h"
#include "mini_engine/model/gguf.h"
#include "mini_engine/model/tokenizer.h"
#include "text.h"

namespace speclab::cli {

namespace {

class ChatMLCodec final : public TextCodec {
 public:
  ChatMLCodec(Tokenizer tokenizer, std::optional<std::string> default_system)
      : tok_(std::move(tokenizer)), default_system_(std::move(default_system)) {
    im_start_ = control("<|im_start|>");
    im_end_ = control("<|im_end|>");
  }
  std::string name() const override { return "BPE tokenizer, ChatML template"; }
  bool is_text() const override { return true; }

  std::vector<Token> encode(std::string_view text) const override {
    require_utf8(text, "the text");
    return tok_.encode(text, /*parse_special=*/false);
  }
  std::string decode(std::span<const Token> tokens) const override {
    return tok_.decode(tokens, /*render_special=*/false);
  }

  // <|im_start|>system\n{system}<|im_end|>\n; with no system message the template's default.
  std::vector<Token> system_prompt(std::string_view system) const override {
    if (system.empty() && !default_system_) return {};
    return block("system", system.empty() ? *default_system_ : std::string(system));
  }
  // <|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n
  std::vector<Token> user_turn(std::string_view user) const override {
    require_utf8(user, "the message");
    std::vector<Token> out = block("user", user);
    out.push_back(im_start_);
    append_text(out, "assistant\n");
    return out;
  }
  // The reply ends with <|im_end|> (emitted by the model, or added here), then "\n".
  std::vector<Token> close_reply(bool stopped) const override {
    std::vector<Token> out;
    if (!stopped) out.push_back(im_end_);
    append_text(out, "\n");
    return out;
  }
  std::vector<Token> stop_tokens() const override { return tok_.stop_tokens(); }

 private:
  Token control(const char* text) const {
    const auto id = tok_.find(text);
    if (!id)
      throw UsageError(std::string("the model's vocabulary has no ") + text +
                       " token, so its chat template is not ChatML");
    return *id;
  }
  void append_text(std::vector<Token>& out, std::string_view text) const {
    const std::vector<Token> ids = tok_.encode(text, /*parse_special=*/false);
    out.insert(out.end(), ids.begin(), ids.end());
  }
  std::vector<Token> block(std::string_view role, std::string_view content) const {
    std::vector<Token> out = {im_start_};
    append_text(out, std::string(role) + "\n" + std::string(content));
    out.push_back(im_end_);
    append_text(out, "\n");
    return out;
  }

  Tokenizer tok_;
  std::optional<std::string> default_system_;
  Token im_start_ = 0;
  Token im_end_ = 0;
};

}  // namespace

std::unique_ptr<TextCodec> make_gguf_codec(const GgufFile& file) {
  Tokenizer tok = [&] {
    try {
      return Tokenizer::from_gguf(file);
    } catch (const TokenizerError& e) {
      throw UsageError(std::string("the model's tokenizer cannot be used: ") + e.what());
    }
  }();
  std::optional<std::string> default_system;
  if (const auto& source = tok.chat_template_source()) {
    try {
      default_system = ChatTemplate::from_source(*source).default_system_prompt();
    } catch (const TokenizerError& e) {
      throw UsageError(std::string("the model's chat template is not supported: ") + e.what());
    }
  }
  return std::make_unique<ChatMLCodec>(std::move(tok), std::move(default_system));
}

}  // namespace speclab::cli
