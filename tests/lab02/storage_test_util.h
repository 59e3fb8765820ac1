#pragma once
// Helpers shared by the lab 02 test files.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ngram_storage.h"

namespace speclab::lab02_testing {

// The largest id state_text() looks at: texts compared with it use the ids 0..kMaxId only.
inline constexpr Token kMaxId = 9;

// Everything a one-level storage holds, in words: its sizes, then each known context over the
// ids 0..kMaxId (in increasing order) with its prediction and its nonzero counts. Two storages
// with the same text predict and count the same from then on; the sizes also tell an entry the
// walk cannot reach (a key holding an id outside 0..kMaxId) from none.
inline std::string state_text(const OneLevelNGramStorage& s) {
  std::string out =
      "contexts=" + std::to_string(s.contexts()) + " pairs=" + std::to_string(s.size());
  std::vector<Token> context(static_cast<std::size_t>(s.max_context()), 0);
  for (;;) {
    const Prediction p = s.next_token(context);
    if (p.known) {
      out += "; (";
      for (std::size_t i = 0; i < context.size(); ++i) {
        if (i > 0) out += ' ';
        out += std::to_string(context[i]);
      }
      out += ") -> " + std::to_string(p.token) + " {";
      for (Token t = 0; t <= kMaxId; ++t) {
        if (const std::int64_t c = s.count(context, t); c > 0) {
          out += ' ';
          out += std::to_string(t);
          out += ':';
          out += std::to_string(c);
        }
      }
      out += " }";
    }
    std::size_t i = context.size();  // the next context, as an odometer over 0..kMaxId
    while (i > 0 && context[i - 1] == kMaxId) context[--i] = 0;
    if (i == 0) break;
    ++context[i - 1];
  }
  return out;
}

// Every level's state_text, from the shortest context to the longest.
inline std::string state_text(const NGramStorage& s) {
  std::string out;
  for (int c = s.min_context(); c <= s.max_context(); ++c) {
    out +=
        (out.empty() ? "" : " | ") + ("level " + std::to_string(c) + ": ") + state_text(s.level(c));
  }
  return out;
}

// A drafter's storage, whichever of the two it is.
inline std::string state_text(const NGramModel& s) {
  if (const auto* one = dynamic_cast<const OneLevelNGramStorage*>(&s)) return state_text(*one);
  if (const auto* multi = dynamic_cast<const NGramStorage*>(&s)) return state_text(*multi);
  throw std::logic_error("state_text: not a lab 02 storage");
}

}  // namespace speclab::lab02_testing
