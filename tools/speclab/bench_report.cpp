#include "bench_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "factory.h"
#include "mini_engine/core/plural.h"

namespace speclab::cli {
namespace {

// accepted_at[i] / drafted_at[i] for every drafted position, as "0.91 0.80 ...".
std::string acceptance_by_position(const SpecStats& s, const char* sep, int digits) {
  std::string out;
  char buf[32];
  for (size_t i = 0; i < s.drafted_at.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.*f", digits, s.acceptance_at(static_cast<int>(i)));
    out += (i ? sep : "") + std::string(buf);
  }
  return out;
}

// accepted / drafted as "80.0%", or "-" when nothing was drafted (0.0% would read as every
// draft rejected).
std::string acceptance_text(const SpecStats& s) {
  if (s.drafted == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * s.acceptance_rate());
  return buf;
}

}  // namespace

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

nlohmann::ordered_json round_trip_json(const RoundTripRange& r) {
  if (r.measured == 0) return nullptr;
  return {{"min", r.min_ns}, {"max", r.max_ns}};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double median_ratio(const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> ratios;
  for (size_t i = 0; i < num.size() && i < den.size(); ++i) {
    if (den[i] > 0) ratios.push_back(num[i] / den[i]);
  }
  return median(ratios);
}

double CaseResult::speedup_median() const { return median_ratio(base_seconds, spec_seconds); }

double median_rate(std::int64_t tokens, const std::vector<double>& seconds) {
  if (seconds.empty()) return 0.0;
  const double per_repeat = static_cast<double>(tokens) / static_cast<double>(seconds.size());
  std::vector<double> rates;
  for (double s : seconds) rates.push_back(s > 0 ? per_repeat / s : 0.0);
  return median(rates);
}

double CaseResult::base_tokens_per_second() const {
  return median_rate(base.emitted, base_seconds);
}

double CaseResult::spec_tokens_per_second() const {
  return median_rate(spec.emitted, spec_seconds);
}

double CaseResult::draft_us_per_token() const {
  return spec.emitted > 0 ? 1e6 * spec.draft_seconds / static_cast<double>(spec.emitted) : 0.0;
}

double CaseResult::decode_speedup() const {
  return median_ratio(base_decode_seconds, spec_decode_seconds);
}

double run_cost(const std::vector<double>& base_decode, const std::vector<std::int64_t>& base_runs,
                const std::vector<double>& spec_decode,
                const std::vector<std::int64_t>& spec_runs) {
  std::vector<double> costs;
  const size_t n =
      std::min({spec_decode.size(), spec_runs.size(), base_decode.size(), base_runs.size()});
  for (size_t i = 0; i < n; ++i) {
    if (spec_runs[i] <= 0 || base_runs[i] <= 0 || base_decode[i] <= 0) continue;
    const double spec_round = spec_decode[i] / static_cast<double>(spec_runs[i]);
    const double plain_step = base_decode[i] / static_cast<double>(base_runs[i]);
    costs.push_back(spec_round / plain_step);
  }
  return median(costs);
}

double CaseResult::run_cost() const {
  return cli::run_cost(base_decode_seconds, base_runs, spec_decode_seconds, spec_runs);
}

std::vector<double> CaseResult::conversation_al() const {
  std::vector<double> al;
  for (size_t i = 0; i < conversation_runs.size() && i < conversation_emitted.size(); ++i) {
    if (conversation_runs[i] > 0) {
      al.push_back(static_cast<double>(conversation_emitted[i]) /
                   static_cast<double>(conversation_runs[i]));
    }
  }
  return al;
}

std::string CaseResult::al_range() const {
  const std::vector<double> al = conversation_al();
  if (al.empty()) return "-";
  const auto [lo, hi] = std::minmax_element(al.begin(), al.end());
  char text[32];
  std::snprintf(text, sizeof text, "%.2f-%.2f", *lo, *hi);
  return text;
}

std::string round_trip_line(const RoundTripRange& all, const std::string& when) {
  if (all.measured == 0) return "cross-core round trip: " + all.describe() + "\n";
  return "cross-core round trip: " + all.describe() + " over " + plural(all.measured, "probe") +
         ", " + when + (all.scope.empty() ? "" : ", " + all.scope) +
         " (two CPUs on one die or on two: see book/engine_forward.md)\n";
}

std::string round_trip_csv(const RoundTripRange& r) {
  if (r.measured == 0) return ",";
  return std::to_string(r.min_ns) + "," + std::to_string(r.max_ns);
}

std::string describe_difference(const std::vector<Token>& plain, const std::vector<Token>& spec) {
  if (plain == spec) return "";
  size_t i = 0;
  while (i < plain.size() && i < spec.size() && plain[i] == spec[i]) ++i;
  const auto token = [i](const std::vector<Token>& out) {
    return i < out.size() ? std::to_string(out[i]) : std::string("<end>");
  };
  return "output token " + std::to_string(i) + ": plain " + token(plain) + ", speculative " +
         token(spec);
}

std::string case_label(const std::string& drafter, int sa_draft_ratio) {
  return sa_draft_ratio > 0 ? drafter + " r=" + std::to_string(sa_draft_ratio) : drafter;
}

void print_table(std::FILE* out, const BenchMeta& meta, const std::vector<CaseResult>& cases) {
  bool multi_turn = false;
  for (const CaseResult& c : cases) multi_turn = multi_turn || c.spec_later_turns.target_runs > 0;
  std::fprintf(out, "\n%s, LAB_IMPL=%s, %s, max %s, median of %s, %s clock\n", meta.model.c_str(),
               meta.lab_impl.c_str(), sampling_label(meta.temperature, meta.seed).c_str(),
               plural(meta.max_new_tokens, "new token").c_str(),
               plural(meta.repeats, "repeat").c_str(), meta.clock.c_str());
  std::fputs(round_trip_line(meta.round_trip, "one before each conversation and one after the last")
                 .c_str(),
             out);
  std::fprintf(out, "%-16s %-14s %3s %3s %6s %11s %6s %6s %8s %9s %9s %8s %7s %5s  %s\n",
               "workload", "drafter", "k", "n", "AL", "AL range", multi_turn ? "AL t2+" : "",
               "acc%", "draft", "plain", "spec", "speedup", "decode", "run",
               "acceptance by draft position");
  const std::string clock = "(" + meta.clock + ")";
  std::fprintf(out, "%-16s %-14s %3s %3s %6s %11s %6s %6s %8s %9s %9s %8s %7s %5s\n", "", "", "",
               "", "tok/run", "by prompt", "", "", "us/tok", "tok/s", "tok/s", clock.c_str(),
               "only", "cost");
  std::string last_workload;
  for (const CaseResult& c : cases) {
    if (!last_workload.empty() && c.workload != last_workload) std::fputc('\n', out);
    last_workload = c.workload;
    char n_text[16] = "-";
    if (c.n > 0) std::snprintf(n_text, sizeof n_text, "%d", c.n);
    char t2[16] = "";
    if (multi_turn && c.spec_later_turns.target_runs > 0) {
      std::snprintf(t2, sizeof t2, "%.2f", c.spec_later_turns.tokens_per_run());
    } else if (multi_turn) {
      std::snprintf(t2, sizeof t2, "-");
    }
    std::fprintf(out,
                 "%-16s %-14s %3d %3s %6.2f %11s %6s %6s %8.1f %9.1f %9.1f %7.2fx %6.2fx %5.2f  "
                 "%s%s\n",
                 c.workload.c_str(), case_label(c.drafter, c.sa_draft_ratio).c_str(), c.k, n_text,
                 c.spec.tokens_per_run(), c.al_range().c_str(), t2, acceptance_text(c.spec).c_str(),
                 c.draft_us_per_token(), c.base_tokens_per_second(), c.spec_tokens_per_second(),
                 c.speedup_median(), c.decode_speedup(), c.run_cost(),
                 acceptance_by_position(c.spec, " ", 2).c_str(),
                 c.mismatches ? "  OUTPUT DIFFERS FROM PLAIN DECODING" : "");
  }
  std::fprintf(
      out,
      "\nAL: tokens per target run (mean acceptance length); AL range: the lowest and "
      "highest of the conversations' ALs (each conversation's AL over all its "
      "repeats).\n"
      "%s"
      "acc%%: accepted / drafted ('-' where nothing was drafted). "
      "draft us/tok: the drafter's time (propose, begin and observe) per emitted "
      "token.\n"
      "plain, spec tok/s: emitted tokens per second end to end (prefill included), "
      "median over repeats.\n"
      "speedup: plain time / speculative time over the whole workload (%s clock), median over "
      "repeats.\n"
      "decode only: the same without the prompt's prefill, median over repeats.\n"
      "run cost: one speculative round (draft, verify pass, bookkeeping) in plain decode "
      "steps, median over repeats. In each repeat decode only = AL / run cost, the "
      "drafter's side over the machine's; the medians keep it only with an odd number of "
      "repeats that share one AL (auto's may not).\n"
      "acceptance by draft position i: of the rounds that drafted position i, the share "
      "that kept it (and every draft before it); rounds with shorter drafts or none are "
      "not counted, so 1 + the sum exceeds the AL where short drafts are common.\n",
      multi_turn ? "AL t2+: the AL of turns 2 and later ('-': a workload of one turn).\n" : "",
      meta.clock.c_str());
}

void write_csv(std::ostream& out, const BenchMeta& meta, const std::vector<CaseResult>& cases) {
  out << "model,lab_impl,clock,temperature,max_new_tokens,repeats,workload,drafter,drafter_name,k,"
         "n,sa_draft_ratio,"
         "target_runs,drafted,accepted,emitted,tokens_per_run,acceptance_rate,"
         "tokens_per_run_by_conversation,acceptance_by_position,tokens_per_run_turn2plus,"
         "draft_us_per_token,"
         "plain_tokens_per_s,spec_tokens_per_s,speedup_median,decode_speedup,plain_seconds,"
         "spec_seconds,"
         "identical,target_runs_turn2plus,emitted_turn2plus,run_cost,"
         "core_round_trip_ns_min,core_round_trip_ns_max,plain_decode_seconds,spec_decode_seconds,"
         "plain_target_runs,spec_target_runs\n";

  for (const CaseResult& c : cases) {
    // Nine significant digits: std::to_string's six decimals wrote a toy run's microseconds as
    // 0.000003, so the per-repeat times no longer gave the speedup_median beside them.
    const auto joined = [](const std::vector<double>& values) {
      std::string out;
      char text[32];
      for (double v : values) {
        if (!out.empty()) out += ';';
        std::snprintf(text, sizeof text, "%.9g", v);
        out += text;
      }
      return out;
    };
    const std::string base_s = joined(c.base_seconds);
    const std::string spec_s = joined(c.spec_seconds);
    const auto joined_counts = [](const auto& values) {
      std::string out;
      for (const auto v : values) out += (out.empty() ? "" : ";") + std::to_string(v);
      return out;
    };
    out << csv_field(meta.model) << ',' << meta.lab_impl << ',' << meta.clock << ','
        << meta.temperature << ',' << meta.max_new_tokens << ',' << meta.repeats << ','
        << csv_field(c.workload) << ',' << c.drafter << ',' << csv_field(c.drafter_name) << ','
        << c.k << ',' << (c.n > 0 ? std::to_string(c.n) : std::string())  // empty: no n (JSON null)
        << ',' << (c.sa_draft_ratio >= 0 ? std::to_string(c.sa_draft_ratio) : std::string()) << ','
        << c.spec.target_runs << ',' << c.spec.drafted << ',' << c.spec.accepted << ','
        << c.spec.emitted << ',' << c.spec.tokens_per_run() << ',';
    // Empty where nothing was drafted, as the table's '-' (0 would read as every draft rejected).
    if (c.spec.drafted > 0) out << c.spec.acceptance_rate();
    out << ',' << joined(c.conversation_al()) << ',' << acceptance_by_position(c.spec, ";", 4)
        << ',';
    // Written as every other AL (six significant digits); empty for a workload of one turn.
    if (c.spec_later_turns.target_runs > 0) out << c.spec_later_turns.tokens_per_run();
    out << ',' << c.draft_us_per_token() << ',' << c.base_tokens_per_second() << ','
        << c.spec_tokens_per_second() << ',' << c.speedup_median() << ',' << c.decode_speedup()
        << ',' << base_s << ',' << spec_s << ',' << (c.mismatches == 0 ? "true" : "false") << ','
        << c.spec_later_turns.target_runs << ',' << c.spec_later_turns.emitted << ','
        << c.run_cost() << ',' << round_trip_csv(c.round_trip) << ','
        << joined(c.base_decode_seconds) << ',' << joined(c.spec_decode_seconds) << ','
        << joined_counts(c.base_runs) << ',' << joined_counts(c.spec_runs) << '\n';
  }
}

void write_json(std::ostream& out, const BenchMeta& meta, const std::vector<CaseResult>& cases) {
  nlohmann::ordered_json j;
  j["meta"] = {{"model", meta.model},
               {"lab_impl", meta.lab_impl},
               {"temperature", meta.temperature},
               {"seed", meta.seed},
               {"max_new_tokens", meta.max_new_tokens},
               {"repeats", meta.repeats},
               {"threads", meta.threads},
               {"clock", meta.clock}};
  j["meta"]["core_round_trip_ns"] = round_trip_json(meta.round_trip);
  j["meta"]["core_round_trip_probes"] = meta.round_trip.measured;
  j["cases"] = nlohmann::ordered_json::array();
  for (const CaseResult& c : cases) {
    std::vector<double> by_position;
    for (size_t i = 0; i < c.spec.drafted_at.size(); ++i) {
      by_position.push_back(c.spec.acceptance_at(static_cast<int>(i)));
    }
    nlohmann::ordered_json row = {
        {"workload", c.workload},
        {"drafter", c.drafter},
        {"drafter_name", c.drafter_name},
        {"k", c.k},
        {"n", c.n > 0 ? nlohmann::ordered_json(c.n) : nlohmann::ordered_json(nullptr)},
        {"sa_draft_ratio", c.sa_draft_ratio >= 0 ? nlohmann::ordered_json(c.sa_draft_ratio)
                                                 : nlohmann::ordered_json(nullptr)},
        {"target_runs", c.spec.target_runs},
        {"drafted", c.spec.drafted},
        {"accepted", c.spec.accepted},
        {"emitted", c.spec.emitted},
        {"tokens_per_run", c.spec.tokens_per_run()},
        {"acceptance_rate", c.spec.drafted > 0 ? nlohmann::ordered_json(c.spec.acceptance_rate())
                                               : nlohmann::ordered_json(nullptr)},
        {"tokens_per_run_by_conversation", c.conversation_al()},
        {"acceptance_by_position", by_position},
        {"accept_length_hist", c.spec.accept_length_hist},
        {"tokens_per_run_turn2plus",
         c.spec_later_turns.target_runs > 0
             ? nlohmann::ordered_json(c.spec_later_turns.tokens_per_run())
             : nlohmann::ordered_json(nullptr)},
        {"draft_us_per_token", c.draft_us_per_token()},
        {"time_split_seconds",
         {{"prefill", c.spec.prefill_seconds},
          {"draft", c.spec.draft_seconds},
          {"verify", c.spec.verify_seconds},
          {"other", c.spec.other_seconds()}}},
        {"plain_tokens_per_s", c.base_tokens_per_second()},
        {"spec_tokens_per_s", c.spec_tokens_per_second()},
        {"speedup_median", c.speedup_median()},
        {"decode_speedup", c.decode_speedup()},
        {"run_cost", c.run_cost()},
        {"core_round_trip_ns", round_trip_json(c.round_trip)},
        {"plain_seconds", c.base_seconds},
        {"spec_seconds", c.spec_seconds},
        {"plain_decode_seconds", c.base_decode_seconds},
        {"spec_decode_seconds", c.spec_decode_seconds},
        {"plain_target_runs", c.base_runs},
        {"spec_target_runs", c.spec_runs},
        {"identical", c.mismatches == 0},
        {"target_runs_turn2plus", c.spec_later_turns.target_runs},
        {"emitted_turn2plus", c.spec_later_turns.emitted},
    };
    if (c.mismatches) row["first_mismatch"] = c.first_mismatch;
    j["cases"].push_back(row);
  }
  // A workload is named by its file and the model by its GGUF: either may hold bytes that are
  // not UTF-8, which nlohmann's strict dump threw on after the whole run ("[json.exception.
  // type_error.316] ..."), losing every output. They are written as U+FFFD instead.
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

void write_tokens(std::ostream& out, const std::vector<TurnTokens>& turns) {
  for (const TurnTokens& t : turns) {
    const nlohmann::ordered_json line = {{"workload", t.workload},
                                         {"id", t.id},
                                         {"turn", t.turn},
                                         {"prompt", t.prompt},
                                         {"reply", t.reply}};
    out << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  }
}

}  // namespace speclab::cli
