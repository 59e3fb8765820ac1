#include "text.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace speclab::cli {
namespace {

// The length of the UTF-8 sequence that starts with `lead`, or 0 for a byte that cannot start one.
int sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // a continuation byte, an overlong 2-byte lead (C0, C1) or past U+10FFFF (F5..FF)
}

// Whether `s[0..len)` is one well-formed sequence (Unicode Table 3-7).
bool well_formed(const unsigned char* s, int len) {
  for (int i = 1; i < len; ++i) {
    if ((s[i] & 0xC0) != 0x80) return false;
  }
  if (len == 3) {
    if (s[0] == 0xE0 && s[1] < 0xA0) return false;  // overlong
    if (s[0] == 0xED && s[1] > 0x9F) return false;  // UTF-16 surrogate
  }
  if (len == 4) {
    if (s[0] == 0xF0 && s[1] < 0x90) return false;  // overlong
    if (s[0] == 0xF4 && s[1] > 0x8F) return false;  // past U+10FFFF
  }
  return true;
}

// `word` in quotes for a message: its first 40 bytes or so (cut at a character) and its length
// when it is longer (a 16 MiB word made a 16 MiB message), and a note when it begins with a
// byte-order mark, which a terminal does not show.
std::string quoted_word(std::string_view word) {
  constexpr std::size_t kShown = 40;
  std::string out = "'";
  if (word.size() <= kShown) {
    out += std::string(word) + "'";
  } else {
    std::size_t cut = kShown;
    while (cut > 0 && (static_cast<unsigned char>(word[cut]) & 0xC0) == 0x80) --cut;
    out += std::string(word.substr(0, cut)) + "...' (" + std::to_string(word.size()) + " bytes)";
  }
  if (word.substr(0, 3) == "\xEF\xBB\xBF") out += " (it begins with a byte-order mark, U+FEFF)";
  return out;
}

class TokenIdCodec final : public TextCodec {
 public:
  explicit TokenIdCodec(int vocab) : vocab_(vocab) {}
  std::string name() const override { return "token ids"; }
  bool is_text() const override { return false; }

  std::vector<Token> encode(std::string_view text) const override {
    require_utf8(text, "the prompt");
    std::vector<Token> out;
    size_t i = 0;
    while (i < text.size()) {
      const char c = text[i];
      if (c == ' ' || c == ',' || c == '\t' || c == '\n' || c == '\r') {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < text.size() && text[j] != ' ' && text[j] != ',' && text[j] != '\t' &&
             text[j] != '\n' && text[j] != '\r') {
        ++j;
      }
      const std::string_view word = text.substr(i, j - i);
      long long value = -1;
      const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
      if (ec != std::errc() || end != word.data() + word.size() || value < 0 || value >= vocab_) {
        throw UsageError("the toy target reads token ids, numbers in [0, " +
                         std::to_string(vocab_) +
                         ") separated by spaces (for example \"3 1 4 1 5\"); " + quoted_word(word) +
                         " is not one");
      }
      out.push_back(static_cast<Token>(value));
      i = j;
    }
    return out;
  }

  std::string decode(std::span<const Token> tokens) const override {
    std::string out;
    for (Token t : tokens) {
      out += std::to_string(t);
      out += ' ';
    }
    return out;
  }

  std::vector<Token> system_prompt(std::string_view system) const override {
    return encode(system);
  }
  std::vector<Token> user_turn(std::string_view user) const override { return encode(user); }
  std::vector<Token> close_reply(bool) const override { return {}; }
  std::vector<Token> stop_tokens() const override { return {}; }

 private:
  int vocab_;
};

}  // namespace

std::size_t find_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0;
  while (i < text.size()) {
    const int len = sequence_length(s[i]);
    if (len == 0 || i + static_cast<size_t>(len) > text.size() || !well_formed(s + i, len)) {
      return i;
    }
    i += static_cast<size_t>(len);
  }
  return std::string_view::npos;
}

void require_utf8(std::string_view text, const std::string& what) {
  const size_t bad = find_invalid_utf8(text);
  if (bad == std::string_view::npos) return;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
  throw UsageError(what + " is not valid UTF-8 (byte " + std::to_string(bad) + ": " + hex +
                   "); give text encoded as UTF-8");
}

std::size_t complete_utf8_prefix(std::string_view text) {
  // Look back at most 3 bytes for the lead byte of a character that is still incomplete.
  const size_t n = text.size();
  for (size_t back = 1; back <= std::min<size_t>(3, n); ++back) {
    const auto c = static_cast<unsigned char>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for the lead
    const int len = sequence_length(c);
    return len > static_cast<int>(back) ? n - back : n;
  }
  return n;
}

std::unique_ptr<TextCodec> make_token_id_codec(int vocab_size) {
  return std::make_unique<TokenIdCodec>(vocab_size);
}

TokenPrinter::TokenPrinter(const TextCodec& codec, std::FILE* out, bool color,
                           std::vector<Token> hidden_tokens)
    : codec_(codec), out_(out), color_(color), hidden_(std::move(hidden_tokens)) {}

void TokenPrinter::emit(std::span<const Token> tokens, bool highlighted) {
  std::vector<Token> shown;
  for (Token t : tokens) {
    if (std::find(hidden_.begin(), hidden_.end(), t) == hidden_.end()) shown.push_back(t);
  }
  if (shown.empty()) return;
  held_ += codec_.decode(shown);  // decode is per token: these bytes follow the ones held
  const size_t end = complete_utf8_prefix(held_);
  if (end == 0) return;
  if (highlighted && color_) std::fputs(kHighlight, out_);
  std::fwrite(held_.data(), 1, end, out_);
  if (highlighted && color_) std::fputs(kReset, out_);
  held_.erase(0, end);
}

void TokenPrinter::print_round(const RoundRecord& round) {
  const auto accepted = static_cast<size_t>(
      std::clamp<int>(round.accepted, 0, static_cast<int>(round.emitted.size())));
  const std::span<const Token> emitted(round.emitted);
  emit(emitted.first(accepted), true);
  emit(emitted.subspan(accepted), false);
  std::fflush(out_);
}

void TokenPrinter::finish() {
  std::fwrite(held_.data(), 1, held_.size(), out_);
  held_.clear();
  std::fflush(out_);
}

bool color_wanted(std::FILE* stream) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  return isatty(fileno(stream)) != 0;
}

}  // namespace speclab::cli
