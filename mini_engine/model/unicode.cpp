#include "mini_engine/model/unicode.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <stdexcept>

namespace speclab::unicode {
namespace {

constexpr CodepointClass kOther = CodepointClass::Other;
constexpr CodepointClass kLetter = CodepointClass::Letter;
constexpr CodepointClass kNumber = CodepointClass::Number;

#include "mini_engine/model/unicode_tables.inc"

// The ASCII classes, looked up without a search: most text is mostly ASCII.
struct AsciiTable {
  CodepointClass klass[128];
  constexpr AsciiTable() : klass{} {
    for (char32_t c = 0; c < 128; ++c) {
      klass[c] = (c >= '0' && c <= '9')                               ? kNumber
                 : ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) ? kLetter
                                                                      : kOther;
    }
  }
};
constexpr AsciiTable kAscii;

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Strict UTF-8: the sequence length a lead byte announces (0: never a valid lead), and the range
// its second byte must fall in (this is where overlongs, surrogates and > U+10FFFF are excluded).
int strict_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}
bool strict_second_ok(unsigned char lead, unsigned char b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return is_continuation(b);
  }
}
// True when bytes[0..n) is a valid start (complete or not) of one strict UTF-8 sequence.
bool strict_prefix_ok(const unsigned char* s, std::size_t n) {
  const int len = strict_length(s[0]);
  if (len == 0 || n > static_cast<std::size_t>(len)) return false;
  for (std::size_t i = 1; i < n; ++i) {
    if (i == 1 ? !strict_second_ok(s[0], s[1]) : !is_continuation(s[i])) return false;
  }
  return true;
}

}  // namespace

CodepointClass classify(char32_t cp) {
  if (cp < 128) return kAscii.klass[cp];
  if (cp > kMaxCodepoint) return kOther;
  const auto* it =
      std::upper_bound(std::begin(kCodepointRanges), std::end(kCodepointRanges), cp,
                       [](char32_t c, const CodepointRange& r) { return c < r.first; });
  return std::prev(it)->klass;
}

bool is_whitespace(char32_t cp) {
  return std::binary_search(std::begin(kWhiteSpace), std::end(kWhiteSpace), cp);
}

std::vector<char32_t> decode_lenient(std::string_view bytes) {
  std::vector<char32_t> out;
  out.reserve(bytes.size());
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char b = s[i];
    // The sequence length the lead byte announces, by its high bits; 0 when it is no lead byte.
    const std::size_t len = b < 0x80   ? 1
                            : b < 0xC0 ? 0
                            : b < 0xE0 ? 2
                            : b < 0xF0 ? 3
                            : b < 0xF8 ? 4
                                       : 0;
    bool ok = len > 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) ok = is_continuation(s[i + k]);
    if (!ok) {
      out.push_back(kReplacement);
      ++i;
      continue;
    }
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1Fu) : len == 3 ? (b & 0x0Fu) : (b & 0x07u);
    for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (s[i + k] & 0x3Fu);
    out.push_back(cp);
    i += len;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp <= kMaxCodepoint) {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    char hex[16];
    std::snprintf(hex, sizeof hex, "U+%X", static_cast<unsigned>(cp));
    throw std::invalid_argument(std::string("append_utf8: code point ") + hex +
                                " is above U+10FFFF and has no UTF-8 encoding");
  }
}

std::size_t complete_prefix_length(std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  // The last sequence starts at most 3 bytes before the end; look for its lead byte.
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const std::size_t start = n - back;
    if (is_continuation(s[start])) continue;
    const int len = strict_length(s[start]);
    const bool incomplete = len > 0 && back < static_cast<std::size_t>(len);
    return incomplete && strict_prefix_ok(s + start, back) ? start : n;
  }
  return n;  // only continuation bytes at the end (or nothing): none of them can be completed
}

bool is_valid_utf8(std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  while (i < n) {
    const int len = strict_length(s[i]);
    if (len == 0 || i + len > n || !strict_prefix_ok(s + i, static_cast<std::size_t>(len))) {
      return false;
    }
    i += static_cast<std::size_t>(len);
  }
  return true;
}

}  // namespace speclab::unicode
