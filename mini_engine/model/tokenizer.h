#pragma once
// The SmolLM2 tokenizer: GPT-2 byte-level BPE built from a GGUF file's vocabulary and merges,
// behind llama.cpp's pre-tokenizer for tokenizer.ggml.pre = "smollm". Its job is to produce
// exactly the token ids llama.cpp produces for the same bytes (tests/model/test_tokenizer.cpp
// checks this against recorded llama.cpp output), because the model was trained on those ids.
//
// The pipeline of encode(), in order (book/engine_tokenizer.md explains each step):
//  1. special tokens: the texts of control tokens (<|im_start|>, <|im_end|>, <|endoftext|>, ...)
//     are cut out of the input first, longest first, and become their ids directly;
//  2. each stretch of text between them is decoded to code points (invalid UTF-8 bytes become
//     U+FFFD, one per byte, as in llama.cpp), then pre-tokenized: every number code point stands
//     alone, and the rest is split by the GPT-2 rule (contractions, optional space + letters,
//     optional space + digits, optional space + other symbols, runs of white space);
//  3. each piece is turned back into UTF-8 bytes and merged by byte-level BPE: start from one
//     symbol per byte and repeatedly merge the adjacent pair with the lowest merge rank.
//
// No BOS token is prepended: this model's GGUF says tokenizer.ggml.add_bos_token = false, and its
// chat template begins with <|im_start|> itself. (The BOS id, 1, *is* <|im_start|>; adding it
// again would start every prompt with a doubled <|im_start|> the model never saw in training.)
// wants_bos() reports the flag, so a caller loading another model can honour it.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mini_engine/core/printable.h"
#include "mini_engine/core/token.h"

namespace speclab {

class GgufFile;

// A missing or malformed tokenizer key. The message names the key (and the file).
class TokenizerError : public std::runtime_error {
 public:
  // The message is kept printable(), as GgufError's: it quotes strings from the file, which may
  // hold any byte (and are clipped() when long).
  explicit TokenizerError(const std::string& message) : std::runtime_error(printable(message)) {}
};

// How the GGUF types a token (tokenizer.ggml.token_type), with llama.cpp's numbering.
enum class TokenKind : std::uint8_t {
  Undefined = 0,
  Normal = 1,  // ordinary BPE token: its text is byte-level encoded bytes
  Unknown = 2,
  Control = 3,      // <|im_start|>, <|im_end|>, <|endoftext|>, ...
  UserDefined = 4,  // added tokens that are always matched as text
  Unused = 5,
  Byte = 6,
};

class Tokenizer {
 public:
  // Builds the tokenizer from the GGUF's tokenizer.* metadata. Requires tokenizer.ggml.model =
  // "gpt2", tokenizer.ggml.pre = "smollm" (the only pre-tokenizer implemented), and the arrays
  // tokenizer.ggml.tokens and tokenizer.ggml.merges; tokenizer.ggml.token_type is optional (all
  // Normal when absent). Throws TokenizerError naming the key that is missing or malformed,
  // including a merge whose parts or result are not in the vocabulary, and an optional key
  // (token_type, bos/eos_token_id, add_bos_token, chat_template) present with the wrong type.
  // The Tokenizer copies what it needs: `gguf` may be closed afterwards.
  static Tokenizer from_gguf(const GgufFile& gguf);

  // The ids for `text`, which may be any bytes (not necessarily valid UTF-8).
  // parse_special = true: the texts of Control, Unknown and UserDefined tokens become their ids
  // (llama.cpp's parse_special, what a rendered chat prompt needs). false: only UserDefined
  // tokens are matched, and "<|im_end|>" in the text is tokenized as plain characters (what
  // untrusted user text should get). Never prepends BOS (see above). An empty text gives no ids.
  // A byte whose byte-level symbol is not in the vocabulary (this vocabulary lacks 21 of the 256,
  // e.g. 0x04), and which no merge covers, becomes llama.cpp's fallback: the tokens whose text is
  // one byte of that symbol's UTF-8, where they exist. Such texts are not valid UTF-8, so only a
  // token that is not Normal can have one; SmolLM2 has none, so there the byte is dropped, as
  // llama.cpp drops it.
  // Throws std::invalid_argument when a 4-byte sequence decodes above U+10FFFF (lead byte F4 to
  // F7 with continuation bytes): llama.cpp aborts the process on such input; we refuse it.
  std::vector<Token> encode(std::string_view text, bool parse_special = true) const;

  // The bytes `ids` stand for, concatenated. render_special = false leaves out Control and
  // Unknown tokens (what a user should see); true writes their text ("<|im_end|>"). Throws
  // std::out_of_range naming the id and its position when an id is outside [0, vocab_size()).
  std::string decode(std::span<const Token> ids, bool render_special = false) const;

  // The bytes one token stands for (may be an incomplete UTF-8 sequence, e.g. half an emoji).
  // Control/Unknown tokens: their text when render_special, else "". Byte, Unused and Undefined
  // tokens stand for nothing in a GPT-2 vocabulary (as in llama.cpp). Throws std::out_of_range
  // for an id outside [0, vocab_size()). The reference (like token_text's) points into the
  // Tokenizer: valid while it lives.
  const std::string& piece(Token id, bool render_special = false) const;

  int vocab_size() const { return static_cast<int>(texts_.size()); }
  // The token's text as stored in the GGUF (byte-level encoded: a space shows as "Ġ").
  // Throws std::out_of_range for an id outside [0, vocab_size()), as kind() does.
  const std::string& token_text(Token id) const;
  // How the GGUF types the token. Throws std::out_of_range for an id outside [0, vocab_size()).
  TokenKind kind(Token id) const;
  // The id whose stored text is exactly `text`, if any.
  std::optional<Token> find(std::string_view text) const;

  std::optional<Token> bos() const { return bos_; }  // tokenizer.ggml.bos_token_id
  std::optional<Token> eos() const { return eos_; }  // tokenizer.ggml.eos_token_id
  bool wants_bos() const { return add_bos_; }        // tokenizer.ggml.add_bos_token
  // Tokens that end generation: eos, plus <|im_end|> (end of a ChatML turn) and <|endoftext|>
  // (end of a document) when the vocabulary has them. This is llama.cpp's end-of-generation set
  // for SmolLM2: {0 <|endoftext|>, 2 <|im_end|>}. Sorted.
  const std::vector<Token>& stop_tokens() const { return stop_tokens_; }
  // True when `id` is one of stop_tokens(); false for any other value, in the vocabulary or not.
  bool is_stop(Token id) const;
  // The Jinja chat template (tokenizer.chat_template), when the file has one.
  const std::optional<std::string>& chat_template_source() const { return chat_template_; }

 private:
  Tokenizer() = default;
  void check_id(Token id, const char* what) const;
  void encode_text(std::string_view text, std::vector<Token>& out) const;
  void encode_word(std::string_view bytes, std::vector<Token>& out) const;

  struct Merge {
    std::int32_t rank;  // position in tokenizer.ggml.merges: lower merges first
    Token result;
  };

  std::vector<std::string> texts_;   // (vocab) stored token texts
  std::vector<std::string> pieces_;  // (vocab) bytes each token stands for; specials: ""
  std::vector<TokenKind> kinds_;     // (vocab)
  std::unordered_map<std::string, Token> ids_by_text_;
  std::unordered_map<std::uint64_t, Merge> merges_;    // key: (left id << 32) | right id
  std::array<Token, 256> byte_tokens_{};               // token of each byte's symbol, or -1
  std::array<std::vector<Token>, 256> byte_fallback_;  // what a byte with no token becomes
  std::vector<Token> specials_;  // matched before BPE: longest text first, then lower id
  std::vector<Token> stop_tokens_;
  std::optional<Token> bos_, eos_;
  bool add_bos_ = false;
  std::optional<std::string> chat_template_;
};

// Turns a stream of generated tokens into printable text without ever cutting a UTF-8 character
// in two: the bytes of a character split across tokens (an emoji is often 2 to 4 tokens) are
// held back until the character is complete. Bytes that can never become valid UTF-8 are passed
// on unchanged at once, so nothing waits forever.
// Guarantees: the concatenation of every push() and the final flush() equals
// tokenizer.decode(all ids, render_special) byte for byte; and when that whole text is valid
// UTF-8, every string push() returns is valid UTF-8 on its own.
// Holds a reference to `tokenizer`, which must outlive the decoder.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool render_special = false)
      : tokenizer_(tokenizer), render_special_(render_special) {}

  // Appends one token; returns the bytes that are now safe to print (possibly empty). Throws
  // std::out_of_range for an id outside the vocabulary, leaving the decoder unchanged.
  std::string push(Token id);
  // Returns whatever is still held back (an unfinished sequence, printed as it is) and resets.
  std::string flush();
  // How many bytes are held back.
  std::size_t pending() const { return held_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool render_special_;
  std::string held_;
};

}  // namespace speclab
