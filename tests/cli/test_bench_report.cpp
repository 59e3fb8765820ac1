// What `speclab bench` reports for a case (tools/speclab/bench_report.h): the speedups are
// medians of ratios formed within each repeat, so one slow spell of a shared machine moves one
// ratio and not the figure.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench_report.h"
#include "progress.h"

using speclab::CoreRoundTrip;
using speclab::probe_scope_text;
using speclab::RoundTripRange;
using speclab::cli::BenchMeta;
using speclab::cli::CaseResult;
using speclab::cli::median_rate;
using speclab::cli::median_ratio;
using speclab::cli::round_trip_line;
using speclab::cli::write_csv;
using speclab::cli::write_json;

namespace {

// What print_table writes for the one case `c`.
std::string table_of(const CaseResult& c, const BenchMeta& meta = {}) {
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  REQUIRE(out != nullptr);
  speclab::cli::print_table(out, meta, {c});
  std::fclose(out);
  std::string table(text, size);
  std::free(text);
  return table;
}

}  // namespace

TEST_CASE("the progress bar's ETA is the time left, not the whole run's") {
  using speclab::cli::ProgressBar;
  CHECK(ProgressBar::seconds_left(10.0, 0.25) == doctest::Approx(30.0));
  CHECK(ProgressBar::seconds_left(10.0, 1.0) == doctest::Approx(0.0));
  CHECK(ProgressBar::format_seconds(30.0) == "30s");
  CHECK(ProgressBar::format_seconds(125.0) == "2m05s");
  CHECK(ProgressBar::format_seconds(3725.0) == "1h02m");
}

TEST_CASE("median_ratio: the median of the per-repeat ratios, not a ratio of sums") {
  // Repeat 3's speculative run hit a slow spell: sums would give 30 / 60 = 0.5.
  CHECK(median_ratio({10, 10, 10}, {5, 5, 50}) == doctest::Approx(2.0));
  CHECK(median_ratio({4, 9}, {2, 3}) == doctest::Approx(2.5));        // two repeats: their mean
  CHECK(median_ratio({6, 6, 6}, {0, 3, 2}) == doctest::Approx(2.5));  // a zero time is skipped
  CHECK(median_ratio({8, 9}, {4}) == doctest::Approx(2.0));           // the shorter vector rules
  CHECK(median_ratio({}, {}) == 0.0);
}

TEST_CASE("median_rate: tokens per second as the median of the per-repeat rates") {
  // Batched mode divided the tokens by repeats x the median seconds: with 2 repeats of 1 s and
  // 3 s and 10 tokens each, 5 tokens/s, where the main mode's median of 10 and 3.33 is 6.67.
  CHECK(median_rate(20, {1.0, 3.0}) == doctest::Approx((10.0 + 10.0 / 3.0) / 2));
  CHECK(median_rate(30, {1.0, 3.0, 2.0}) == doctest::Approx(5.0));  // odd: the median repeat's
  CHECK(median_rate(10, {}) == 0.0);
  CHECK(median_rate(10, {0.0}) == 0.0);  // a repeat with no time measured has no rate
}

TEST_CASE("a case's end-to-end and decode-only speedups are per-repeat medians") {
  CaseResult c;
  c.base_seconds = {3.0, 3.0, 3.0};
  c.spec_seconds = {1.5, 1.5, 6.0};  // the third repeat was slowed down
  c.base_decode_seconds = {2.0, 2.0, 2.0};
  c.spec_decode_seconds = {0.5, 8.0, 0.5};  // the second one's decoding was
  CHECK(c.speedup_median() == doctest::Approx(2.0));
  CHECK(c.decode_speedup() == doctest::Approx(4.0));
}

TEST_CASE("a case's run cost: a speculative round's time over a plain step's, per-repeat median") {
  CaseResult c;
  c.base_decode_seconds = {1.0, 1.0, 1.0};  // 10 plain steps a repeat: 0.1 s each
  c.base_runs = {10, 10, 10};
  c.spec_decode_seconds = {0.6, 0.6, 2.0};  // 4 rounds a repeat: 0.15 s each, but the third
  c.spec_runs = {4, 4, 4};                  // repeat hit a slow spell (0.5 s each)
  CHECK(c.run_cost() == doctest::Approx(1.5));
  // The bench's identity: decoding speeds up by tokens per run over the cost of a run, here
  // 10 / 4 = 2.5 tokens per run at 1.5 steps a run.
  CHECK(c.decode_speedup() == doctest::Approx(2.5 / 1.5));

  c.spec_runs = {0, 4, 4};  // a repeat without a round has no cost to report: skipped
  c.spec_decode_seconds = {0.0, 0.6, 0.6};
  CHECK(c.run_cost() == doctest::Approx(1.5));
  CHECK(CaseResult{}.run_cost() == 0.0);
}

TEST_CASE(
    "decode only = AL / run cost holds per repeat, and the legend says when medians keep it") {
  // Two repeats of one AL (10 tokens in 4 runs): the median of two ratios is their mean, and the
  // mean of 2.5 / c over the costs c is not 2.5 over their mean. The legend said "decode only =
  // AL / run cost" of the medians without a condition, and a two-repeat table broke it.
  CaseResult c;
  c.base_decode_seconds = {1.0, 1.0};
  c.base_runs = {10, 10};
  c.spec_decode_seconds = {0.4, 0.8};  // run costs 1.0 and 2.0; decode only 2.5 and 1.25
  c.spec_runs = {4, 4};
  CHECK(c.run_cost() == doctest::Approx(1.5));
  CHECK(c.decode_speedup() == doctest::Approx(1.875));
  CHECK(2.5 / c.run_cost() != doctest::Approx(c.decode_speedup()));
  c.base_decode_seconds.push_back(1.0);  // a third repeat: the medians are one repeat's figures
  c.base_runs.push_back(10);
  c.spec_decode_seconds.push_back(0.6);
  c.spec_runs.push_back(4);
  CHECK(2.5 / c.run_cost() == doctest::Approx(c.decode_speedup()));
  const std::string table = table_of(c);
  CHECK(table.find("In each repeat decode only = AL / run cost") != std::string::npos);
  CHECK(table.find("the medians keep it only with an odd number of repeats") != std::string::npos);
}

TEST_CASE("the round-trip line names the CPUs probed when they may not be the model's") {
  RoundTripRange r;
  r.add(CoreRoundTrip{80.0, ""});
  r.add(CoreRoundTrip{400.0, ""});
  const std::string when = "one before each conversation and one after the last";
  CHECK(round_trip_line(r, when) ==
        "cross-core round trip: 80 to 400 ns over 2 probes, " + when +
            " (two CPUs on one die or on two: see book/engine_forward.md)\n");
  r.scope = probe_scope_text(0, 1, 16);
  CHECK(round_trip_line(r, when) ==
        "cross-core round trip: 80 to 400 ns over 2 probes, " + when + ", " + r.scope +
            " (two CPUs on one die or on two: see book/engine_forward.md)\n");
  CHECK(round_trip_line(RoundTripRange{}, when) == "cross-core round trip: n/a (not measured)\n");
  RoundTripRange one;  // the other probes measured nothing
  one.add(CoreRoundTrip{80.0, ""});
  CHECK(round_trip_line(one, when) ==
        "cross-core round trip: 80 ns over 1 probe, " + when +
            " (two CPUs on one die or on two: see book/engine_forward.md)\n");
}

TEST_CASE("the table's first line counts one new token and one repeat in the singular") {
  // "max 1 new tokens, median of 1 repeats".
  BenchMeta meta;
  meta.model = "toy target";
  meta.lab_impl = "solution";
  meta.max_new_tokens = 1;
  meta.repeats = 1;
  CHECK(
      table_of(CaseResult{}, meta)
          .find("toy target, LAB_IMPL=solution, greedy, max 1 new token, median of 1 repeat, wall "
                "clock\n") != std::string::npos);
  meta.max_new_tokens = 128;
  meta.repeats = 3;
  CHECK(
      table_of(CaseResult{}, meta).find("max 128 new tokens, median of 3 repeats, wall clock\n") !=
      std::string::npos);
}

TEST_CASE(
    "the CSV's per-repeat seconds give its speedup_median, and a case with no n leaves n empty") {
  // std::to_string wrote microseconds as 0.000003 and 0.000002: a ratio of 1.5, not 1.4.
  CaseResult c;
  c.workload = "toy-periodic";
  c.drafter = "prompt-lookup";
  c.base_seconds = {2.8e-6};
  c.spec_seconds = {2.0e-6};
  std::stringstream in;
  write_csv(in, BenchMeta{}, {c});
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const auto field = [](const std::string& line, const std::string& name, const std::string& of) {
    std::vector<std::string> names, values;
    for (auto* v : {&names, &values}) {
      std::stringstream s(v == &names ? of : line);
      for (std::string f; std::getline(s, f, ',');) v->push_back(f);
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return values.at(i);
    }
    return std::string("(no column ") + name + ")";
  };
  const double plain = std::stod(field(row, "plain_seconds", header));
  const double spec = std::stod(field(row, "spec_seconds", header));
  CHECK(plain / spec == doctest::Approx(c.speedup_median()).epsilon(1e-6));
  CHECK(std::stod(field(row, "speedup_median", header)) == doctest::Approx(1.4).epsilon(1e-5));
  // prompt-lookup here has no n set: the column is empty, as the JSON's null and the table's "-"
  // (it said 0, which reads as an n-gram length).
  CHECK(field(row, "n", header).empty());
}

TEST_CASE("the table's legend defines every timed column: drafter cost and tokens/s included") {
  // "draft us/tok" and "plain/spec tok/s" had no line: per drafted or per emitted token, and
  // with or without the prefill, could only be learned from bench_report.cpp.
  CaseResult c;
  c.workload = "toy-periodic";
  c.drafter = "prompt-lookup";
  c.base_seconds = {2.0};
  c.spec_seconds = {1.0};
  const std::string table = table_of(c);
  CHECK(table.find("draft us/tok: the drafter's time (propose, begin and observe) per emitted "
                   "token") != std::string::npos);
  CHECK(table.find("plain, spec tok/s: emitted tokens per second end to end (prefill included), "
                   "median over repeats") != std::string::npos);
}

TEST_CASE("a case that drafted nothing shows no acceptance rate in the table, not 0.0%") {
  // 0.0% reads as every draft rejected; on random text prompt lookup drafts nothing at all.
  CaseResult c;
  c.workload = "toy-random";
  c.drafter = "prompt-lookup";
  c.base_seconds = {2.0};
  c.spec_seconds = {2.0};
  c.spec.record_round(0, 0, 1);
  const std::string table = table_of(c);
  const size_t row = table.find("\ntoy-random");
  REQUIRE(row != std::string::npos);
  const std::string line = table.substr(row + 1, table.find('\n', row + 1) - row - 1);
  CHECK(line.find("0.0%") == std::string::npos);
  CHECK(line.find("     -") != std::string::npos);
  CHECK(table.find("acc%: accepted / drafted ('-' where nothing was drafted)") !=
        std::string::npos);
}

TEST_CASE("the table's legend defines its acceptance columns: AL t2+ and by draft position") {
  // Both columns had a header and no line: whether "AL t2+" counts the first turn, and whether a
  // position's rate is over all rounds (1 + their sum would be the AL) or over the rounds that
  // drafted it, could only be learned from the code.
  CaseResult c;
  c.workload = "two_turn";
  c.drafter = "prompt-lookup";
  c.spec.record_round(2, 1, 2);
  c.spec_later_turns.record_round(2, 1, 2);  // a multi-turn workload: the table has "AL t2+"
  const std::string table = table_of(c);
  CHECK(table.find("AL t2+") != std::string::npos);
  CHECK(table.find("AL t2+: the AL of turns 2 and later") != std::string::npos);
  CHECK(table.find("acceptance by draft position i: of the rounds that drafted position i, the "
                   "share that kept it") != std::string::npos);
}

TEST_CASE("the JSON is written when a workload's or the model's name is not UTF-8") {
  // A workload is named by its file, the model by its GGUF's general.name: bytes that are not
  // UTF-8 made nlohmann's dump throw after the whole bench, and every output was lost.
  BenchMeta meta;
  meta.model = "cpu-llama(S\xffollm2)";
  CaseResult c;
  c.workload = "w\xff";
  c.drafter = c.drafter_name = "sa";
  std::ostringstream out;
  INFO("model ", meta.model, ", workload ", c.workload);
  REQUIRE_NOTHROW(write_json(out, meta, {c}));
  CHECK(out.str().find("\"model\": \"cpu-llama(S\xef\xbf\xbdollm2)\"") != std::string::npos);
  CHECK(out.str().find("\"workload\": \"w\xef\xbf\xbd\"") != std::string::npos);
}
