#include "mini_engine/model/chat_template.h"

namespace speclab {
namespace {

constexpr std::string_view kKey = "tokenizer.chat_template";

[[noreturn]] void reject(const std::string& why) {
  throw TokenizerError("chat template (" + std::string(kKey) + "): " + why);
}

bool contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

// A Jinja string literal may spell a newline as a real newline or as the escape "\n".
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

ChatTemplate ChatTemplate::chatml(std::optional<std::string> default_system_prompt) {
  ChatTemplate t;
  t.default_system_ = std::move(default_system_prompt);
  return t;
}

ChatTemplate ChatTemplate::from_source(std::string_view source) {
  for (std::string_view marker : {"<|im_start|>", "<|im_end|>", "message['role']",
                                  "message['content']", "add_generation_prompt"}) {
    if (!contains(source, marker)) {
      reject("not a ChatML template (no " + std::string(marker) + "); only ChatML is supported");
    }
  }
  // The default system prompt is the literal text of a system turn that the template writes
  // itself; it must be guarded by "first message is not a system message", as in SmolLM2's.
  std::optional<std::string> system;
  for (std::string_view head : {"<|im_start|>system\n", "<|im_start|>system\\n"}) {
    const std::size_t at = source.find(head);
    if (at == std::string_view::npos) continue;
    const std::size_t begin = at + head.size();
    const std::size_t end = source.find("<|im_end|>", begin);
    if (end == std::string_view::npos) reject("the built-in system turn has no <|im_end|>");
    if (!contains(source, "messages[0]['role'] != 'system'")) {
      reject("it writes a system turn of its own under a condition this renderer does not know");
    }
    system = unescape(source.substr(begin, end - begin));
    break;
  }
  return chatml(std::move(system));
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages,
                                 bool add_generation_prompt) const {
  std::string out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i == 0 && default_system_ && messages[0].role != "system") {
      out += "<|im_start|>system\n" + *default_system_ + "<|im_end|>\n";
    }
    out += "<|im_start|>" + messages[i].role + "\n" + messages[i].content + "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::vector<Token> render_chat(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                               std::span<const ChatMessage> messages, bool add_generation_prompt) {
  return tokenizer.encode(chat_template.render(messages, add_generation_prompt),
                          /*parse_special=*/true);
}

std::vector<Token> render_chat(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt) {
  const auto& source = tokenizer.chat_template_source();
  if (!source) reject("the key is missing from the model file");
  return render_chat(tokenizer, ChatTemplate::from_source(*source), messages,
                     add_generation_prompt);
}

}  // namespace speclab
