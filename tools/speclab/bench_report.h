#pragma once
// What `speclab bench` measures for one case (workload x drafter x parameters), and the three
// ways it is reported: a terminal table, CSV and JSON. (Batched mode: bench_batch.h.)
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "core_probe.h"
#include "mini_engine/core/token.h"
#include "mini_engine/spec/stats.h"

namespace speclab::cli {

struct CaseResult {
  std::string workload;
  std::string drafter;       // the --drafter value
  std::string drafter_name;  // Drafter::name(), with its parameters
  int k = 0;
  int n = 0;                   // 0 when the drafter has no n
  int sa_draft_ratio = -1;     // -1 when the drafter does not read --sa-draft-ratio
  SpecStats spec;              // summed over items, turns and repeats
  SpecStats spec_later_turns;  // the same, turns 2.. only (multi-turn workloads)
  SpecStats base;              // plain decoding, summed likewise
  // Per conversation of the workload, in order: tokens emitted and target runs, summed over
  // turns and repeats. Their ratios are the spread behind the mean AL: with a few prompts a
  // workload, one near-tie that turns a reply moves the mean; compare drafters against this.
  std::vector<std::int64_t> conversation_emitted, conversation_runs;
  std::vector<double> base_seconds;  // per repeat: plain decoding's time over the workload
  std::vector<double> spec_seconds;  // per repeat: speculative decoding's (BenchMeta::clock)
  // Per repeat: the same two without the prompts' prefill (BenchMeta::clock).
  std::vector<double> base_decode_seconds, spec_decode_seconds;
  // Per repeat: the target runs of those decodes (plain: one a token; speculative: one a round).
  std::vector<std::int64_t> base_runs, spec_runs;
  int mismatches = 0;          // outputs that differed from plain decoding (must be 0)
  std::string first_mismatch;  // where the first one was
  // The cross-core round trips measured on either side of this case's runs (core_probe.h): where
  // the host had put the CPUs while they ran.
  RoundTripRange round_trip;

  double speedup_median() const;          // median over repeats of base_seconds / spec_seconds
  double base_tokens_per_second() const;  // median over repeats
  double spec_tokens_per_second() const;
  double draft_us_per_token() const;  // drafter time per emitted token, microseconds
  // Median over repeats of base_decode_seconds / spec_decode_seconds: the speedup of the
  // decoding itself, which the end-to-end figure dilutes with the prompt's prefill.
  double decode_speedup() const;
  // Median over repeats of (spec_decode_seconds / spec_runs) / (base_decode_seconds / base_runs):
  // what one speculative round (drafting, the verify pass over k + 1 tokens, the bookkeeping)
  // costs in plain decode steps on this machine, now. The drafter and the text set the AL, the
  // machine sets this, and per repeat decode_speedup = AL / run_cost exactly (both decodes emit
  // the same tokens). 0 when no repeat has a round.
  double run_cost() const;
  // The AL (tokens per run) of each conversation. The mean AL lies between their lowest and
  // highest.
  std::vector<double> conversation_al() const;
  // "lowest-highest" of conversation_al(), e.g. "1.20-5.90"; "-" when there is none.
  std::string al_range() const;
};

struct BenchMeta {
  std::string model;
  std::string lab_impl;
  int max_new_tokens = 0;
  int repeats = 0;
  double temperature = 0.0;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string clock = "wall";  // how runs were timed: wall or cpu
  // Every cross-core round trip bench measured: one before each conversation and one after the
  // last (core_probe.h).
  RoundTripRange round_trip;
};

// "cross-core round trip: 79 to 414 ns over 82 probes, <when> (...)\n": the table's line on the
// CPU placement, in either mode of bench; `when` says when the probes were taken. Just
// "cross-core round trip: n/a (<why>)\n" when no probe measured anything.
std::string round_trip_line(const RoundTripRange& all, const std::string& when);
// A range as JSON: {"min": ..., "max": ...} in nanoseconds, or null where nothing was measured.
nlohmann::ordered_json round_trip_json(const RoundTripRange& r);
// A range as two CSV fields, "min,max" in nanoseconds; two empty fields (",") where nothing was
// measured.
std::string round_trip_csv(const RoundTripRange& r);

// `s` as one CSV field (RFC 4180): as it is, or quoted with its quotes doubled when it holds a
// comma, a quote or a line break.
std::string csv_field(const std::string& s);

// The median of `values`; 0 for none.
double median(std::vector<double> values);
// The median over i of num[i] / den[i], skipping an i whose den[i] is not > 0 and stopping at the
// shorter vector; 0 for none. A ratio formed within each repeat and then its median: one slow
// spell of a shared machine moves one ratio, not the result.
double median_ratio(const std::vector<double>& num, const std::vector<double>& den);
// Tokens per second over repeats that took seconds[i] each and emitted `tokens` in all (the
// same number in each): the median of the per-repeat rates, a repeat with no time counting as
// 0; 0 for no repeats. Both bench modes report their tok/s so.
double median_rate(std::int64_t tokens, const std::vector<double>& seconds);

// The median over repeats i of (spec_decode[i] / spec_runs[i]) / (base_decode[i] /
// base_runs[i]): a speculative round's time in plain decode steps (CaseResult::run_cost; for
// `--batch`, a batched step's). Skips a repeat with no run or no time on either side, stops at
// the shortest vector; 0 for none.
double run_cost(const std::vector<double>& base_decode, const std::vector<std::int64_t>& base_runs,
                const std::vector<double>& spec_decode, const std::vector<std::int64_t>& spec_runs);

// Where speculative output `spec` departs from plain output `plain`: "output token I: plain X,
// speculative Y" (I counts from 0; "<end>" for an output that ended there). "" when they are
// equal. Both modes of bench name a mismatch with it.
std::string describe_difference(const std::vector<Token>& plain, const std::vector<Token>& spec);

// The drafter column of bench's tables: the --drafter value, and " r=R" for a ratio R > 0 (the
// CSV and JSON files have the ratio in a column of its own).
std::string case_label(const std::string& drafter, int sa_draft_ratio);

// Prints the table to `out`.
void print_table(std::FILE* out, const BenchMeta& meta, const std::vector<CaseResult>& cases);
// Writes the results as CSV / JSON to `out` (bench gives them to write_outputs(), which
// checks the writes and puts the files in place).
void write_csv(std::ostream& out, const BenchMeta& meta, const std::vector<CaseResult>& cases);
void write_json(std::ostream& out, const BenchMeta& meta, const std::vector<CaseResult>& cases);

// One conversation turn as plain decoding ran it (`bench --tokens`): the prompt its reply was
// decoded after (the whole conversation so far, chat templates included) and the reply.
struct TurnTokens {
  std::string workload;
  std::string id;  // the conversation's id in its workload
  int turn = 0;    // 1 for the first user turn
  std::vector<Token> prompt, reply;
};
// Writes `turns` to `out` as JSON Lines, one {"workload", "id", "turn", "prompt", "reply"}
// object per turn.
void write_tokens(std::ostream& out, const std::vector<TurnTokens>& turns);

}  // namespace speclab::cli
