// The figures book/lab04_ngram_pool.md quotes from the lab 04 reference: the conversation
// experiment of "Conversations: when a public pool pays", run on the tests' own workload
// (tests/lab04/conversation.h). Checked by tests/book/check_quoted.py (ctest label `book`).
#include <cmath>
#include <cstdint>
#include <string>

#include "conversation.h"
#include "quote.h"

using namespace speclab;
using speclab::book::fmt;
using speclab::book::quote;

namespace {

constexpr const char* kChapter = "book/lab04_ngram_pool.md";

// "the same AL on markov text" or "N% apart on markov text".
std::string apart(double a, double b, const char* text) {
  const double pct = 100.0 * std::abs(a - b) / b;
  return pct < 0.05 ? fmt("the same AL on %s text", text)
                    : fmt("%.0f%% apart on %s text", pct, text);
}

}  // namespace

int main() {
  // Turn 2's prompt holds the whole history (10 seeds, noise 0.2): turn 2 against turn 1, and
  // the private pool against the public one.
  double ratio_markov = 0;
  std::string same[2];
  int i = 0;
  for (ToyRegime regime : {ToyRegime::markov, ToyRegime::periodic}) {
    double t1 = 0, pub = 0, priv = 0;
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
      const auto p = lab04_testing::two_turn_conversation(regime, 0.2, seed, true, 120);
      const auto q = lab04_testing::two_turn_conversation(regime, 0.2, seed, false, 120);
      t1 += p.al_turn1;
      pub += p.al_turn2;
      priv += q.al_turn2;
    }
    if (regime == ToyRegime::markov) ratio_markov = pub / t1;
    same[i++] = apart(pub, priv, to_string(regime).c_str());
  }
  quote(kChapter, "turn 2 over turn 1 with the whole history, markov text",
        fmt("about %.2f times on markov text", ratio_markov));
  quote(kChapter, "private against public pool with the whole history",
        "(" + same[0] + ", " + same[1] + ": only the age order of some values differs)");

  // Turn 2's prompt keeps only the last 8 tokens of turn 1's output (periodic text, no noise).
  double pub = 0, priv = 0;
  bool every_seed = true;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    const auto p = lab04_testing::two_turn_conversation(ToyRegime::periodic, 0.0, seed, true, 8);
    const auto q = lab04_testing::two_turn_conversation(ToyRegime::periodic, 0.0, seed, false, 8);
    every_seed = every_seed && p.al_turn2 > q.al_turn2;
    pub += p.al_turn2;
    priv += q.al_turn2;
  }
  quote(kChapter, "turn 2 when the template drops turn 1's reasoning, public against private",
        fmt("turn 2's AL is higher with the public pool %s (about %.1f against %.1f on average)",
            every_seed ? "on every seed" : "on some seeds only", pub / 10, priv / 10));
  return 0;
}
