// An example of hidden tests (book/instructors.md, "Hidden tests"). Real hidden tests live
// outside the students' repository, in DIR/labNN/*.cpp beside DIR/labNN/points.txt, and reach
// the grader through `tools/grade --hidden DIR`. They are compiled like the lab's own cases:
// against the lab's header, the engine and tests/support, and linked with the submission.
// This folder is the grader's own test fixture.
#include <doctest/doctest.h>

#include <vector>

#include "prompt_lookup.h"
#include "test_util.h"

using speclab::Token;
using V = std::vector<Token>;

TEST_SUITE("lab01 hidden / Proposing: the scan") {
  TEST_CASE("hidden: a trigram in a long periodic context proposes the next period") {
    V ctx;
    for (int rep = 0; rep < 50; ++rep) {
      for (Token t : {3, 1, 4, 1, 5}) ctx.push_back(t);
    }
    CHECK(speclab::ngram_propose(ctx, 3, 5) == V{3, 1, 4, 1, 5});
    CHECK(speclab::ngram_propose(ctx, 3, 7) == V{3, 1, 4, 1, 5});
  }
}

TEST_SUITE("lab01 hidden / Verifying: greedy") {
  TEST_CASE("hidden: two accepted drafts then a mismatch emit both drafts and the correction") {
    const auto logits = speclab::testing::logits_with_argmax({7, 8, 2, 9});
    const auto r = speclab::verify_greedy(V{7, 8, 3}, logits);
    CHECK(r.accepted == 2);
    CHECK(r.emitted == V{7, 8, 2});
  }
}
