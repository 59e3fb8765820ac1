// Lab 03 -- verify_sampled on hand-made logits. Chapter: book/lab03_nasd.md
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <vector>

#include "mini_engine/sampling/rng.h"
#include "nasd.h"
#include "prompt_lookup.h"  // verify_greedy (lab 01's reference solution)

using speclab::Logits;
using speclab::SamplingParams;
using speclab::Token;
using speclab::verify_sampled;
using V = std::vector<Token>;

namespace {

constexpr int kVocab = 16;

// Row i allows only tokens[i] (every other score is -inf): the draw there is certain.
Logits certain_rows(std::initializer_list<Token> tokens) {
  Logits l(static_cast<int>(tokens.size()), kVocab);
  int i = 0;
  for (Token t : tokens) {
    auto row = l.row(i++);
    for (float& x : row) x = -INFINITY;
    row[static_cast<std::size_t>(t)] = 0.0f;
  }
  return l;
}

// `rows` rows, each a fair coin between tokens 2 and 5.
Logits coin_rows(int rows) {
  Logits l(rows, kVocab);
  for (int i = 0; i < rows; ++i) {
    auto row = l.row(i);
    for (float& x : row) x = -INFINITY;
    row[2] = 0.0f;
    row[5] = 0.0f;
  }
  return l;
}

Token other_side(Token t) { return t == 2 ? 5 : 2; }

}  // namespace

TEST_SUITE("lab03 / Verifying under sampling") {
  TEST_CASE("all drafts accepted -> the bonus is the draw from the last row") {
    const SamplingParams sp{1.0, 7, 0};
    const auto r = verify_sampled(V{4, 5, 6}, certain_rows({4, 5, 6, 7}), 10, sp);
    CHECK(r.accepted == 3);
    CHECK(r.emitted == V{4, 5, 6, 7});
  }

  TEST_CASE(
      "first mismatch -> the row's token is emitted and later drafts are ignored (certain rows)") {
    const SamplingParams sp{1.0, 7, 0};
    const auto r = verify_sampled(V{4, 5, 6}, certain_rows({4, 9, 6, 7}), 10, sp);
    // Every row here puts all its probability on one token, so any draw gives it: this case is
    // about where the round stops. Which draw is emitted at a mismatch (row i's own, not a fresh
    // one) is the business of "the draw at row i is the plain decoder's draw at position + i".
    INFO("draft 5 meets the draw 9: emit 9 and stop, even though draft 6 would match row 2");
    CHECK(r.accepted == 1);
    CHECK(r.emitted == V{4, 9});
    const auto none = verify_sampled(V{}, certain_rows({11}), 3, sp);
    CHECK(none.accepted == 0);
    CHECK(none.emitted == V{11});
  }

  TEST_CASE("each draft is compared with a draw from its own row (frozen-context off-by-one)") {
    const SamplingParams sp{1.0, 1, 0};
    const auto r = verify_sampled(V{4, 4}, certain_rows({4, 6, 4}), 0, sp);
    INFO("row 1 is the target after the accepted 4: it draws 6, so the second 4 is rejected");
    CHECK(r.accepted == 1);
    CHECK(r.emitted == V{4, 6});
  }

  TEST_CASE("the draw at row i is the plain decoder's draw at position + i") {
    const Logits rows = coin_rows(3);
    // Positions past 2^31 (a position is 64-bit: one cut to int draws elsewhere), and a
    // temperature near 0 as well as 1: equal logits are a fair coin at any temperature above 0,
    // so a rule that treats "nearly 0" as greedy emits other tokens than plain decoding.
    std::vector<std::int64_t> positions;
    for (const std::int64_t start : {std::int64_t{0}, (std::int64_t{1} << 31) - 50,
                                     (std::int64_t{1} << 32) + 7, std::int64_t{1} << 40}) {
      for (std::int64_t p = start; p < start + 100; ++p) positions.push_back(p);
    }
    for (const double temperature : {1.0, 1e-3}) {
      for (const std::int64_t pos : positions) {
        const SamplingParams sp{temperature, 42, 3};
        INFO("temperature ", temperature,
             " (plain decoding is greedy at exactly 0 only: above 0, however little, it draws)");
        const Token e0 = speclab::sample_at(rows.row(0), sp, pos);
        const Token e1 = speclab::sample_at(rows.row(1), sp, pos + 1);
        const Token e2 = speclab::sample_at(rows.row(2), sp, pos + 2);
        // REQUIRE: the first position that fails is enough (CHECK would print up to 1200 failures).
        INFO("position ", pos);
        {
          INFO("drafts ", e0, " ", e1, ": the plain decoder draws ", e0, " ", e1, " ", e2,
               " (row i's draw is sample_at(row i, sampling, position + i): the same number the "
               "plain decoder uses there, not a draw of your own)");
          const auto hit = verify_sampled(V{e0, e1}, rows, pos, sp);
          REQUIRE(hit.accepted == 2);
          REQUIRE(hit.emitted == V{e0, e1, e2});
        }
        INFO("drafts ", e0, " ", other_side(e1), ": the draw ", e1,
             " at row 1 rejects the second draft and is emitted itself, not a new draw (see "
             "'Why a fresh draw after a mismatch is biased')");
        const auto miss = verify_sampled(V{e0, other_side(e1)}, rows, pos, sp);
        REQUIRE(miss.accepted == 1);
        REQUIRE(miss.emitted == V{e0, e1});
      }
    }
  }

  TEST_CASE("a rejected draft is never emitted as its own correction") {
    // Draft 2 against a fair coin {2, 5}: it is accepted about half the time. When it is
    // rejected the draw was 5, so 5 must come out. A rule that draws again after the mismatch
    // emits 2 about half of those times: the rejected draft, over-represented.
    const Logits rows = coin_rows(2);
    const SamplingParams sp{1.0, 5, 0};
    int rejected = 0, accepted = 0;
    for (std::int64_t pos = 0; pos < 1000; ++pos) {
      const auto r = verify_sampled(V{2}, rows, pos, sp);
      if (r.accepted == 0) {
        ++rejected;
        INFO("position ", pos, ": the draft 2 was rejected, so the draw was 5");
        REQUIRE(r.emitted == V{5});
      } else {
        ++accepted;
        CHECK(r.emitted.front() == 2);
      }
    }
    INFO("a fair coin: both outcomes must occur often");
    CHECK(rejected > 400);
    CHECK(accepted > 400);
  }

  TEST_CASE("temperature 0 gives exactly verify_greedy's result") {
    const SamplingParams greedy{0.0, 9, 0};
    for (std::uint64_t trial = 0; trial < 200; ++trial) {
      const int k = static_cast<int>(trial % 5);
      Logits l(k + 1, kVocab);
      for (int i = 0; i <= k; ++i) {
        for (int v = 0; v < kVocab; ++v) {
          // Scores in {0..3}: plenty of ties, which argmax breaks toward the lower id.
          l.row(i)[static_cast<std::size_t>(v)] =
              static_cast<float>(speclab::counter_hash(trial, i, v) % 4);
        }
      }
      V drafts;
      for (int i = 0; i < k; ++i) {
        const Token best = speclab::argmax(l.row(i));
        drafts.push_back(speclab::counter_hash(trial, 99, i) % 4 == 0 ? (best + 1) % kVocab : best);
      }
      const auto want = speclab::verify_greedy(drafts, l);
      const auto got = verify_sampled(drafts, l, static_cast<std::int64_t>(trial), greedy);
      INFO("trial ", trial);
      REQUIRE(got.accepted == want.accepted);
      REQUIRE(got.emitted == want.emitted);
    }
  }

  TEST_CASE("a logits block of the wrong height or a negative position is rejected") {
    const SamplingParams sp{1.0, 0, 0};
    CHECK_THROWS_AS(verify_sampled(V{1, 2}, certain_rows({1, 2}), 0, sp), std::invalid_argument);
    CHECK_THROWS_AS(verify_sampled(V{}, certain_rows({1, 2}), 0, sp), std::invalid_argument);
    CHECK_THROWS_AS(verify_sampled(V{1}, certain_rows({1, 2}), -1, sp), std::invalid_argument);
    INFO("no drafts at position -1: the position is checked whatever the drafts");
    CHECK_THROWS_AS(verify_sampled(V{}, certain_rows({1}), -1, sp), std::invalid_argument);
  }
}
