// Lab 01 -- verify_greedy. Chapter: book/lab01_prompt_lookup.md
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "prompt_lookup.h"
#include "test_util.h"

using speclab::Token;
using speclab::testing::logits_with_argmax;
using V = std::vector<Token>;

TEST_SUITE("lab01 / Verifying: greedy") {
  TEST_CASE("all k drafts accepted -> bonus token appended") {
    const auto logits = logits_with_argmax({4, 5, 6, 7});
    const auto r = speclab::verify_greedy(V{4, 5, 6}, logits);
    INFO("every draft matched, so the last row gives one extra token for free");
    CHECK(r.accepted == 3);
    CHECK(r.emitted == V{4, 5, 6, 7});
  }

  TEST_CASE("first mismatch -> correction token, later drafts ignored") {
    const auto logits = logits_with_argmax({4, 9, 6, 7});
    const auto r = speclab::verify_greedy(V{4, 5, 6}, logits);
    INFO(
        "draft 5 disagrees with the target's 9: emit 9 and stop, even though draft 6 matches row "
        "2");
    CHECK(r.accepted == 1);
    CHECK(r.emitted == V{4, 9});
  }

  TEST_CASE("a rejected first draft still emits one target token") {
    const auto logits = logits_with_argmax({2, 3});
    const auto r = speclab::verify_greedy(V{8}, logits);
    INFO("row 0's argmax 2 rejects draft 8: emit 2, the correction from row 0, and stop");
    CHECK(r.accepted == 0);
    CHECK(r.emitted == V{2});
  }

  TEST_CASE("no drafts -> exactly the target's next token (plain decoding)") {
    const auto logits = logits_with_argmax({11});
    const auto r = speclab::verify_greedy(V{}, logits);
    INFO("with no drafts the one row gives the bonus: row 0's argmax, 11");
    CHECK(r.accepted == 0);
    CHECK(r.emitted == V{11});
  }

  TEST_CASE("each draft is checked against its own row (frozen-context off-by-one)") {
    // Row 0 prefers 4; after accepting 4 the target prefers 6. A verify that keeps looking at
    // row 0 would wrongly accept the second 4.
    const auto logits = logits_with_argmax({4, 6, 4});
    const auto r = speclab::verify_greedy(V{4, 4}, logits);
    INFO(
        "row 0's argmax 4 accepts the first 4; row 1's argmax 6 rejects the second 4 and is the "
        "correction. Row i is the context extended by drafts 0..i-1: see the chapter, 'The two "
        "off-by-ones'");
    CHECK(r.accepted == 1);
    CHECK(r.emitted == V{4, 6});
  }

  TEST_CASE("ties in the logits go to the lowest token id, as argmax documents") {
    speclab::Logits logits(2, 8);
    logits.row(0)[3] = 2.0f;
    logits.row(0)[5] = 2.0f;
    logits.row(1)[1] = 1.0f;
    const auto r = speclab::verify_greedy(V{3}, logits);
    INFO(
        "row 0 ties 3 and 5: argmax picks 3, so draft 3 is accepted; row 1's argmax 1 is the "
        "bonus");
    CHECK(r.emitted == V{3, 1});
    {
      INFO(
          "draft 5 only ties the best score: the target's choice is 3, so 5 is rejected and 3 is "
          "the correction (accepting a draft that scores as high as the argmax is not the rule)");
      const auto tied = speclab::verify_greedy(V{5}, logits);
      CHECK(tied.accepted == 0);
      CHECK(tied.emitted == V{3});
    }
    INFO("a tie in the bonus row goes to the lowest id too: row 1 ties 6 and 2, the bonus is 2");
    speclab::Logits bonus_tie(2, 8);
    bonus_tie.row(0)[3] = 2.0f;
    bonus_tie.row(1)[6] = 1.0f;
    bonus_tie.row(1)[2] = 1.0f;
    CHECK(speclab::verify_greedy(V{3}, bonus_tie).emitted == V{3, 2});
  }

  TEST_CASE("a logits block of the wrong height is rejected with std::invalid_argument") {
    const auto logits = logits_with_argmax({1, 2});
    {
      INFO("too few rows: 2 drafts need 3, and this block has 2");
      CHECK_THROWS_AS(speclab::verify_greedy(V{1, 2}, logits), std::invalid_argument);
    }
    {
      INFO(
          "too few rows with the first draft rejected: the height is checked before any row is "
          "read, not when the loop runs out of rows");
      CHECK_THROWS_AS(speclab::verify_greedy(V{9, 2}, logits), std::invalid_argument);
    }
    INFO(
        "too many rows: no drafts need exactly 1, and this block has 2 (a check rows < k + 1 "
        "misses it)");
    CHECK_THROWS_AS(speclab::verify_greedy(V{}, logits), std::invalid_argument);
  }
}
