// The CLI's text layer: UTF-8 checks, the toy target's token-id codec, the streaming printer.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mini_engine/core/plural.h"
#include "text.h"

using namespace speclab;
using namespace speclab::cli;

namespace {
// Everything `print` writes to a FILE*, as a string.
template <class F>
std::string capture(F&& print) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  print(f);
  std::fflush(f);
  std::rewind(f);
  std::string out;
  int c;
  while ((c = std::fgetc(f)) != EOF) out += static_cast<char>(c);
  std::fclose(f);
  return out;
}

// A codec whose tokens are byte strings (token t is pieces[t]), counting the tokens it decodes.
class PieceCodec final : public TextCodec {
 public:
  explicit PieceCodec(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {}
  std::string name() const override { return "pieces"; }
  bool is_text() const override { return true; }
  std::vector<Token> encode(std::string_view) const override { return {}; }
  std::string decode(std::span<const Token> tokens) const override {
    decoded_ += static_cast<std::int64_t>(tokens.size());
    std::string out;
    for (Token t : tokens) out += pieces_.at(static_cast<std::size_t>(t));
    return out;
  }
  std::vector<Token> system_prompt(std::string_view) const override { return {}; }
  std::vector<Token> user_turn(std::string_view) const override { return {}; }
  std::vector<Token> close_reply(bool) const override { return {}; }
  std::vector<Token> stop_tokens() const override { return {}; }
  std::int64_t decoded() const { return decoded_; }

 private:
  std::vector<std::string> pieces_;
  mutable std::int64_t decoded_ = 0;
};

RoundRecord round_of(std::vector<Token> emitted, int accepted) {
  RoundRecord r;
  r.emitted = std::move(emitted);
  r.accepted = accepted;
  return r;
}
}  // namespace

TEST_SUITE("cli / text") {
  TEST_CASE("valid UTF-8 passes and the first bad byte is found") {
    CHECK(find_invalid_utf8("plain ascii") == std::string_view::npos);
    CHECK(find_invalid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == std::string_view::npos);
    CHECK(find_invalid_utf8("ab\xFF") == 2);            // never a valid byte
    CHECK(find_invalid_utf8("a\xC3") == 1);             // truncated 2-byte sequence
    CHECK(find_invalid_utf8("\xC0\xAF") == 0);          // overlong '/'
    CHECK(find_invalid_utf8("x\xE0\x80\xAF") == 1);     // overlong 3-byte form
    CHECK(find_invalid_utf8("\xED\xA0\x80") == 0);      // a UTF-16 surrogate
    CHECK(find_invalid_utf8("\xF4\x90\x80\x80") == 0);  // past U+10FFFF
    CHECK(find_invalid_utf8("ok\x80") == 2);            // a stray continuation byte
  }

  TEST_CASE("require_utf8 names what was invalid and where") {
    CHECK_THROWS_WITH_AS(require_utf8("ab\xFE", "the prompt"),
                         doctest::Contains("the prompt is not valid UTF-8 (byte 2: 0xFE)"),
                         UsageError);
    CHECK_NOTHROW(require_utf8("fine", "the prompt"));
  }

  TEST_CASE("a streaming printer holds back only an incomplete trailing character") {
    CHECK(complete_utf8_prefix("abc") == 3);
    CHECK(complete_utf8_prefix("ab\xC3") == 2);
    CHECK(complete_utf8_prefix("ab\xC3\xA9") == 4);
    CHECK(complete_utf8_prefix("a\xF0\x9F\x98") == 1);
    CHECK(complete_utf8_prefix("a\xF0\x9F\x98\x80") == 5);
    CHECK(complete_utf8_prefix("") == 0);
  }

  TEST_CASE("the toy codec reads token ids and rejects anything else") {
    auto codec = make_token_id_codec(100);
    CHECK(codec->encode("3 1, 4\t1\n5") == std::vector<Token>{3, 1, 4, 1, 5});
    CHECK(codec->decode(std::vector<Token>{7, 8}) == "7 8 ");
    CHECK_THROWS_WITH_AS(codec->encode("1 two 3"), doctest::Contains("'two' is not one"),
                         UsageError);
    CHECK_THROWS_WITH_AS(codec->encode("100"), doctest::Contains("[0, 100)"), UsageError);
    CHECK_THROWS_AS(codec->encode("-1"), UsageError);
    // A long word is shown in part, with its length: a 16 MiB word made a 16 MiB message.
    const std::string long_word = "é" + std::string(99999, '7');  // 100001 bytes
    try {
      codec->encode("1 " + long_word);
      FAIL("no error");
    } catch (const UsageError& e) {
      const std::string what = e.what();
      CHECK(what.size() < 300);
      CHECK(what.find("'\xC3\xA9"
                      "77777") != std::string::npos);
      CHECK(what.find("...' (100001 bytes) is not one") != std::string::npos);
    }
    // A byte-order mark, which a terminal does not show, is named.
    CHECK_THROWS_WITH_AS(codec->encode("\xEF\xBB\xBF"
                                       "1 2"),
                         doctest::Contains("(it begins with a byte-order mark, U+FEFF) is not one"),
                         UsageError);
    CHECK(codec->encode("   ").empty());
    CHECK(codec->stop_tokens().empty());
  }

  TEST_CASE("accepted draft tokens are highlighted and the rest is plain") {
    auto codec = make_token_id_codec(100);
    const std::string out = capture([&](std::FILE* f) {
      TokenPrinter p(*codec, f, true);
      p.print_round(round_of({5}, 0));        // a plain step
      p.print_round(round_of({6, 7, 8}, 2));  // two accepted drafts, then the correction
      p.finish();
    });
    const std::string on = TokenPrinter::kHighlight;
    const std::string off = TokenPrinter::kReset;
    CHECK(out == "5 " + on + "6 7 " + off + "8 ");
  }

  TEST_CASE("without color the printer writes the text alone and hides stop tokens") {
    auto codec = make_token_id_codec(100);
    const std::string out = capture([&](std::FILE* f) {
      TokenPrinter p(*codec, f, false, {99});
      p.print_round(round_of({6, 7, 8}, 2));
      p.print_round(round_of({9, 99}, 1));
      p.finish();
    });
    CHECK(out == "6 7 8 9 ");
  }

  TEST_CASE("a character split across rounds is printed whole, once, and nothing is lost") {
    // "é" is C3 A9: its two bytes come from two tokens in two rounds.
    const PieceCodec codec({"a", "\xC3", "\xA9", "b"});
    std::string after_first;
    const std::string out = capture([&](std::FILE* f) {
      TokenPrinter p(codec, f, false);
      p.print_round(round_of({0, 1}, 0));
      std::fflush(f);
      after_first = std::to_string(std::ftell(f));
      p.print_round(round_of({2, 3}, 1));
      p.print_round(round_of({1}, 0));  // a lead byte the text ends on: finish() prints it
      p.finish();
    });
    CHECK(after_first == "1");  // "a" only: the lead byte waits for the rest of its character
    CHECK(out ==
          "a\xC3\xA9"
          "b\xC3");  // (split: \xA9b would be one escape)
  }

  TEST_CASE("each round decodes only its own tokens, not the whole reply again") {
    // Re-decoding everything shown so far made a long reply cost O(n^2) in the printer, which
    // `speclab generate` counts in its stats line's time.
    const PieceCodec codec({"x", "y"});
    constexpr int kRounds = 2000;
    const std::string out = capture([&](std::FILE* f) {
      TokenPrinter p(codec, f, false);
      for (int i = 0; i < kRounds; ++i) p.print_round(round_of({i % 2}, 0));
      p.finish();
    });
    CHECK(out.size() == static_cast<std::size_t>(kRounds));
    CHECK(codec.decoded() <= kRounds);
  }
}

TEST_CASE("plural: a count and its noun, singular for one") {
  CHECK(plural(1, "token") == "1 token");
  CHECK(plural(0, "token") == "0 tokens");
  CHECK(plural(2, "token") == "2 tokens");
  CHECK(plural(std::int64_t{1} << 40, "target run") == "1099511627776 target runs");
  CHECK(plural(std::size_t{1}, "drafter setting") == "1 drafter setting");
  CHECK(plural(1L, "repeat") == "1 repeat");
  // A noun that does not take an s: its plural given.
  CHECK(plural(1, "die", "dice") == "1 die");
  CHECK(plural(2, "die", "dice") == "2 dice");
}
