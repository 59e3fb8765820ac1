// The tokenizer and chat template. Two kinds of cases:
//  - on small synthetic GGUF files (always run): loading errors, the BPE merge order, specials;
//  - on the real SmolLM2 file, replaying what llama.cpp produced for the same inputs
//    (tests/fixtures/tokenizer_smollm2.json, written by tools/oracle/make_tokenizer_fixtures.py).
//    These report SKIPPED when the model file is absent (see tests/support/model_path.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gguf_writer.h"
#include "mini_engine/model/chat_template.h"
#include "mini_engine/model/gguf.h"
#include "mini_engine/model/tokenizer.h"
#include "mini_engine/model/unicode.h"
#include "model_path.h"
#include "test_util.h"

using namespace speclab;
using nlohmann::json;
using speclab::testing::GgufWriter;

namespace {

// ---- helpers ------------------------------------------------------------------------------------

std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::vector<Token> ids_of(const json& j) { return j.get<std::vector<Token>>(); }

const json& fixture() {
  static const json j = [] {
    std::ifstream in(SPECLAB_FIXTURES_DIR "/tokenizer_smollm2.json");
    REQUIRE_MESSAGE(in.good(), "cannot open tests/fixtures/tokenizer_smollm2.json");
    return json::parse(in);
  }();
  return j;
}

// The real model's tokenizer, or SKIPPED when the file is not there.
const Tokenizer& smollm2() {
  static const Tokenizer t = [] {
    const auto path = speclab::testing::find_smollm2();
    if (!path) {
      speclab::testing::skip("SmolLM2 GGUF not found: set SPECLAB_MODEL or run tools/fetch_model");
    }
    return Tokenizer::from_gguf(GgufFile::open(*path));
  }();
  return t;
}

// A tiny byte-level vocabulary: the stand-ins for 'a' 'b' 'c' ' ' (Ġ) '1' and a few merges.
struct ToyVocab {
  std::vector<std::string> tokens{"<|end|>", "a",  "b",  "c",  "Ġ",   "1",
                                  "ab",      "bc", "aa", "Ġa", "abc", "<|user|>"};
  std::vector<std::int32_t> types{3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4};
  std::vector<std::string> merges{"b c", "a b", "a a", "Ġ a", "a bc"};
  bool with_model = true, with_pre = true, with_tokens = true, with_merges = true;
  bool eos_as_float = false;                    // eos_token_id written as a float32
  std::function<void(GgufWriter&)> extra_keys;  // more metadata, when set
  std::string pre = "smollm";
  std::string model = "gpt2";  // tokenizer.ggml.model

  std::vector<std::uint8_t> build() const {
    GgufWriter w;
    w.kv_string("general.architecture", "llama");
    if (with_model) w.kv_string("tokenizer.ggml.model", model);
    if (with_pre) w.kv_string("tokenizer.ggml.pre", pre);
    if (with_tokens) w.kv_strings("tokenizer.ggml.tokens", tokens);
    w.kv_i32s("tokenizer.ggml.token_type", types);
    if (with_merges) w.kv_strings("tokenizer.ggml.merges", merges);
    if (eos_as_float) {
      w.kv_f32("tokenizer.ggml.eos_token_id", 3.0f);
    } else {
      w.kv_u32("tokenizer.ggml.eos_token_id", 0);
    }
    if (extra_keys) extra_keys(w);
    return w.build();
  }
  Tokenizer load() const {
    const auto bytes = build();
    return Tokenizer::from_gguf(GgufFile::parse(bytes));
  }
};

std::string load_error(const ToyVocab& v) {
  try {
    v.load();
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// =================================================================================================
TEST_SUITE("tokenizer / loading the vocabulary") {
  TEST_CASE("a GGUF without tokenizer keys is rejected naming the missing key") {
    ToyVocab v;
    v.with_model = false;
    CHECK(load_error(v) ==
          "<memory>: tokenizer key 'tokenizer.ggml.model' is missing: this file "
          "carries no usable tokenizer");
    v = ToyVocab{};
    v.with_tokens = false;
    CHECK_MESSAGE(load_error(v).find("'tokenizer.ggml.tokens' is missing") != std::string::npos,
                  load_error(v));
    v = ToyVocab{};
    v.with_merges = false;
    CHECK_MESSAGE(load_error(v).find("'tokenizer.ggml.merges' is missing") != std::string::npos,
                  load_error(v));
  }

  TEST_CASE("a tokenizer model other than gpt2 is refused rather than read as byte-level BPE") {
    // tokenizer.h: from_gguf requires tokenizer.ggml.model = "gpt2". A SentencePiece vocabulary
    // ("llama") stores its tokens with another convention; encoding it as byte-level BPE would
    // give ids the model never saw.
    ToyVocab v;
    v.model = "llama";
    CHECK_MESSAGE(
        load_error(v).find("'tokenizer.ggml.model' = 'llama': only 'gpt2'") != std::string::npos,
        load_error(v));
  }

  TEST_CASE("an unknown pre-tokenizer is refused rather than silently split differently") {
    ToyVocab v;
    v.pre = "llama3";
    CHECK_MESSAGE(load_error(v).find("tokenizer.ggml.pre' = 'llama3'") != std::string::npos,
                  load_error(v));
  }

  TEST_CASE("text from the file in a message is printable and cut short when it runs on") {
    // As GgufError and ModelError: a corrupt file's strings may hold escape sequences, or run on
    // for megabytes (a length field that swallows the rest of the file).
    ToyVocab v;
    v.pre = "\x1b[31m" + std::string(1 << 20, 'p');
    std::string err = load_error(v);
    INFO(err.substr(0, 300));
    CHECK(err.size() < 400);
    CHECK(err.find("tokenizer.ggml.pre' = '\\x1B[31mppp") != std::string::npos);
    CHECK(err.find("... (1048581 bytes in all)': only the 'smollm' pre-tokenizer") !=
          std::string::npos);
    v = ToyVocab{};
    v.merges.push_back("a\x07 " + std::string(1 << 20, 'q'));
    err = load_error(v);
    CHECK(err.size() < 400);
    CHECK(err.find("entry 5 'a\\x07 qqq") != std::string::npos);
    CHECK(err.find("... (1048579 bytes in all)' has a part that is not a token") !=
          std::string::npos);
  }

  TEST_CASE("a merge whose parts or result are not tokens is named in the error") {
    ToyVocab v;
    v.merges.push_back("c c");
    CHECK_MESSAGE(load_error(v).find("entry 5 'c c' merges into a string that is not a token") !=
                      std::string::npos,
                  load_error(v));
    v = ToyVocab{};
    v.merges.push_back("nope");
    CHECK_MESSAGE(load_error(v).find("'nope' is not of the form") != std::string::npos,
                  load_error(v));
  }

  TEST_CASE("a token type outside GGUF's 0..6 is named rather than read as undefined") {
    ToyVocab v;
    v.types[2] = 9;
    CHECK_MESSAGE(load_error(v).find("entry 2 is 9, not a token type (0 undefined, 1 normal, 2 "
                                     "unknown, 3 control, 4 user-defined, 5 unused, 6 byte)") !=
                      std::string::npos,
                  load_error(v));
    v.types[2] = -1;
    CHECK_MESSAGE(load_error(v).find("entry 2 is -1, not a token type") != std::string::npos,
                  load_error(v));
  }

  TEST_CASE("an optional key of the wrong type is named, not read as 0 or left out") {
    // tokenizer.h: from_gguf throws TokenizerError naming a key that is missing or malformed.
    // A float eos_token_id was read as id 0 (the wrong stop token, silently), a non-string
    // chat template was dropped (render_chat then called the key missing) and a string
    // add_bos_token read as false.
    ToyVocab v;
    v.eos_as_float = true;
    CHECK_MESSAGE(
        load_error(v).find("'tokenizer.ggml.eos_token_id' is not an integer") != std::string::npos,
        load_error(v));
    v.eos_as_float = false;
    v.extra_keys = [](GgufWriter& w) { w.kv_u32("tokenizer.chat_template", 7); };
    CHECK_MESSAGE(
        load_error(v).find("'tokenizer.chat_template' has the wrong type") != std::string::npos,
        load_error(v));
    v.extra_keys = [](GgufWriter& w) { w.kv_string("tokenizer.ggml.add_bos_token", "true"); };
    CHECK_MESSAGE(load_error(v).find("'tokenizer.ggml.add_bos_token' has the wrong type") !=
                      std::string::npos,
                  load_error(v));
    v.extra_keys = [](GgufWriter& w) {
      w.kv_string("tokenizer.chat_template", "<|im_start|>");
      w.kv_u32("tokenizer.ggml.add_bos_token", 1);
    };
    const Tokenizer t = v.load();  // well-typed optional keys still load
    CHECK(t.chat_template_source() == std::optional<std::string>("<|im_start|>"));
    CHECK(t.wants_bos());
  }

  TEST_CASE("token kinds ids and stop tokens come from the metadata") {
    const Tokenizer t = ToyVocab{}.load();
    CHECK(t.vocab_size() == 12);
    CHECK(t.kind(0) == TokenKind::Control);
    CHECK(t.kind(11) == TokenKind::UserDefined);
    CHECK(t.find("Ġa") == std::optional<Token>(9));
    CHECK(t.find("zz") == std::nullopt);
    CHECK(t.eos() == std::optional<Token>(0));
    CHECK(t.bos() == std::nullopt);
    CHECK(t.stop_tokens() == std::vector<Token>{0});
    CHECK_FALSE(t.wants_bos());
  }
}

// =================================================================================================
TEST_SUITE("tokenizer / byte-level BPE") {
  TEST_CASE("the pair with the lowest merge rank merges first wherever it is") {
    const Tokenizer t = ToyVocab{}.load();
    // "b c" (rank 0) beats "a b" (rank 1): abc -> a + bc, then "a bc" (rank 4) -> abc.
    CHECK(t.encode("abc") == std::vector<Token>{10});
    // "abab": both "a b" pairs merge; nothing merges "ab ab".
    CHECK(t.encode("abab") == std::vector<Token>{6, 6});
    // In "cabc", "b c" (rank 0) merges before "a b" (rank 1) could: c a bc -> c abc.
    CHECK(t.encode("cabc") == std::vector<Token>{3, 10});
  }

  TEST_CASE("among equal ranks the leftmost pair merges first") {
    const Tokenizer t = ToyVocab{}.load();
    CHECK(t.encode("aaa") == std::vector<Token>{8, 1});
    CHECK(t.encode("aaaaa") == std::vector<Token>{8, 8, 1});
  }

  TEST_CASE("a leading space is part of the word and merges with it") {
    const Tokenizer t = ToyVocab{}.load();
    CHECK(t.encode("a a") == std::vector<Token>{1, 9});
  }

  TEST_CASE("bytes whose symbol is not in the vocabulary are dropped as llama.cpp drops them") {
    const Tokenizer t = ToyVocab{}.load();
    CHECK(t.encode("axb") == std::vector<Token>{1, 2});
  }

  TEST_CASE("a byte with no token of its own falls back to the one-byte tokens of its symbol") {
    // Byte 0x04 stands for U+0104 (UTF-8 C4 84). With no token for U+0104 but tokens "\xC4" and
    // "\x84" (user-defined: a Normal token's text must be byte-level symbols), llama.cpp's
    // fallback emits those two.
    ToyVocab v;
    v.tokens.insert(v.tokens.end(), {"\xC4", "\x84"});  // ids 12 and 13
    v.types.insert(v.types.end(), {4, 4});
    const char* text = "a\004b";  // octal: "\x04b" would be one escape, 0x4b
    CHECK(v.load().encode(text) == std::vector<Token>{1, 12, 13, 2});
    CHECK(ToyVocab{}.load().encode(text) == std::vector<Token>{1, 2});  // neither: dropped
  }
}

// =================================================================================================
TEST_SUITE("tokenizer / pre-tokenizer") {
  TEST_CASE("code point classes follow Unicode 15.1 letters numbers and white space") {
    using unicode::classify;
    using C = unicode::CodepointClass;
    CHECK(classify(U'a') == C::Letter);
    CHECK(classify(U'é') == C::Letter);
    CHECK(classify(U'日') == C::Letter);
    CHECK(classify(U'7') == C::Number);
    CHECK(classify(U'٣') == C::Number);
    CHECK(classify(U'½') == C::Number);
    CHECK(classify(U'!') == C::Other);
    CHECK(classify(0x1F600) == C::Other);   // 😀 is a symbol
    CHECK(classify(0x11F50) == C::Number);  // Kawi digit zero: new in Unicode 15.0
    CHECK(classify(0x2EBF0) == C::Letter);  // CJK Extension I: new in Unicode 15.1
    CHECK(classify(0x110000) == C::Other);
    CHECK(unicode::is_whitespace(0x3000));
    CHECK(unicode::is_whitespace(0x85));
    CHECK_FALSE(unicode::is_whitespace(0x1C));  // Python's isspace() says yes; Unicode says no
    CHECK_FALSE(unicode::is_whitespace(0x200B));
  }

  TEST_CASE("invalid UTF-8 decodes to one U+FFFD per bad byte as llama.cpp does") {
    using V = std::vector<char32_t>;
    CHECK(unicode::decode_lenient("a\x80z") == V{U'a', 0xFFFD, U'z'});
    CHECK(unicode::decode_lenient("\xE2\x82") == V{0xFFFD, 0xFFFD});
    CHECK(unicode::decode_lenient("\xC0\x80") == V{0});           // overlong accepted
    CHECK(unicode::decode_lenient("\xED\xA0\x80") == V{0xD800});  // surrogate accepted
    CHECK(unicode::decode_lenient("\xF5\x80\x80\x80") == V{0x140000});
    CHECK(unicode::decode_lenient("\xF8\x80") == V{0xFFFD, 0xFFFD});
  }

  TEST_CASE("append_utf8 writes 1 to 4 bytes and refuses a code point above U+10FFFF") {
    std::string out;
    for (char32_t cp : {char32_t{0x24}, char32_t{0xE9}, char32_t{0x20AC}, char32_t{0xD800},
                        char32_t{0x1F600}, char32_t{0x10FFFF}}) {
      unicode::append_utf8(out, cp);
    }
    CHECK(to_hex(out) == "24c3a9e282aceda080f09f9880f48fbfbf");
    CHECK(unicode::decode_lenient(out) ==
          std::vector<char32_t>{0x24, 0xE9, 0x20AC, 0xD800, 0x1F600, 0x10FFFF});
    CHECK_THROWS_WITH_AS(unicode::append_utf8(out, 0x110000), doctest::Contains("above U+10FFFF"),
                         std::invalid_argument);
    CHECK(out.size() == 1 + 2 + 3 + 3 + 4 + 4);  // unchanged by the refused one
  }

  TEST_CASE("numbers stand alone and white space runs leave their last space to the next word") {
    const Tokenizer& t = smollm2();
    auto pieces = [&](const std::string& s) {
      std::vector<std::string> out;
      for (Token id : t.encode(s)) out.push_back(t.piece(id));
      return out;
    };
    CHECK(pieces(" 2024") == std::vector<std::string>{" ", "2", "0", "2", "4"});
    CHECK(pieces("a   b") == std::vector<std::string>{"a", "  ", " b"});
    CHECK(pieces("it's") == std::vector<std::string>{"it", "'s"});
    // The digit cut ends the stretch before it, so these two spaces stay together.
    CHECK(pieces("a  1") == std::vector<std::string>{"a", "  ", "1"});
  }
}

// =================================================================================================
TEST_SUITE("tokenizer / special tokens") {
  TEST_CASE("control token texts become their ids only when special parsing is on") {
    const Tokenizer t = ToyVocab{}.load();
    CHECK(t.encode("a<|end|>a") == std::vector<Token>{1, 0, 1});
    const auto plain = t.encode("a<|end|>a", /*parse_special=*/false);
    CHECK(std::find(plain.begin(), plain.end(), Token{0}) == plain.end());
  }

  TEST_CASE("user-defined tokens are matched even with special parsing off") {
    const Tokenizer t = ToyVocab{}.load();
    CHECK(t.encode("a<|user|>b", /*parse_special=*/false) == std::vector<Token>{1, 11, 2});
  }

  TEST_CASE("SmolLM2 specials are ids 0 to 16 and a chat turn starts with im_start") {
    const Tokenizer& t = smollm2();
    CHECK(t.encode("<|im_start|>") == std::vector<Token>{1});
    CHECK(t.encode("<|im_end|>") == std::vector<Token>{2});
    CHECK(t.encode("<|endoftext|>") == std::vector<Token>{0});
    for (Token id = 0; id < 17; ++id) CHECK(t.kind(id) == TokenKind::Control);
    CHECK(t.kind(17) == TokenKind::Normal);
  }

  TEST_CASE("no BOS is added because the file says add_bos_token is false") {
    const Tokenizer& t = smollm2();
    CHECK_FALSE(t.wants_bos());
    CHECK(t.wants_bos() == fixture()["vocab"]["add_bos"].get<bool>());
    CHECK(t.bos() == std::optional<Token>(fixture()["vocab"]["bos"].get<Token>()));
    CHECK(t.encode("Hello") == std::vector<Token>{19556});
  }

  TEST_CASE("stop tokens are eos and im_end and endoftext") {
    const Tokenizer& t = smollm2();
    CHECK(t.eos() == std::optional<Token>(fixture()["vocab"]["eos"].get<Token>()));
    CHECK(t.stop_tokens() == std::vector<Token>{0, 2});
    CHECK(t.is_stop(2));
    CHECK_FALSE(t.is_stop(1));
    // llama.cpp's end-of-generation set is {0, 2, 4}: it also stops on <reponame> (4), which its
    // fill-in-the-middle heuristic takes for a FIM marker. We leave that code-completion
    // convention out; the fixture pins the difference so a change in either shows up here.
    CHECK(ids_of(fixture()["vocab"]["eog_among_specials"]) == std::vector<Token>{0, 2, 4});
  }
}

// =================================================================================================
TEST_SUITE("tokenizer / matches llama.cpp") {
  TEST_CASE("ids equal llama.cpp on every fixture string with special parsing on and off") {
    const Tokenizer& t = smollm2();
    const json& cases = fixture()["encode"];
    REQUIRE(cases.size() >= 60);
    int mismatches = 0;
    for (const json& c : cases) {
      const std::string text = from_hex(c["hex"]);
      for (bool special : {true, false}) {
        const auto want = ids_of(c[special ? "ids_special" : "ids_plain"]);
        const auto got = t.encode(text, special);
        if (got != want && ++mismatches <= 5) {
          std::ostringstream m;
          m << "case '" << c["name"].get<std::string>() << "' (special=" << special << ")\n  want";
          for (Token id : want) m << ' ' << id;
          m << "\n  got ";
          for (Token id : got) m << ' ' << id;
          FAIL_CHECK(m.str());
        }
      }
    }
    CHECK(mismatches == 0);
  }

  TEST_CASE("every token's piece hashes to what llama.cpp gives") {
    const Tokenizer& t = smollm2();
    const json& p = fixture()["pieces"];
    REQUIRE(t.vocab_size() == fixture()["vocab"]["n_vocab"].get<int>());
    for (bool special : {true, false}) {
      std::uint64_t h = 0xCBF29CE484222325ull;
      auto mix = [&](unsigned char b) { h = (h ^ b) * 0x100000001B3ull; };
      for (Token id = 0; id < t.vocab_size(); ++id) {
        const std::string& s = t.piece(id, special);
        const auto n = static_cast<std::uint32_t>(s.size());
        for (int k = 0; k < 4; ++k) mix(static_cast<unsigned char>(n >> (8 * k)));
        for (unsigned char c : s) mix(c);
      }
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
      CHECK_MESSAGE(hex == p[special ? "special" : "plain"].get<std::string>(),
                    "special=" << special);
    }
  }

  TEST_CASE("decoding equals llama_detokenize with and without special text") {
    const Tokenizer& t = smollm2();
    for (const json& c : fixture()["encode"]) {
      const auto ids = ids_of(c["ids_special"]);
      CHECK_MESSAGE(to_hex(t.decode(ids, true)) == c["decoded_special_hex"].get<std::string>(),
                    c["name"].get<std::string>());
      CHECK_MESSAGE(to_hex(t.decode(ids, false)) == c["decoded_plain_hex"].get<std::string>(),
                    c["name"].get<std::string>());
    }
    for (const json& c : fixture()["decode"]) {
      const auto ids = ids_of(c["ids"]);
      CHECK(to_hex(t.decode(ids, true)) == c["special_hex"].get<std::string>());
      CHECK(to_hex(t.decode(ids, false)) == c["plain_hex"].get<std::string>());
    }
  }
}

// =================================================================================================
TEST_SUITE("tokenizer / decoding") {
  TEST_CASE("valid text survives encode then decode byte for byte") {
    const Tokenizer& t = smollm2();
    int checked = 0;
    for (const json& c : fixture()["encode"]) {
      const std::string text = from_hex(c["hex"]);
      if (!unicode::is_valid_utf8(text)) continue;
      // Control bytes whose symbol has no token are dropped by design (see encode()).
      if (text.find_first_of(std::string("\x04\x06\x13\x14\x16\x1d", 6)) != std::string::npos) {
        continue;
      }
      if (text.find("\xF1") != std::string::npos || text.find("\xF2") != std::string::npos)
        continue;
      CHECK_MESSAGE(t.decode(t.encode(text), true) == text, c["name"].get<std::string>());
      ++checked;
    }
    CHECK(checked >= 60);
  }

  TEST_CASE("the stream decoder never splits a character and emits the same bytes in total") {
    const Tokenizer& t = smollm2();
    for (const json& c : fixture()["encode"]) {
      const auto ids = ids_of(c["ids_special"]);
      const std::string whole = t.decode(ids, true);
      StreamDecoder sd(t, true);
      std::string streamed;
      for (Token id : ids) {
        const std::string chunk = sd.push(id);
        if (unicode::is_valid_utf8(whole)) {
          CHECK_MESSAGE(unicode::is_valid_utf8(chunk), c["name"].get<std::string>());
        }
        streamed += chunk;
      }
      streamed += sd.flush();
      CHECK_MESSAGE(streamed == whole, c["name"].get<std::string>());
      CHECK(sd.pending() == 0);
    }
  }

  TEST_CASE("an emoji split over tokens is held back until it is complete") {
    const Tokenizer& t = smollm2();
    const auto ids = t.encode("😀");
    REQUIRE(ids.size() >= 2);  // the emoji's 4 bytes are not one token
    StreamDecoder sd(t);
    std::vector<std::string> chunks;
    for (Token id : ids) chunks.push_back(sd.push(id));
    for (std::size_t i = 0; i + 1 < chunks.size(); ++i) CHECK(chunks[i].empty());
    CHECK(chunks.back() == "😀");
    // Cut short, flush() hands over the held bytes as they are, and starts afresh.
    StreamDecoder cut(t);
    CHECK(cut.push(ids[0]).empty());
    const std::size_t held = cut.pending();
    REQUIRE(held > 0);
    CHECK(cut.flush().size() == held);
    CHECK(cut.pending() == 0);
    CHECK(cut.flush().empty());
    CHECK(cut.push(t.encode("a")[0]) == "a");
  }

  TEST_CASE("bytes that can never be valid UTF-8 are passed on at once") {
    CHECK(unicode::complete_prefix_length("ab\xF0\x9F") == 2);  // half an emoji: wait
    CHECK(unicode::complete_prefix_length("ab\xE2\x82") == 2);
    CHECK(unicode::complete_prefix_length("ab\xE2\x82\xAC") == 5);  // complete: go
    CHECK(unicode::complete_prefix_length("ab\x80") == 3);          // stray continuation
    CHECK(unicode::complete_prefix_length("ab\xC0") == 3);          // never a lead byte
    CHECK(unicode::complete_prefix_length("ab\xED\xA0") == 4);      // would be a surrogate
    CHECK(unicode::complete_prefix_length("ab\xF4\x90") == 4);      // would be > U+10FFFF
    CHECK(unicode::complete_prefix_length("") == 0);
  }

  TEST_CASE("the longest special token matches first, and a repeated merge keeps its first rank") {
    ToyVocab v;
    v.tokens.push_back("<|user|>a");  // id 12: a special token that starts with another one
    v.types.push_back(4);
    const Tokenizer t = v.load();
    CHECK(t.encode("<|user|>ab") == std::vector<Token>{12, 2});
    CHECK(t.encode("<|user|>b") == std::vector<Token>{11, 2});
    // "b c" is listed again last: it keeps rank 0 (as llama.cpp's first-wins map does), so
    // "abc" merges b c, then a bc, not a b first.
    ToyVocab dup;
    dup.merges.push_back("b c");
    CHECK(dup.load().encode("abc") == std::vector<Token>{10});
  }

  TEST_CASE("special tokens are hidden from decoded text unless asked for") {
    const Tokenizer& t = smollm2();
    const auto ids = t.encode("<|im_start|>user\nHi<|im_end|>");
    CHECK(t.decode(ids) == "user\nHi");
    CHECK(t.decode(ids, true) == "<|im_start|>user\nHi<|im_end|>");
  }
}

// =================================================================================================
TEST_SUITE("tokenizer / bad input") {
  TEST_CASE("an empty string encodes to no tokens") {
    CHECK(ToyVocab{}.load().encode("").empty());
    CHECK(ToyVocab{}.load().encode("", /*parse_special=*/false).empty());
  }

  TEST_CASE("token ids outside the vocabulary throw out_of_range naming the id") {
    const Tokenizer t = ToyVocab{}.load();
    const std::vector<Token> bad{1, 2, 12};
    CHECK_THROWS_WITH_AS(t.decode(bad),
                         "Tokenizer::decode: token id 12 at position 2 is outside the vocabulary "
                         "[0, 12)",
                         std::out_of_range);
    CHECK_THROWS_AS(t.decode(std::vector<Token>{-1}), std::out_of_range);
    CHECK_THROWS_AS(t.piece(99), std::out_of_range);
    CHECK_THROWS_WITH_AS(t.token_text(12), doctest::Contains("Tokenizer::token_text: token id 12"),
                         std::out_of_range);
    CHECK_THROWS_WITH_AS(t.kind(-1), doctest::Contains("Tokenizer::kind: token id -1"),
                         std::out_of_range);
    StreamDecoder sd(t);
    CHECK(sd.push(1) == "a");
    CHECK_THROWS_AS(sd.push(-5), std::out_of_range);
    CHECK(t.stop_tokens() == std::vector<Token>{0});
    CHECK_FALSE(t.is_stop(-1));  // a question, not a lookup: no throw
    CHECK_FALSE(t.is_stop(12));
  }

  TEST_CASE("bytes above U+10FFFF are refused by any vocabulary, and through render_chat") {
    const Tokenizer t = ToyVocab{}.load();
    const std::string above = "a\xF4\x90\x80\x80";  // U+110000
    CHECK_THROWS_WITH_AS(t.encode(above), doctest::Contains("above U+10FFFF"),
                         std::invalid_argument);
    CHECK_THROWS_AS(t.encode(above, /*parse_special=*/false), std::invalid_argument);
    const ChatTemplate tmpl = ChatTemplate::chatml(std::nullopt);
    const std::vector<ChatMessage> messages{{"user", above}};
    CHECK_THROWS_AS(render_chat(t, tmpl, messages, true), std::invalid_argument);
  }

  TEST_CASE("bytes that decode above U+10FFFF are refused where llama.cpp aborts") {
    const Tokenizer& t = smollm2();
    const json& aborts = fixture()["aborts"];
    REQUIRE(!aborts.empty());
    for (const json& c : aborts) {
      CHECK_MESSAGE(c["llama_cpp"].get<std::string>().rfind("process died", 0) == 0,
                    c["llama_cpp"].get<std::string>());
      CHECK_THROWS_WITH_AS(t.encode(from_hex(c["hex"])), doctest::Contains("above U+10FFFF"),
                           std::invalid_argument);
    }
  }
}

// =================================================================================================
TEST_SUITE("tokenizer / chat template") {
  TEST_CASE("the default system prompt is read from the template in the GGUF") {
    const Tokenizer& t = smollm2();
    REQUIRE(t.chat_template_source().has_value());
    CHECK(*t.chat_template_source() == fixture()["vocab"]["chat_template"].get<std::string>());
    const ChatTemplate tmpl = ChatTemplate::from_source(*t.chat_template_source());
    CHECK(tmpl.default_system_prompt() ==
          std::optional<std::string>(std::string(kSmolLM2DefaultSystemPrompt)));
    // The string literal's escapes: \n and \t are a newline and a tab, \" a quote.
    std::string source = *t.chat_template_source();
    const std::string name = "named SmolLM";
    const std::size_t at = source.find(name);
    REQUIRE(at != std::string::npos);
    source.replace(at, name.size(), R"(named\tSmolLM\nby \"HF\")");
    const auto escaped = ChatTemplate::from_source(source).default_system_prompt();
    REQUIRE(escaped.has_value());
    CHECK(escaped->find("named\tSmolLM\nby \"HF\"") != std::string::npos);
  }

  TEST_CASE("rendered conversations equal the Jinja reference as text and as ids") {
    const Tokenizer& t = smollm2();
    const ChatTemplate tmpl = ChatTemplate::from_source(*t.chat_template_source());
    const json& chats = fixture()["chat"];
    REQUIRE(chats.size() >= 10);
    for (const json& c : chats) {
      std::vector<ChatMessage> messages;
      for (const json& m : c["messages"]) messages.push_back({m["role"], m["content"]});
      const bool agp = c["add_generation_prompt"];
      CHECK_MESSAGE(tmpl.render(messages, agp) == c["prompt"].get<std::string>(),
                    c["name"].get<std::string>());
      CHECK_MESSAGE(render_chat(t, messages, agp) == ids_of(c["ids"]),
                    c["name"].get<std::string>());
    }
  }

  TEST_CASE("a user turn renders as hand-checked ChatML") {
    const ChatTemplate tmpl = ChatTemplate::chatml(std::string(kSmolLM2DefaultSystemPrompt));
    const std::vector<ChatMessage> messages{{"user", "Hi"}};
    CHECK(tmpl.render(messages, true) ==
          "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
          "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    const std::vector<ChatMessage> with_system{{"system", "Be brief."}, {"user", "Hi"}};
    CHECK(tmpl.render(with_system, false) ==
          "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  }

  TEST_CASE("a template that is not ChatML is refused naming the key") {
    CHECK_THROWS_WITH_AS(ChatTemplate::from_source(
                             "{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}"),
                         doctest::Contains("tokenizer.chat_template"), TokenizerError);
    const Tokenizer t = ToyVocab{}.load();  // has no tokenizer.chat_template
    CHECK_THROWS_WITH_AS(render_chat(t, {{"user", "hi"}}, true),
                         doctest::Contains("tokenizer.chat_template"), TokenizerError);
  }
}
