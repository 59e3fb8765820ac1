// The printers a failed check uses (tests/support/doctest_printers.h, force-included): a student
// whose draft is wrong must see the draft, not "{?}".
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "mini_engine/core/token.h"

TEST_SUITE("test support / doctest printers") {
  TEST_CASE("a vector of tokens prints its items") {
    CHECK(std::string(doctest::toString(std::vector<speclab::Token>{3, 1, 4}).c_str()) ==
          "{3, 1, 4}");
    CHECK(std::string(doctest::toString(std::vector<speclab::Token>{}).c_str()) == "{}");
    CHECK(std::string(doctest::toString(std::vector<std::vector<int>>{{1}, {2, 3}}).c_str()) ==
          "{{1}, {2, 3}}");
  }

  TEST_CASE("a pair prints both its parts, also inside a vector (lab 04's pool contents)") {
    using Entry = std::pair<std::vector<int>, std::vector<std::vector<int>>>;
    CHECK(std::string(doctest::toString(std::vector<Entry>{{{1, 2}, {{3}, {4, 5}}}}).c_str()) ==
          "{({1, 2}, {{3}, {4, 5}})}");
  }

  TEST_CASE("a long vector prints its first 32 items and its length") {
    std::vector<speclab::Token> v(200);
    for (int i = 0; i < 200; ++i) v[static_cast<size_t>(i)] = i;
    std::string want = "{";
    for (int i = 0; i < 32; ++i) want += (i > 0 ? ", " : "") + std::to_string(i);
    want += ", ... (200 items)}";
    CHECK(std::string(doctest::toString(v).c_str()) == want);
  }

  // INFO and CAPTURE print with toString too: INFO(name) logged "0x55d1c2a4f642".
  TEST_CASE("a const char* prints its text, not its address") {
    const char* name = "prompt-lookup";
    CHECK(std::string(doctest::toString(name).c_str()) == "prompt-lookup");
    const char* none = nullptr;
    CHECK(std::string(doctest::toString(none).c_str()) == "NULL");
    char buffer[] = "abc";
    char* mutable_name = buffer;
    CHECK(std::string(doctest::toString(mutable_name).c_str()) == "abc");
  }
}
