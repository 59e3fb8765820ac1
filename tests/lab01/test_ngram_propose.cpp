// Lab 01 -- ngram_propose. Chapter: book/lab01_prompt_lookup.md
#include <doctest/doctest.h>

#include <limits>
#include <stdexcept>
#include <vector>

#include "prompt_lookup.h"

using speclab::Token;
using V = std::vector<Token>;

TEST_SUITE("lab01 / Proposing: the scan") {
  TEST_CASE("a repeated bigram proposes the tokens that followed its earlier occurrence") {
    const V ctx = {1, 2, 3, 4, 9, 1, 2};
    INFO("context {1,2,3,4,9,1,2}, n=2, k=3: the earlier '1 2' is followed by 3 4 9");
    CHECK(speclab::ngram_propose(ctx, 2, 3) == V{3, 4, 9});
  }

  TEST_CASE("the suffix itself never counts as a match (self-match off-by-one)") {
    // The only occurrence of '7 8' is the suffix itself: nothing earlier matches.
    const V ctx = {1, 2, 3, 7, 8};
    INFO("see the chapter, 'The two off-by-ones': start the scan one position before the suffix");
    CHECK(speclab::ngram_propose(ctx, 2, 4) == V{});
    // Periodic text: the match must come from one period back, not from the suffix.
    const V periodic = {5, 6, 7, 5, 6, 7, 5, 6};
    CHECK(speclab::ngram_propose(periodic, 2, 3) == V{7, 5, 6});
  }

  TEST_CASE("the most recent earlier occurrence wins") {
    // '4' occurs at positions 0 and 3 before the suffix; the later one (followed by 8) wins.
    const V ctx = {4, 1, 1, 4, 8, 8, 4};
    {
      INFO("scan latest-first: the occurrence at index 3 is followed by 8 8 4");
      CHECK(speclab::ngram_propose(ctx, 1, 2) == V{8, 8});
      CHECK(speclab::ngram_propose(ctx, 1, 3) == V{8, 8, 4});
    }
    // The most recent earlier occurrence may overlap the suffix: '1 2 1' at index 0 shares its
    // last token with the suffix '1 2 1' at index 2.
    {
      INFO("an earlier occurrence may overlap the suffix; see the chapter, 'Proposing: the scan'");
      CHECK(speclab::ngram_propose(V{1, 2, 1, 2, 1}, 3, 4) == V{2, 1});
    }
    INFO(
        "context {7,7,7}, n=2: the earlier '7 7' at index 0 overlaps the suffix, and the "
        "context is only n + 1 tokens long: both are allowed ('Proposing: the scan'); if you "
        "proposed nothing, does your scan start at the suffix itself? ('The two off-by-ones')");
    CHECK(speclab::ngram_propose(V{7, 7, 7}, 2, 3) == V{7});
  }

  TEST_CASE("a match close to the end proposes fewer than k tokens") {
    // The latest earlier '1' is at index 1 and only one token follows it before the end.
    const V ctx = {1, 1, 1};
    {
      INFO("the latest earlier '1' is at index 1 (not index 0): only the last token follows it");
      CHECK(speclab::ngram_propose(ctx, 1, 5) == V{1});
    }
    const V ctx2 = {3, 9, 2, 3, 9};
    {
      INFO("'3 9' at index 0 is followed by 2 3 9, then the context ends: k = 10, but 3 tokens");
      CHECK(speclab::ngram_propose(ctx2, 2, 10) == V{2, 3, 9});
    }
    INFO("any k >= 0 is allowed: INT_MAX is cut at the end too (start + k overflows an int)");
    CHECK(speclab::ngram_propose(ctx2, 2, std::numeric_limits<int>::max()) == V{2, 3, 9});
  }

  TEST_CASE("only n-token matches count: a shorter partial match proposes nothing") {
    const V ctx = {5, 2, 9, 3, 2};  // '3 2' never occurred before; '2' alone did
    {
      INFO(
          "context {5,2,9,3,2}, n=2: '3 2' never occurred before, and a match of '2' alone "
          "(shorter than n) does not count");
      CHECK(speclab::ngram_propose(ctx, 2, 3) == V{});
    }
    INFO("context {5,2,9,3,2}, n=1: the earlier '2' at index 1 is followed by 9 3 2");
    CHECK(speclab::ngram_propose(ctx, 1, 3) == V{9, 3, 2});
  }

  TEST_CASE("edge cases: empty context, context no longer than n, k = 0") {
    {
      // Logged before each call, so that a crash (context.last(n) on a context shorter than n,
      // say) shows which input it was.
      INFO("an empty context, n=1: nothing to match");
      CHECK(speclab::ngram_propose(V{}, 1, 3) == V{});
    }
    {
      INFO("a context of n tokens ({7}, n=1 and {7,7}, n=2) is only the suffix: nothing earlier");
      CHECK(speclab::ngram_propose(V{7}, 1, 3) == V{});
      CHECK(speclab::ngram_propose(V{7, 7}, 2, 3) == V{});
    }
    {
      INFO("k = 0 asks for nothing");
      CHECK(speclab::ngram_propose(V{7, 7, 7}, 1, 0) == V{});
    }
    INFO(
        "a context of n + 1 tokens is long enough: its first n tokens are an earlier occurrence, "
        "and exactly one token follows them");
    CHECK(speclab::ngram_propose(V{7, 7}, 1, 3) == V{7});
    CHECK(speclab::ngram_propose(V{4, 4, 4}, 2, 3) == V{4});
  }

  TEST_CASE("invalid n or k is rejected with std::invalid_argument") {
    const V ctx = {1, 2, 1, 2};
    CHECK_THROWS_AS(speclab::ngram_propose(ctx, 0, 3), std::invalid_argument);
    CHECK_THROWS_AS(speclab::ngram_propose(ctx, 1, -1), std::invalid_argument);
    INFO("the arguments are checked before the k = 0 (or short context) early return");
    CHECK_THROWS_AS(speclab::ngram_propose(ctx, 0, 0), std::invalid_argument);
    CHECK_THROWS_AS(speclab::ngram_propose(V{}, 0, 3), std::invalid_argument);
    CHECK_THROWS_AS(speclab::ngram_propose(V{7}, 1, -1), std::invalid_argument);
    CHECK_THROWS_AS(speclab::ngram_propose(V{}, 1, -1), std::invalid_argument);
  }
}
