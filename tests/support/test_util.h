#pragma once
// Small helpers shared by the test suites.
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <string>
#include <vector>

#include "mini_engine/core/logits.h"

namespace speclab::testing {

// Logits whose row i has its maximum at argmaxes[i] (score 1, every other entry 0).
inline Logits logits_with_argmax(std::initializer_list<Token> argmaxes, int vocab = 32) {
  Logits l(static_cast<int>(argmaxes.size()), vocab);
  int i = 0;
  for (Token t : argmaxes) l.row(i++)[t] = 1.0f;
  return l;
}

// Ends the current test case as SKIPPED (ctest SKIP_RETURN_CODE 77), printing the reason.
// Safe only because every case runs in its own process (tools/testrun.py).
[[noreturn]] inline void skip(const std::string& reason) {
  std::cout << "SKIPPED: " << reason << std::endl;
  std::_Exit(77);
}

}  // namespace speclab::testing
