// core/printable.h: names from files and users made safe for messages.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "mini_engine/core/printable.h"

using namespace speclab;
using namespace std::string_literals;

TEST_SUITE("engine / printable") {
  TEST_CASE("printable writes control bytes as \\xNN and keeps newline, tab and UTF-8") {
    CHECK(printable("a\0b"s) == "a\\x00b");
    CHECK(printable("\x1b[31mred\x7f") == "\\x1B[31mred\\x7F");
    CHECK(printable("line\n\ttab") == "line\n\ttab");
    CHECK(printable("caf\xc3\xa9 \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xf0\x9f\x98\x80");
    CHECK(printable("") == "");
  }

  TEST_CASE("clipped keeps short text and cuts long text before a whole character") {
    CHECK(clipped("abc", 3) == "abc");
    CHECK(clipped("abcd", 3) == "abc... (4 bytes in all)");
    // "a" then e-acute (2 bytes): 2 bytes would cut the e-acute in two, so only "a" is kept.
    CHECK(clipped("a\xc3\xa9z", 2) == "a... (4 bytes in all)");
    CHECK(clipped("a\xc3\xa9z", 3) == "a\xc3\xa9... (4 bytes in all)");
    // An emoji (4 bytes) that starts the text: any cut inside it keeps nothing of it.
    for (std::size_t max = 0; max < 4; ++max) {
      CAPTURE(max);
      CHECK(clipped("\xf0\x9f\x98\x80!", max) == "... (5 bytes in all)");
    }
    CHECK(clipped(std::string(100, 'x')) == std::string(64, 'x') + "... (100 bytes in all)");
    CHECK(clipped("a\0b"s, 2) == "a\0... (3 bytes in all)"s);  // printable() is the caller's job
  }
}
