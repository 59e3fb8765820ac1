#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "mini_engine/core/logits.h"

using namespace speclab;

namespace {

// What argmax promises, one element at a time: the first index whose score no later score
// exceeds (ties to the lowest index; a NaN never exceeds anything, and nothing exceeds a NaN).
Token first_max(const std::vector<float>& row) {
  size_t best = 0;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] > row[best]) best = i;
  }
  return static_cast<Token>(best);
}

// A small deterministic generator (the test must not depend on the library's RNG).
std::uint32_t next(std::uint32_t& s) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return s;
}

}  // namespace

TEST_SUITE("engine / logits") {
  TEST_CASE("argmax is the first largest score, at every row length and with special values") {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // Few distinct values, so ties (and +0 against -0) are common, at lengths around the
    // vector widths and their tails.
    const float values[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, inf, -inf, nan};
    std::uint32_t s = 12345;
    for (int n = 1; n <= 70; ++n) {
      for (int trial = 0; trial < 200; ++trial) {
        std::vector<float> row(static_cast<size_t>(n));
        for (float& x : row) x = values[next(s) % 8];
        INFO("length " << n << ", trial " << trial);
        CHECK(argmax(row) == first_max(row));
      }
    }
  }

  TEST_CASE("argmax finds the largest score of a vocabulary-sized row wherever it is") {
    std::vector<float> row(49152);
    std::uint32_t s = 777;
    for (float& x : row) x = static_cast<float>(next(s) % 100000) / 1000.0f - 50.0f;
    for (int at : {0, 1, 15, 16, 17, 24575, 49135, 49150, 49151}) {
      std::vector<float> r = row;
      r[static_cast<size_t>(at)] = 60.0f;
      CHECK(argmax(r) == at);
      r[49151 - static_cast<size_t>(at) / 2] = 60.0f;  // an equal score later: the first wins
      CHECK(argmax(r) == std::min(at, 49151 - at / 2));
    }
    CHECK(argmax(row) == first_max(row));
  }

  TEST_CASE("argmax of a row that starts with NaN is 0, as nothing compares greater") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> row(40, 1.0f);
    row[0] = nan;
    CHECK(argmax(row) == 0);
  }

  TEST_CASE("a block of logits needs rows >= 0 and a vocabulary, and row() an index inside it") {
    const Logits empty(0, 8);
    CHECK(empty.rows() == 0);
    CHECK(empty.vocab() == 8);
    CHECK_THROWS_WITH_AS(Logits(-1, 8), doctest::Contains("rows=-1"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(Logits(2, 0), doctest::Contains("vocab=0"), std::invalid_argument);
    Logits l(2, 3);
    CHECK(std::vector<float>(l.row(1).begin(), l.row(1).end()) == std::vector<float>{0, 0, 0});
    CHECK(l.row(1).data() == l.data() + 3);  // row-major: row 1 starts vocab() floats in
    const Logits& cl = l;
    for (int bad : {-1, 2}) {
      CAPTURE(bad);
      CHECK_THROWS_WITH_AS(l.row(bad), doctest::Contains("only 2 rows"), std::out_of_range);
      CHECK_THROWS_AS(cl.row(bad), std::out_of_range);
    }
  }

  TEST_CASE("argmax of an empty row is an error, not a read past the end") {
    CHECK_THROWS_AS(argmax(std::span<const float>()), std::invalid_argument);
  }

  TEST_CASE("require_finite_choices names a NaN choice and refuses ids it cannot read") {
    Logits l(2, 8);
    l.row(1)[5] = std::numeric_limits<float>::quiet_NaN();
    l.row(0)[2] = -INFINITY;  // a score: a token ruled out, not a breakdown
    const std::vector<Token> fine = {2, 4}, broken = {3, 5};
    CHECK_NOTHROW(require_finite_choices(l, fine, 10, "toy"));
    CHECK_THROWS_WITH_AS(
        require_finite_choices(l, broken, 10, "toy"),
        doctest::Contains("toy: the logit of the token chosen at position 11 is NaN"),
        std::runtime_error);
    // An id outside the vocabulary used to be read past the row (ASan: heap-buffer-overflow).
    for (Token bad : {8, 100, -1}) {
      CAPTURE(bad);
      const std::vector<Token> ids = {bad};
      CHECK_THROWS_WITH_AS(require_finite_choices(l, ids, 0, "toy"),
                           doctest::Contains("outside the vocabulary [0, 8)"),
                           std::invalid_argument);
    }
    const std::vector<Token> three = {1, 1, 1};
    CHECK_THROWS_AS(require_finite_choices(l, three, 0, "toy"), std::out_of_range);
    // Too many choices is checked before any of them is read: a bad id or a NaN among the first
    // rows used to decide which exception came out.
    const std::vector<Token> bad_id_then_too_many = {1, 100, 1}, nan_then_too_many = {2, 5, 1};
    CHECK_THROWS_WITH_AS(require_finite_choices(l, bad_id_then_too_many, 0, "toy"),
                         doctest::Contains("toy: require_finite_choices: 3 tokens chosen for 2 "
                                           "rows of logits"),
                         std::out_of_range);
    CHECK_THROWS_AS(require_finite_choices(l, nan_then_too_many, 0, "toy"), std::out_of_range);
  }
}
