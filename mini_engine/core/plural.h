#pragma once
// A count with its noun in the number the count asks for, for what the engine and the CLI print:
// "1 token", "2 tokens", "0 tokens". One place for it, so no output line reads "1 repeats".
#include <concepts>
#include <string>
#include <string_view>

namespace speclab {

// "N noun" when N is 1, otherwise "N nouns" (0 included); `plural_noun` is the plural of a noun
// that does not just add an s ("1 die", "2 dice"). Words before the noun go in with it: plural(3,
// "drafter setting") is "3 drafter settings".
std::string plural(std::integral auto n, std::string_view noun, std::string_view plural_noun = {}) {
  std::string out = std::to_string(n);
  out += ' ';
  if (n == 1) {
    out += noun;
  } else if (!plural_noun.empty()) {
    out += plural_noun;
  } else {
    out += noun;
    out += 's';
  }
  return out;
}

}  // namespace speclab
