#pragma once
// What a figures program (tests/book/figures_*.cpp) prints for tests/book/check_quoted.py: one
// line per figure, CHAPTER<TAB>WHAT<TAB>PHRASE, where PHRASE is the chapter's own words around the
// figure, with the figure as the code computes it.
#include <cstdarg>
#include <cstdio>
#include <string>

namespace speclab::book {

// printf-style formatting into a std::string (GCC 12 has no std::format).
inline std::string fmt(const char* format, ...) {
  va_list args;
  va_start(args, format);
  char buf[512];
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// CHAPTER must contain PHRASE (check_quoted.py ignores line breaks and runs of spaces).
inline void quote(const char* chapter, const std::string& what, const std::string& phrase) {
  std::printf("%s\t%s\t%s\n", chapter, what.c_str(), phrase.c_str());
}

}  // namespace speclab::book
