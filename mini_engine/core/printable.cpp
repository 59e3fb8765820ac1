#include "mini_engine/core/printable.h"

#include <cstdio>

namespace speclab {

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

std::string clipped(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t keep = max_bytes;
  // Back to the start of a character: at most 3 continuation bytes (10xxxxxx) come before it.
  for (int i = 0; i < 3 && keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80;
       ++i) {
    --keep;
  }
  return std::string(text.substr(0, keep)) + "... (" + std::to_string(text.size()) +
         " bytes in all)";
}

}  // namespace speclab
