#include "mini_engine/model/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "mini_engine/model/gguf.h"
#include "mini_engine/model/unicode.h"

namespace speclab {
namespace {

// ---------------------------------------------------------------------------------------------
// GPT-2's byte-level alphabet. BPE works on bytes, but a vocabulary file stores strings, so every
// byte gets a printable stand-in character: the 188 bytes that are already printable (and not a
// space) stand for themselves, and the other 68 (controls, space, DEL, NBSP, soft hyphen) are
// given the code points U+0100, U+0101, ... in byte order. That is why a leading space shows as
// "Ġ" (U+0120, the stand-in for byte 0x20) in token texts.

bool printable_byte(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteAlphabet {
  std::array<char32_t, 256> symbol{};  // byte -> stand-in code point
  std::vector<int> byte_of;            // stand-in code point -> byte, -1 when none
  ByteAlphabet() {
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) symbol[b] = printable_byte(b) ? static_cast<char32_t>(b) : next++;
    byte_of.assign(next, -1);
    for (int b = 0; b < 256; ++b) byte_of[symbol[b]] = b;
  }
};
const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

std::uint64_t merge_key(Token left, Token right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) |
         static_cast<std::uint32_t>(right);
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenizer: llama.cpp's "smollm" split, which is two passes: first every number code point
// becomes a piece of its own (\p{N}), then the rest is split by the GPT-2 pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// applied within each stretch separately (a stretch ends where a number was cut out, so
// "\s+(?!\S)" sees the end of the stretch as the end of the text).

enum class Kind : std::uint8_t { Letter, Number, Space, Other };

Kind kind_of(char32_t cp) {
  if (cp < 128) {
    if (cp == ' ' || (cp >= '\t' && cp <= '\r')) return Kind::Space;
  } else if (unicode::is_whitespace(cp)) {
    return Kind::Space;
  }
  switch (unicode::classify(cp)) {
    case unicode::CodepointClass::Letter: return Kind::Letter;
    case unicode::CodepointClass::Number: return Kind::Number;
    default: return Kind::Other;
  }
}

// Calls emit(begin, end) for each GPT-2 piece of kinds/cps[begin, end).
template <typename Emit>
void split_gpt2(const std::vector<char32_t>& cps, const std::vector<Kind>& kinds, std::size_t begin,
                std::size_t end, Emit&& emit) {
  auto cp_at = [&](std::size_t i) { return i < end ? cps[i] : char32_t{0xFFFFFFFF}; };
  std::size_t pos = begin;
  while (pos < end) {
    const char32_t c = cps[pos];
    // 's 't 'm 'd 're 've 'll (lower case only, as in GPT-2)
    if (c == '\'' && pos + 1 < end) {
      const char32_t n1 = cp_at(pos + 1), n2 = cp_at(pos + 2);
      if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
        emit(pos, pos + 2);
        pos += 2;
        continue;
      }
      if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
        emit(pos, pos + 3);
        pos += 3;
        continue;
      }
    }
    // An optional single space, then a run of letters, of numbers, or of other symbols.
    const std::size_t run = (c == ' ') ? pos + 1 : pos;
    if (run < end && kinds[run] != Kind::Space) {
      const Kind k = kinds[run];
      std::size_t q = run;
      while (q < end && kinds[q] == k) ++q;
      emit(pos, q);
      pos = q;
      continue;
    }
    // White space: a run followed by a non-space gives up its last character, which then
    // leads the next piece (so " world" keeps its space); a run at the end is kept whole.
    std::size_t q = pos;
    while (q < end && kinds[q] == Kind::Space) ++q;
    const std::size_t n = q - pos;
    if (n > 1 && q < end) {
      emit(pos, q - 1);
      pos = q - 1;
    } else if (n > 0) {
      emit(pos, q);
      pos = q;
    } else {  // not reachable with the four kinds above; kept so the loop always advances
      emit(pos, pos + 1);
      pos += 1;
    }
  }
}

std::string hex_codepoint(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Reading the GGUF metadata.

class KeyReader {
 public:
  explicit KeyReader(const GgufFile& g) : g_(g) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw TokenizerError(g_.path() + ": tokenizer key '" + key + "' " + what);
  }
  const GgufValue& require(const std::string& key, GgufType type,
                           GgufType array_type = GgufType::UINT8) const {
    const GgufValue* v = g_.find(key);
    if (v == nullptr) fail(key, "is missing: this file carries no usable tokenizer");
    if (v->type != type || (type == GgufType::ARRAY && v->array_type != array_type)) {
      fail(key, "has the wrong type");
    }
    return *v;
  }
  std::optional<Token> token_id(const std::string& key, std::size_t vocab) const {
    const GgufValue* v = g_.find(key);
    if (v == nullptr) return std::nullopt;
    // A float's GgufValue::integer is 0: reading it would silently give id 0.
    if (!is_integral(v->type)) fail(key, "is not an integer");
    if (v->integer < 0 || static_cast<std::uint64_t>(v->integer) >= vocab) {
      fail(key, "= " + std::to_string(v->integer) + " is outside the vocabulary [0, " +
                    std::to_string(vocab) + ")");
    }
    return static_cast<Token>(v->integer);
  }
  // An optional key: nullptr when absent, TokenizerError when present but not of a type that
  // `fits` accepts.
  const GgufValue* optional(const std::string& key, bool (*fits)(GgufType)) const {
    const GgufValue* v = g_.find(key);
    if (v != nullptr && !fits(v->type)) fail(key, "has the wrong type");
    return v;
  }
  // Integers and bools: the types whose value is in GgufValue::integer.
  static bool is_integral(GgufType t) {
    return t != GgufType::STRING && t != GgufType::ARRAY && t != GgufType::FLOAT32 &&
           t != GgufType::FLOAT64;
  }
  static bool is_string(GgufType t) { return t == GgufType::STRING; }

 private:
  const GgufFile& g_;
};

}  // namespace

// -------------------------------------------------------------------------------------------------

Tokenizer Tokenizer::from_gguf(const GgufFile& gguf) {
  const KeyReader keys(gguf);
  const std::string& model = keys.require("tokenizer.ggml.model", GgufType::STRING).string;
  if (model != "gpt2") {
    keys.fail("tokenizer.ggml.model",
              "= '" + clipped(model) + "': only 'gpt2' (byte-level BPE) is supported");
  }
  const std::string& pre = keys.require("tokenizer.ggml.pre", GgufType::STRING).string;
  if (pre != "smollm") {
    keys.fail("tokenizer.ggml.pre",
              "= '" + clipped(pre) + "': only the 'smollm' pre-tokenizer (SmolLM2) is implemented");
  }
  const auto& texts =
      keys.require("tokenizer.ggml.tokens", GgufType::ARRAY, GgufType::STRING).strings;
  const auto& merges =
      keys.require("tokenizer.ggml.merges", GgufType::ARRAY, GgufType::STRING).strings;
  if (texts.empty()) keys.fail("tokenizer.ggml.tokens", "is empty");
  if (texts.size() > static_cast<std::size_t>(INT32_MAX))
    keys.fail("tokenizer.ggml.tokens", "is too long");
  const std::size_t n = texts.size();

  Tokenizer t;
  t.texts_ = texts;
  t.kinds_.assign(n, TokenKind::Normal);
  if (const GgufValue* types = gguf.find("tokenizer.ggml.token_type")) {
    if (types->type != GgufType::ARRAY || types->array_type != GgufType::INT32) {
      keys.fail("tokenizer.ggml.token_type", "has the wrong type (expected an int32 array)");
    }
    if (types->integers.size() != n) {
      keys.fail("tokenizer.ggml.token_type", "has " + std::to_string(types->integers.size()) +
                                                 " entries for " + std::to_string(n) + " tokens");
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t k = types->integers[i];
      if (k < 0 || k > 6) {
        keys.fail("tokenizer.ggml.token_type",
                  "entry " + std::to_string(i) + " is " + std::to_string(k) +
                      ", not a token type (0 undefined, 1 normal, 2 unknown, 3 control, "
                      "4 user-defined, 5 unused, 6 byte)");
      }
      t.kinds_[i] = static_cast<TokenKind>(k);
    }
  }

  // Later duplicates win, as in llama.cpp (this vocabulary has none).
  t.ids_by_text_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) t.ids_by_text_[texts[i]] = static_cast<Token>(i);

  // What each token stands for, in bytes.
  const ByteAlphabet& abc = alphabet();
  t.pieces_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (t.kinds_[i] == TokenKind::UserDefined) {
      t.pieces_[i] = texts[i];
    } else if (t.kinds_[i] == TokenKind::Normal) {
      for (char32_t cp : unicode::decode_lenient(texts[i])) {
        if (cp >= abc.byte_of.size() || abc.byte_of[cp] < 0) {
          keys.fail("tokenizer.ggml.tokens", "entry " + std::to_string(i) + " contains " +
                                                 hex_codepoint(cp) +
                                                 ", which is not a byte-level symbol");
        }
        t.pieces_[i].push_back(static_cast<char>(abc.byte_of[cp]));
      }
    }
  }

  // Single bytes: the token of each byte's stand-in, and llama.cpp's fallback when there is
  // none (each byte of the stand-in's UTF-8, looked up as a one-byte token, if one exists).
  for (int b = 0; b < 256; ++b) {
    std::string symbol;
    unicode::append_utf8(symbol, abc.symbol[b]);
    auto it = t.ids_by_text_.find(symbol);
    t.byte_tokens_[b] = it == t.ids_by_text_.end() ? -1 : it->second;
    if (t.byte_tokens_[b] < 0) {
      for (char c : symbol) {
        auto one = t.ids_by_text_.find(std::string(1, c));
        if (one != t.ids_by_text_.end()) t.byte_fallback_[b].push_back(one->second);
      }
    }
  }

  // Merge ranks: "left right", lower index = merged earlier. The first of duplicates wins.
  t.merges_.reserve(merges.size());
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    const std::size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    auto bad = [&](const std::string& why) {
      keys.fail("tokenizer.ggml.merges",
                "entry " + std::to_string(i) + " '" + clipped(m) + "' " + why);
    };
    if (space == std::string::npos) bad("is not of the form 'left right'");
    const std::string left = m.substr(0, space), right = m.substr(space + 1);
    const auto l = t.ids_by_text_.find(left), r = t.ids_by_text_.find(right),
               res = t.ids_by_text_.find(left + right);
    if (l == t.ids_by_text_.end() || r == t.ids_by_text_.end())
      bad("has a part that is not a token");
    if (res == t.ids_by_text_.end()) bad("merges into a string that is not a token");
    t.merges_.try_emplace(merge_key(l->second, r->second),
                          Merge{static_cast<std::int32_t>(i), res->second});
  }

  for (std::size_t i = 0; i < n; ++i) {
    const TokenKind k = t.kinds_[i];
    if ((k == TokenKind::Control || k == TokenKind::Unknown || k == TokenKind::UserDefined) &&
        !texts[i].empty()) {
      t.specials_.push_back(static_cast<Token>(i));
    }
  }
  std::stable_sort(t.specials_.begin(), t.specials_.end(),
                   [&](Token a, Token b) { return t.texts_[a].size() > t.texts_[b].size(); });

  t.bos_ = keys.token_id("tokenizer.ggml.bos_token_id", n);
  t.eos_ = keys.token_id("tokenizer.ggml.eos_token_id", n);
  if (const GgufValue* v = keys.optional("tokenizer.ggml.add_bos_token", KeyReader::is_integral)) {
    t.add_bos_ = v->integer != 0;
  }
  if (t.eos_) t.stop_tokens_.push_back(*t.eos_);
  for (const char* name : {"<|im_end|>", "<|endoftext|>"}) {
    if (auto id = t.find(name)) t.stop_tokens_.push_back(*id);
  }
  std::sort(t.stop_tokens_.begin(), t.stop_tokens_.end());
  t.stop_tokens_.erase(std::unique(t.stop_tokens_.begin(), t.stop_tokens_.end()),
                       t.stop_tokens_.end());
  if (const GgufValue* v = keys.optional("tokenizer.chat_template", KeyReader::is_string)) {
    t.chat_template_ = v->string;
  }
  return t;
}

// -------------------------------------------------------------------------------------------------
// Encoding

std::vector<Token> Tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<Token> out;
  if (text.empty()) return out;

  // 1. Cut out special tokens, longest first, each over the text that is still raw.
  struct Fragment {
    std::size_t begin, end;
    Token special;  // -1: raw text
  };
  std::vector<Fragment> fragments{{0, text.size(), -1}}, next;
  for (Token s : specials_) {
    if (!parse_special && kinds_[s] != TokenKind::UserDefined) continue;
    const std::string& st = texts_[s];
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.special >= 0) {
        next.push_back(f);
        continue;
      }
      const std::string_view raw = text.substr(0, f.end);
      std::size_t pos = f.begin;
      for (std::size_t m; (m = raw.find(st, pos)) != std::string_view::npos; pos = m + st.size()) {
        if (m > pos) next.push_back({pos, m, -1});
        next.push_back({m, m + st.size(), s});
      }
      if (pos < f.end) next.push_back({pos, f.end, -1});
    }
    fragments.swap(next);
  }

  for (const Fragment& f : fragments) {
    if (f.special >= 0) {
      out.push_back(f.special);
    } else {
      encode_text(text.substr(f.begin, f.end - f.begin), out);
    }
  }
  return out;
}

void Tokenizer::encode_text(std::string_view text, std::vector<Token>& out) const {
  // 2. Code points (invalid bytes -> U+FFFD), their kinds, and the two-pass split.
  const std::vector<char32_t> cps = unicode::decode_lenient(text);
  std::vector<Kind> kinds(cps.size());
  for (std::size_t i = 0; i < cps.size(); ++i) {
    if (cps[i] > unicode::kMaxCodepoint) {
      throw std::invalid_argument(
          "Tokenizer::encode: the input holds a 4-byte UTF-8 sequence that decodes to " +
          hex_codepoint(cps[i]) +
          ", above U+10FFFF; such bytes have no code point (llama.cpp aborts on them)");
    }
    kinds[i] = kind_of(cps[i]);
  }

  std::string word;
  auto emit = [&](std::size_t b, std::size_t e) {
    word.clear();
    for (std::size_t i = b; i < e; ++i) unicode::append_utf8(word, cps[i]);
    encode_word(word, out);
  };
  std::size_t i = 0;
  while (i < cps.size()) {
    if (kinds[i] == Kind::Number) {  // every digit (any script) is a piece of its own
      emit(i, i + 1);
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < cps.size() && kinds[j] != Kind::Number) ++j;
    split_gpt2(cps, kinds, i, j, emit);
    i = j;
  }
}

void Tokenizer::encode_word(std::string_view bytes, std::vector<Token>& out) const {
  // 3. Byte-level BPE. One symbol per byte, in a linked list; a heap holds candidate merges of
  // neighbours ordered by (rank, position), so the lowest-ranked pair merges first and, among
  // equal ranks, the leftmost. A candidate goes stale when either side has changed since it was
  // pushed; stale candidates are skipped when popped.
  const int n = static_cast<int>(bytes.size());
  if (n == 0) return;
  struct Symbol {
    Token id;  // -1: a byte with no token of its own; -2: merged away
    int prev, next;
  };
  std::vector<Symbol> sym(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    sym[i] = {byte_tokens_[static_cast<unsigned char>(bytes[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  struct Candidate {
    std::int32_t rank;
    int left, right;
    Token left_id, right_id, result;
  };
  auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> heap(later);
  auto consider = [&](int l, int r) {
    if (l < 0 || r < 0 || sym[l].id < 0 || sym[r].id < 0) return;
    const auto it = merges_.find(merge_key(sym[l].id, sym[r].id));
    if (it != merges_.end())
      heap.push({it->second.rank, l, r, sym[l].id, sym[r].id, it->second.result});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[c.left];
    if (l.id != c.left_id || l.next != c.right || sym[c.right].id != c.right_id) continue;
    Symbol& r = sym[c.right];
    l.id = c.result;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    r.id = -2;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
  for (int i = 0; i >= 0; i = sym[i].next) {
    if (sym[i].id >= 0) {
      out.push_back(sym[i].id);
    } else {  // an unmerged byte without a token: llama.cpp's fallback (usually nothing)
      const auto& fb = byte_fallback_[static_cast<unsigned char>(bytes[i])];
      out.insert(out.end(), fb.begin(), fb.end());
    }
  }
}

// -------------------------------------------------------------------------------------------------
// Decoding and lookups

void Tokenizer::check_id(Token id, const char* what) const {
  if (id < 0 || id >= vocab_size()) {
    throw std::out_of_range(std::string(what) + ": token id " + std::to_string(id) +
                            " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
  }
}

const std::string& Tokenizer::piece(Token id, bool render_special) const {
  check_id(id, "Tokenizer::piece");
  const TokenKind k = kinds_[id];
  if (render_special && (k == TokenKind::Control || k == TokenKind::Unknown)) return texts_[id];
  return pieces_[id];
}

std::string Tokenizer::decode(std::span<const Token> ids, bool render_special) const {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size()) {
      throw std::out_of_range("Tokenizer::decode: token id " + std::to_string(ids[i]) +
                              " at position " + std::to_string(i) +
                              " is outside the vocabulary [0, " + std::to_string(vocab_size()) +
                              ")");
    }
    out += piece(ids[i], render_special);
  }
  return out;
}

const std::string& Tokenizer::token_text(Token id) const {
  check_id(id, "Tokenizer::token_text");
  return texts_[id];
}

TokenKind Tokenizer::kind(Token id) const {
  check_id(id, "Tokenizer::kind");
  return kinds_[id];
}

std::optional<Token> Tokenizer::find(std::string_view text) const {
  const auto it = ids_by_text_.find(std::string(text));
  if (it == ids_by_text_.end()) return std::nullopt;
  return it->second;
}

bool Tokenizer::is_stop(Token id) const {
  return std::binary_search(stop_tokens_.begin(), stop_tokens_.end(), id);
}

// -------------------------------------------------------------------------------------------------

std::string StreamDecoder::push(Token id) {
  held_ += tokenizer_.piece(id, render_special_);  // throws before anything changes
  const std::size_t ready = unicode::complete_prefix_length(held_);
  std::string out = held_.substr(0, ready);
  held_.erase(0, ready);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace speclab
