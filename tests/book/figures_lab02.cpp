// The figures book/lab02_ngram_storage.md quotes from the lab 02 reference: the measurement of
// "One level or many: a measurement" and the sentence of "Backing off: where to stop" that
// repeats it, run on the test's own workload (tests/lab02/markov_measurement.h). Checked by
// tests/book/check_quoted.py (ctest label `book`).
#include <cmath>
#include <string>

#include "markov_measurement.h"
#include "quote.h"

using namespace speclab;
using speclab::book::fmt;
using speclab::book::quote;
using speclab::lab02_testing::MarkovMeasurement;
using speclab::lab02_testing::measure_on_markov;

namespace {

constexpr const char* kChapter = "book/lab02_ngram_storage.md";

// One row of the chapter's table: drafted, target runs, rounds with a draft (share), tokens per
// run.
std::string row(const char* storage, const MarkovMeasurement& m) {
  return fmt("| %s | %lld | %lld | %lld (%.0f%%) | %.2f |", storage,
             static_cast<long long>(m.drafted), static_cast<long long>(m.target_runs),
             static_cast<long long>(m.rounds_with_draft), 100.0 * m.share_with_draft(),
             m.tokens_per_run());
}

}  // namespace

int main() {
  const MarkovMeasurement one3 = measure_on_markov({.n = 3, .one_level = true});
  const MarkovMeasurement floor2 = measure_on_markov({.n = 3, .min_context = 2});
  const MarkovMeasurement back3 = measure_on_markov({.n = 3, .min_context = 1});
  quote(kChapter, "the table's one-level row", row("one level (context 2)", one3));
  quote(kChapter, "the table's min_context 2 row", row("back-off, `min_context = 2`", floor2));
  quote(kChapter, "the table's min_context 1 row", row("back-off, `min_context = 1`", back3));

  const double fewer_runs = 100.0 * static_cast<double>(one3.target_runs - back3.target_runs) /
                            static_cast<double>(one3.target_runs);
  quote(kChapter, "back-off against one level, in 'Backing off: where to stop'",
        fmt("backing off to one token drafts in %.0f%% of rounds instead of %.0f%% and cuts "
            "target runs by %.0f%%",
            100.0 * back3.share_with_draft(), 100.0 * one3.share_with_draft(), fewer_runs));

  // n = 4: the gap in tokens per run between back-off and one level, against n = 3's.
  const MarkovMeasurement one4 = measure_on_markov({.n = 4, .one_level = true});
  const MarkovMeasurement back4 = measure_on_markov({.n = 4, .min_context = 1});
  const double gap3 = back3.tokens_per_run() - one3.tokens_per_run();
  const double gap4 = back4.tokens_per_run() - one4.tokens_per_run();
  quote(kChapter, "the n = 4 measurement",
        fmt("With $n = 4$ the gap %s: one level drafts %lld tokens (%.2f tokens per run), "
            "back-off to one token %lld (%.2f)",
            gap4 > gap3 ? "widens" : "does not widen", static_cast<long long>(one4.drafted),
            one4.tokens_per_run(), static_cast<long long>(back4.drafted), back4.tokens_per_run()));
  return 0;
}
