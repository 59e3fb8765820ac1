#pragma once
// Small helpers shared by the test suites.
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <string>
#include <vector>

#include "mini_engine/core/logits.h"

namespace speclab::testing {

// Where two outputs part, for the failure message of an identity test (doctest prints only the
// first 32 tokens of each vector): "at index I: speculative S, plain P", "(end)" past either.
inline std::string first_difference(const std::vector<Token>& spec,
                                    const std::vector<Token>& base) {
  std::size_t i = 0;
  while (i < spec.size() && i < base.size() && spec[i] == base[i]) ++i;
  const auto at = [i](const std::vector<Token>& v) {
    return i < v.size() ? std::to_string(v[i]) : std::string("(end)");
  };
  return "at index " + std::to_string(i) + ": speculative " + at(spec) + ", plain " + at(base);
}

// Logits whose row i has its maximum at argmaxes[i] (score 1, every other entry 0).
inline Logits logits_with_argmax(std::initializer_list<Token> argmaxes, int vocab = 32) {
  Logits l(static_cast<int>(argmaxes.size()), vocab);
  int i = 0;
  for (Token t : argmaxes) l.row(i++)[t] = 1.0f;
  return l;
}

// The token tools/testrun.py gave this run of the test program, or "" when it was started some
// other way (defined in tests/support/doctest_main.cpp).
const std::string& case_token();

// Ends the current test case as SKIPPED (ctest SKIP_RETURN_CODE 77), printing the reason and the
// case's token: tools/testrun.py counts an exit 77 as a skip only with both, so code under test
// that calls exit(77) is not taken for one. Safe only because every case runs in its own process
// (tools/testrun.py).
[[noreturn]] inline void skip(const std::string& reason) {
  std::cout << "SKIPPED: " << reason << "\n";
  if (!case_token().empty()) std::cout << "speclab-case-skip " << case_token() << "\n";
  std::cout << std::flush;
  std::_Exit(77);
}

}  // namespace speclab::testing
