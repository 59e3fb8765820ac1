// Lab 05 -- extend and the longest earlier match, checked against a brute-force oracle.
// Chapter: book/lab05_suffix_automaton.md
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "oracle.h"
#include "suffix_automaton.h"

using namespace speclab;
using namespace speclab::lab05_testing;

namespace {

// Feeds `s` token by token and compares longest_match() with the oracle after every token.
// Returns the number of prefixes checked; stops the case at the first mismatch, with the prefix
// printed (the streams after it would repeat the same mistake many times over).
int check_every_prefix(const V& s, const std::string& what) {
  SuffixAutomaton sa;
  V prefix;
  for (Token t : s) {
    sa.extend(t);
    prefix.push_back(t);
    const SuffixMatch want = brute_longest_match(prefix);
    const SuffixMatch got = sa.longest_match();
    if (!(got == want)) {
      const std::size_t from = prefix.size() > 24 ? prefix.size() - 24 : 0;
      std::string shown;
      for (std::size_t i = from; i < prefix.size(); ++i) shown += std::to_string(prefix[i]) + " ";
      INFO(what, ": after ", prefix.size(), " tokens (from index ", from, ": ", shown,
           "); an end is an index into the whole stream");
      INFO("oracle: length ", want.length, " ending at ", want.end, "; automaton: length ",
           got.length, " ending at ", got.end);
      REQUIRE(got == want);
      return 0;
    }
  }
  return static_cast<int>(s.size());
}

}  // namespace

TEST_SUITE("lab05 / Extending by one token") {
  TEST_CASE("the automaton accepts exactly the substrings of the stream") {
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      const V s = random_stream(seed, 40, 3);
      SuffixAutomaton sa;
      for (Token t : s) sa.extend(t);
      CHECK(sa.size() == s.size());
      std::string shown;
      for (Token t : s) shown += std::to_string(t) + " ";
      INFO("seed=", seed, ", the stream: ", shown);
      // Every substring is accepted...
      for (std::size_t i = 0; i < s.size(); ++i) {
        for (std::size_t j = i + 1; j <= s.size(); ++j) {
          const V sub(s.begin() + static_cast<std::ptrdiff_t>(i),
                      s.begin() + static_cast<std::ptrdiff_t>(j));
          INFO("the automaton rejects tokens [", i, ", ", j, ") of the stream, ", sub,
               "; if extend() looks right, look for a State& kept across copy_state or "
               "new_state ('Hold indices, not references')");
          REQUIRE(sa.contains(sub));
        }
      }
      // ...and every 4-token string over the alphabet that is not a substring is rejected.
      for (int code = 0; code < 81; ++code) {
        const V w = {code % 3, code / 3 % 3, code / 9 % 3, code / 27 % 3};
        const bool occurs = std::search(s.begin(), s.end(), w.begin(), w.end()) != s.end();
        // (A std::string: a ternary of two literals is a const char*, which INFO prints as an
        // address.) REQUIRE: the first wrong word says it; 70 more would bury it.
        INFO("the word ", w,
             std::string(occurs ? " occurs in the stream, but the automaton rejects it"
                                : " never occurs in the stream, but the automaton accepts it"));
        REQUIRE(sa.contains(w) == occurs);
      }
    }
  }

  TEST_CASE("at most 2n - 1 states and 3n - 4 transitions for n tokens") {
    for (const V& s : {random_stream(1, 2000, 2), random_stream(2, 2000, 30),
                       periodic_stream(3, 2000, 7), mixed_stream(4, 2000)}) {
      SuffixAutomaton sa;
      for (Token t : s) sa.extend(t);
      const auto n = static_cast<int>(s.size());
      {
        // The bounds mean nothing for an automaton that holds nothing: the state of each prefix
        // is a state of its own (len 0..n), one transition leads from each to the next.
        INFO(
            "extend must record the stream and build its automaton: n tokens in tokens(), at "
            "least n + 1 states and n transitions, and the whole stream accepted ('Extending by "
            "one token')");
        REQUIRE(sa.size() == s.size());
        CHECK(sa.num_states() >= n + 1);
        CHECK(sa.num_transitions() >= static_cast<std::size_t>(n));
        REQUIRE(sa.contains(s));
      }
      INFO("the automaton is linear in the stream: each token adds at most two states");
      CHECK(sa.num_states() <= 2 * n - 1);  // the root included (n >= 2)
      CHECK(sa.num_transitions() <= static_cast<std::size_t>(3 * n - 4));
    }
  }

  TEST_CASE("extend looks at O(1) transitions per token on average, even on runs of one token") {
    // On the runs stream (runs_stream, oracle.h) a walk that does not stop where the header says
    // it stops (the redirect walk, at the first state that does not lead to q) climbs the whole
    // suffix-link path on every token: about sqrt(n) transitions per token instead of a few. The
    // reference reads 5 to 6 per token on these streams (one walk to the root: 137 on the runs,
    // 1431 on the periodic stream; book/lab05_suffix_automaton.md quotes both, and
    // tests/book/figures_lab05.cpp recomputes them); the bound leaves room for other ways of
    // writing the two walks.
    for (const V& stream :
         {runs_stream(20000), random_stream(5, 20000, 2), periodic_stream(6, 20000, 7)}) {
      SuffixAutomaton sa;
      for (Token t : stream) sa.extend(t);
      const double per_token =
          static_cast<double>(sa.transition_reads()) / static_cast<double>(stream.size());
      INFO("transitions read (next() calls) per token over ", stream.size(), " tokens: ", per_token,
           ". Each walk step reads one; both walks stop at the first state that fails their test "
           "(see 'Why extend is amortized O(1)')");
      CHECK(per_token <= 24.0);
      // Reading no transitions is O(1) too: the automaton must also be there. (contains() reads
      // transitions through next() as well, so it comes after the count.)
      INFO("extend must record the stream and build its automaton: ", stream.size(),
           " tokens in tokens(), at least one more state, and the whole stream accepted");
      REQUIRE(sa.size() == stream.size());
      CHECK(sa.num_states() >= static_cast<int>(stream.size()) + 1);
      CHECK(sa.contains(stream));
    }
  }

  TEST_CASE("a stream that needs a clone: 1 2 2 splits the state of '2'") {
    // After 1 2, the state of "1 2" also stands for "2". The third token 2 makes "2" occur at a
    // second place, so "2" must be split off into a clone whose first occurrence ends at 1.
    SuffixAutomaton sa;
    for (Token t : {1, 2, 2}) sa.extend(t);
    INFO(
        "see the chapter, 'Extending by one token': '2' needs a clone (5 states, not 4), and the"
        " clone keeps the original's first end (1)");
    CHECK(sa.longest_match() == SuffixMatch{1, 1});
    CHECK(sa.num_states() == 5);
    CHECK(sa.contains(V{2, 2}));
    CHECK_FALSE(sa.contains(V{2, 1}));
  }

  TEST_CASE("extend rejects a negative token id before anything changes") {
    SuffixAutomaton sa;
    {
      INFO("the message names the id (the header's contract for extend)");
      CHECK_THROWS_WITH_AS(sa.extend(-1), doctest::Contains("-1"), std::invalid_argument);
    }
    sa.extend(0);
    CHECK(sa.size() == 1);

    INFO(
        "a negative id must throw before new_state: a state made first stays behind, an orphan"
        " (see the chapter, 'Extending by one token')");
    SuffixAutomaton rejected, clean;
    for (Token t : {1, 2, 1, 2}) {
      rejected.extend(t);
      clean.extend(t);
    }
    CHECK_THROWS_AS(rejected.extend(-7), std::invalid_argument);
    CHECK(rejected.num_states() == clean.num_states());
    CHECK(rejected.size() == clean.size());
    rejected.extend(3);
    clean.extend(3);
    CHECK(rejected.num_states() == clean.num_states());
    CHECK(rejected.longest_match() == clean.longest_match());
  }

  TEST_CASE("a stream at its token limit refuses the next token and changes nothing") {
    // The real limit, SuffixAutomaton::kMaxTokens (about a billion tokens), does not fit in a
    // test's memory; the constructor lowers it to 6 here. 1 2 3 1 2 3: the match "1 2 3" first
    // ends at 2, so a proposal runs to the end of the stream and would show a seventh token.
    CHECK(SuffixAutomaton().max_tokens() == SuffixAutomaton::kMaxTokens);
    CHECK_THROWS_AS(SuffixAutomaton(0), std::invalid_argument);
    CHECK_THROWS_AS(SuffixAutomaton(SuffixAutomaton::kMaxTokens + 1), std::invalid_argument);
    const V full = {1, 2, 3, 1, 2, 3};
    SuffixAutomaton sa(6);
    CHECK(sa.max_tokens() == 6);
    for (Token t : full) sa.extend(t);
    REQUIRE(sa.size() == full.size());
    const int states = sa.num_states();
    const SuffixMatch match = sa.longest_match();
    const V draft = sa.propose(8, 1);
    CHECK(draft == V{1, 2, 3});

    INFO(
        "at the limit new_state throws: record the token in tokens_ only after it succeeded, or"
        " the stream grows while the automaton does not (see the chapter, 'Extending by one"
        " token')");
    for (int attempt = 1; attempt <= 2; ++attempt) {
      CAPTURE(attempt);
      CHECK_THROWS_WITH_AS(sa.extend(1), doctest::Contains("limited to 6 tokens"),
                           std::length_error);
      CHECK(sa.size() == full.size());
      CHECK(V(sa.tokens().begin(), sa.tokens().end()) == full);
      CHECK(sa.num_states() == states);
      CHECK(sa.longest_match() == match);
      CHECK(sa.propose(8, 1) == draft);
      CHECK_FALSE(sa.contains(V{3, 1, 2, 3, 1}));
    }
  }
}

TEST_SUITE("lab05 / The longest earlier match") {
  TEST_CASE("an empty stream or a stream without repeats has no match") {
    SuffixAutomaton sa;
    {
      // A crash here (an index of -1) is this mistake: the message may not print before it.
      INFO(
          "an empty automaton: the root's suffix link is -1, not a state; answer {0, -1} "
          "before reading link(last) ('The longest earlier match')");
      CHECK(sa.longest_match() == SuffixMatch{});
    }
    for (Token t : {4, 5, 6, 7}) sa.extend(t);
    {
      INFO("extend must record the stream in tokens(): the stream 4 5 6 7 holds 4 tokens");
      REQUIRE(sa.size() == 4);
    }
    {
      INFO("the suffix's own occurrence never counts: 4 5 6 7 repeats nothing");
      CHECK(sa.longest_match() == SuffixMatch{});
    }
    // {0, -1} must come from the automaton, not from a default answer: the first repeat matches.
    INFO(
        "4 5 6 7 then 5: '5' occurred before, ending at index 1, so the match is {length 1, end 1}"
        "; then 6: '5 6' ending at 2 ('The longest earlier match')");
    sa.extend(5);
    CHECK(sa.longest_match() == SuffixMatch{1, 1});
    sa.extend(6);
    CHECK(sa.longest_match() == SuffixMatch{2, 2});
  }

  TEST_CASE("the match ends before the last token (the suffix's own end never counts)") {
    SuffixAutomaton sa;
    sa.extend(5);
    sa.extend(5);
    INFO(
        "'5 5': the longest suffix that occurred EARLIER is '5' ending at index 0; a length-2 "
        "match ending at index 1 is the stream matching itself: start from the whole stream's "
        "suffix link, not its own state");
    CHECK(sa.longest_match() == SuffixMatch{1, 0});
    sa.extend(5);
    CHECK(sa.longest_match() == SuffixMatch{2, 1});  // "5 5" first ended at index 1
  }

  TEST_CASE("matches the brute-force oracle on random streams") {
    int checked = 0;
    for (int alphabet : {2, 3, 8}) {
      for (std::uint64_t seed = 0; seed < 4; ++seed) {
        checked += check_every_prefix(random_stream(seed, 300, alphabet),
                                      "random alphabet " + std::to_string(alphabet));
      }
    }
    CHECK(checked == 3 * 4 * 300);
  }

  TEST_CASE("matches the brute-force oracle on periodic streams") {
    int checked = 0;
    for (int period = 1; period <= 7; ++period) {
      checked +=
          check_every_prefix(periodic_stream(static_cast<std::uint64_t>(period), 200, period),
                             "period " + std::to_string(period));
    }
    CHECK(checked == 7 * 200);
  }

  TEST_CASE("matches the brute-force oracle on streams with repetition at mixed lengths") {
    int checked = 0;
    for (std::uint64_t seed = 0; seed < 6; ++seed) {
      checked += check_every_prefix(mixed_stream(seed, 400), "mixed seed " + std::to_string(seed));
    }
    CHECK(checked == 6 * 400);
  }
}
