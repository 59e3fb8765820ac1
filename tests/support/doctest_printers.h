#pragma once
// How doctest prints the values of a failed check, for types it has no printer for.
//
// Without this, `CHECK(ngram_propose(ctx, 1, 2) == V{8, 8})` fails with "{?} == {?}", and a
// student cannot see what their code returned. Every test (the labs' public and hidden cases and
// the engine's) gets this header force-included (cmake/SpecLabTesting.cmake,
// speclab_doctest_printers), so no test file needs to include it.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace doctest {

// {3, 1, 4}: the items as doctest prints each one; past kShown items, the rest is counted:
// {0, 1, ..., 31, ... (200 items)}.
template <typename T, typename A>
struct StringMaker<std::vector<T, A>> {
  static constexpr std::size_t kShown = 32;
  static String convert(const std::vector<T, A>& v) {
    std::string s = "{";
    for (std::size_t i = 0; i < v.size() && i < kShown; ++i) {
      if (i > 0) s += ", ";
      s += toString(v[i]).c_str();
    }
    if (v.size() > kShown) s += ", ... (" + std::to_string(v.size()) + " items)";
    s += "}";
    return String(s.c_str());
  }
};

// (first, second): a map's entry, such as lab 04's (key, values) pairs, which printed as {?}.
template <typename A, typename B>
struct StringMaker<std::pair<A, B>> {
  static String convert(const std::pair<A, B>& p) {
    std::string s = "(";
    s += toString(p.first).c_str();
    s += ", ";
    s += toString(p.second).c_str();
    return String((s + ")").c_str());
  }
};

// A C string's text, or NULL: doctest 2.4.9 prints a const char* as its address, so INFO(name)
// and CAPTURE(name) with a `const char* name` logged "0x55d1c2a4f642" (string literals, which are
// arrays, always printed as text).
template <>
struct StringMaker<const char*> {
  static String convert(const char* p) { return p != nullptr ? String(p) : String("NULL"); }
};
template <>
struct StringMaker<char*> {
  static String convert(const char* p) { return StringMaker<const char*>::convert(p); }
};

}  // namespace doctest
