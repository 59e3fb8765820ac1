#pragma once
// The little Unicode the tokenizer needs: code point classes for the pre-tokenizer, and UTF-8
// decoding and encoding with the same leniency as llama.cpp, so that every byte string (valid
// UTF-8 or not) is split exactly as the reference splits it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace speclab::unicode {

// What the GPT-2 pre-tokenizer asks of a code point. The classes follow the Unicode general
// category (L* letters, N* numbers) of Unicode 15.1, the version llama.cpp's tables use; see
// tools/gen_unicode_tables.py. White space is a separate property: is_whitespace().
enum class CodepointClass : std::uint8_t { Other, Letter, Number };

struct CodepointRange {
  char32_t first;  // the class holds from here up to the next range's first
  CodepointClass klass;
};

// The class of `cp`. Anything above U+10FFFF is Other.
CodepointClass classify(char32_t cp);
// True for the 25 code points with the Unicode White_Space property (space, tab, LF, CR, NBSP...).
bool is_whitespace(char32_t cp);

inline constexpr char32_t kReplacement = 0xFFFD;
inline constexpr char32_t kMaxCodepoint = 0x10FFFF;

// Decodes `bytes` the way llama.cpp does before it pre-tokenizes, which is more lenient than
// strict UTF-8 in one direction and stricter in another:
//  - a sequence is accepted when its lead byte announces n bytes (0xxxxxxx, 110xxxxx, 1110xxxx,
//    11110xxx) and the n-1 bytes after it are continuation bytes (10xxxxxx). Overlong forms,
//    surrogates and values up to 0x1FFFFF are accepted as they are (C0 80 decodes to U+0000);
//  - anything else (a stray continuation byte, a lead byte F8..FF, a sequence cut short by the
//    end of `bytes`) becomes one U+FFFD for that single byte, and decoding resumes at the next.
std::vector<char32_t> decode_lenient(std::string_view bytes);

// Appends the UTF-8 encoding of `cp` (1 to 4 bytes; surrogates are encoded like any other value).
// Throws std::invalid_argument when cp > U+10FFFF, appending nothing.
void append_utf8(std::string& out, char32_t cp);

// For streaming output: the length of the longest prefix of `bytes` that does not end inside a
// UTF-8 sequence which could still be completed by more bytes. The bytes after it (at most 3)
// are a proper prefix of a valid (strict RFC 3629) sequence. Bytes that can never become valid
// do not count as incomplete: they are left in the prefix, so a caller never waits on them.
std::size_t complete_prefix_length(std::string_view bytes);

// True when `bytes` is valid UTF-8 in the strict sense (no overlongs, surrogates or values above
// U+10FFFF).
bool is_valid_utf8(std::string_view bytes);

}  // namespace speclab::unicode
