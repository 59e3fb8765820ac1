#include "bench_batch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_report.h"
#include "bench_run.h"
#include "core_probe.h"
#include "mini_engine/core/plural.h"
#include "mini_engine/spec/batch_loop.h"
#include "output_file.h"
#include "progress.h"

namespace speclab::cli {
namespace {

// One batched case: a drafter configuration at one batch size.
struct BatchCaseResult {
  std::string workload, drafter, drafter_name;
  int k = 0, n = 0, batch = 0;
  int sa_draft_ratio = -1;                           // -1: the drafter does not read it
  std::vector<double> base_seconds, spec_seconds;    // per repeat: the whole batch
  std::vector<double> base_decode, spec_decode;      // per repeat, prefill excluded
  std::vector<std::int64_t> base_steps, spec_steps;  // per repeat: batched decode steps
  std::vector<double> draft_seconds;  // per repeat: every drafter's propose, begin and observe
  std::int64_t runs = 0, emitted = 0, drafted = 0, accepted = 0;  // speculative, per request
  std::int64_t base_emitted = 0;
  int mismatches = 0;
  std::string first_mismatch;  // "request I (ID): output token ...": where the first one was
  RoundTripRange round_trip;   // the round trips on either side of its runs (core_probe.h)

  double al() const {
    return runs ? static_cast<double>(emitted) / static_cast<double>(runs) : 0.0;
  }
  // accepted / drafted, as SpecStats::acceptance_rate. The files write it only when drafted > 0
  // (empty in the CSV, null in the JSON, as the main mode's: 0 would read as every draft
  // rejected).
  double acceptance_rate() const {
    return drafted ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0.0;
  }
  // Tokens per second over the whole batch: the median of the per-repeat rates, as the main
  // mode's.
  double base_tokens_per_second() const { return median_rate(base_emitted, base_seconds); }
  double spec_tokens_per_second() const { return median_rate(emitted, spec_seconds); }
  double speedup() const { return median_ratio(base_seconds, spec_seconds); }
  double decode_speedup() const { return median_ratio(base_decode, spec_decode); }
  double step_cost() const { return run_cost(base_decode, base_steps, spec_decode, spec_steps); }
  // The drafters' time per emitted token, over all repeats (microseconds).
  double draft_us_per_token() const {
    const double total = std::accumulate(draft_seconds.begin(), draft_seconds.end(), 0.0);
    return emitted ? 1e6 * total / static_cast<double>(emitted) : 0.0;
  }
};

struct BatchRun {
  std::vector<BatchCaseResult> results;
  RoundTripRange round_trips;  // every probe of the run
  int total_requests = 0;
  int mismatches = 0;
};

BatchRun run_cases(const BatchBenchSettings& s, const std::vector<BenchCase>& cases,
                   const std::vector<Workload>& workloads, const Model& model,
                   const DecodeConfig& base_dc, const VerifyRule& verify) {
  std::unique_ptr<BatchTarget> target = load_batch_model(s.target);
  BatchRun out;
  out.total_requests = *std::max_element(s.batches.begin(), s.batches.end());
  const bool cpu_clock = s.clock == "cpu";
  std::vector<BatchCaseResult>& results = out.results;
  const long total =
      static_cast<long>(workloads.size() * s.batches.size() * (1 + cases.size())) * s.repeats;
  ProgressBar progress(total, s.progress && isatty(fileno(stderr)) != 0);
  // Where the host has the CPUs: probed before each repeat of a batch size and after the last.
  RoundTripProbes probes;
  for (const Workload& w : workloads) {
    for (int b : s.batches) {
      // The same requests at every batch size, so AL and work are equal across sizes.
      std::vector<std::vector<Token>> prompts;
      for (int i = 0; i < out.total_requests; ++i) {
        const Conversation& c = w.items[static_cast<size_t>(i) % w.items.size()];
        std::vector<Token> p = model.codec->system_prompt(c.system);
        const std::vector<Token> user = model.codec->user_turn(c.turns[0]);
        p.insert(p.end(), user.begin(), user.end());
        prompts.push_back(std::move(p));
      }
      const size_t first = results.size();
      for (const BenchCase& cs : cases) {
        BatchCaseResult r;
        r.workload = w.name;
        r.drafter = cs.drafter.drafter;
        r.drafter_name = make_drafter(cs.drafter, cs.k)->name();
        r.k = cs.k;
        r.n = cs.n;
        r.sa_draft_ratio = cs.sa_draft_ratio;
        r.batch = b;
        results.push_back(r);
      }
      // Every request, in consecutive batches of b; the times are summed over the batches.
      const auto run = [&](const std::vector<std::unique_ptr<Drafter>>& drafters, int k,
                           double& seconds, double& decode, double& draft, std::int64_t& steps) {
        std::vector<GenerationResult> generated;
        seconds = decode = draft = 0.0;
        steps = 0;
        for (size_t start = 0; start < prompts.size(); start += static_cast<size_t>(b)) {
          const size_t end = std::min(prompts.size(), start + static_cast<size_t>(b));
          std::vector<BatchRequest> requests(end - start);
          for (size_t i = start; i < end; ++i) {
            BatchRequest& q = requests[i - start];
            q.prompt = prompts[i];
            q.drafter = drafters.empty() ? nullptr : drafters[i].get();
            q.config = base_dc;
            q.config.k = drafters.empty() ? 0 : k;
            q.config.stop_tokens = model.codec->stop_tokens();
          }
          const ProcessCpuClock cpu;
          BatchDecodeConfig config;
          if (cpu_clock) config.clock = &cpu;
          BatchGenerationResult g = run_speculative_batch(*target, requests, verify, config);
          seconds += g.stats.total_seconds;
          decode += g.stats.total_seconds - g.stats.prefill_seconds;
          draft += g.stats.draft_seconds;
          steps += g.stats.steps;
          for (GenerationResult& r : g.requests) generated.push_back(std::move(r));
        }
        return generated;
      };
      for (int rep = 0; rep < s.repeats; ++rep) {
        double base_s = 0.0, base_d = 0.0, no_draft = 0.0;
        std::int64_t base_steps = 0;
        const std::vector<GenerationResult> base = run({}, 0, base_s, base_d, no_draft, base_steps);
        progress.advance(1, w.name + " batch " + std::to_string(b) + " plain");
        for (size_t ci = 0; ci < cases.size(); ++ci) {
          const BenchCase& cs = cases[ci];
          BatchCaseResult& r = results[first + ci];
          std::vector<std::unique_ptr<Drafter>> drafters;
          for (int i = 0; i < out.total_requests; ++i) {
            DrafterOptions options = cs.drafter;
            options.stop_tokens = model.codec->stop_tokens();
            drafters.push_back(make_drafter(options, cs.k));
          }
          double spec_s = 0.0, spec_d = 0.0, spec_draft = 0.0;
          std::int64_t spec_steps = 0;
          const std::vector<GenerationResult> spec =
              run(drafters, cs.k, spec_s, spec_d, spec_draft, spec_steps);
          r.base_seconds.push_back(base_s);
          r.spec_seconds.push_back(spec_s);
          r.base_decode.push_back(base_d);
          r.spec_decode.push_back(spec_d);
          r.base_steps.push_back(base_steps);
          r.spec_steps.push_back(spec_steps);
          r.draft_seconds.push_back(spec_draft);
          for (const GenerationResult& g : base) r.base_emitted += g.stats.emitted;
          for (size_t i = 0; i < spec.size(); ++i) {
            const SpecStats& st = spec[i].stats;
            r.runs += st.target_runs;
            r.emitted += st.emitted;
            r.drafted += st.drafted;
            r.accepted += st.accepted;
            if (spec[i].tokens != base[i].tokens) {
              ++r.mismatches;
              ++out.mismatches;
              const std::string where = describe_difference(base[i].tokens, spec[i].tokens);
              if (r.first_mismatch.empty()) {
                r.first_mismatch = "request " + std::to_string(i) + " (" +
                                   w.items[i % w.items.size()].id + "): " + where;
              }
              progress.clear();
              std::fprintf(stderr,
                           "bench: MISMATCH: %s batch %d request %zu with %s (k=%d): speculative "
                           "output differs from plain decoding at %s\n",
                           w.name.c_str(), b, i, r.drafter_name.c_str(), cs.k, where.c_str());
            }
          }
          progress.advance(1, w.name + " batch " + std::to_string(b) + " " + cs.drafter.drafter);
        }
        const RoundTripRange around = probes.next();
        for (size_t ci = 0; ci < cases.size(); ++ci) results[first + ci].round_trip.add(around);
      }
    }
  }
  progress.clear();
  out.round_trips = probes.all();
  return out;
}

void print_table(const BatchBenchSettings& s, const Model& model, const BatchRun& run) {
  std::printf(
      "speclab bench --batch: %s, LAB_IMPL=%s, %s, max-new-tokens %d, %s, %s clock\n"
      "first turns only: %s (the workload's conversations in turn) at every batch "
      "size B, decoded in consecutive batches of B\n%s\n",
      model.description.c_str(), lab_impl(), sampling_label(s.temperature, s.seed).c_str(),
      s.max_new_tokens, plural(s.repeats, "repeat").c_str(), s.clock.c_str(),
      plural(run.total_requests, "request").c_str(),
      round_trip_line(run.round_trips,
                      "one before each repeat of a batch size and one after the last")
          .c_str());
  std::printf("%-12s %-14s %3s %3s %5s %6s %7s %8s %8s %8s %7s %5s\n", "workload", "drafter", "k",
              "n", "batch", "AL", "draft", "plain/s", "spec/s", "speedup", "decode", "run");
  std::printf("%-12s %-14s %3s %3s %5s %6s %7s %8s %8s %8s %7s %5s\n", "", "", "", "", "", "",
              "us/tok", "", "", "", "", "cost");
  for (const BatchCaseResult& r : run.results) {
    std::printf("%-12s %-14s %3d %3s %5d %6.2f %7.1f %8.1f %8.1f %7.2fx %6.2fx %5.2f%s\n",
                r.workload.c_str(), case_label(r.drafter, r.sa_draft_ratio).c_str(), r.k,
                r.n > 0 ? std::to_string(r.n).c_str() : "-", r.batch, r.al(),
                r.draft_us_per_token(), r.base_tokens_per_second(), r.spec_tokens_per_second(),
                r.speedup(), r.decode_speedup(), r.step_cost(),
                r.mismatches ? "  OUTPUT DIFFERS FROM PLAIN DECODING" : "");
  }
  std::printf(
      "\nAL: tokens per target run, per request. draft us/tok: the drafters' time (propose, "
      "begin and observe) per emitted token. plain/s, spec/s: tokens per second over "
      "the whole batch (median run). speedup: plain time / speculative time, median over "
      "repeats. decode: the same without the batched prefill. Both on the %s clock.\n"
      "run cost: one batched speculative step in batched plain steps, median over repeats: the "
      "measured T(b, k) / T(b, 0) of lab 06 (the batch thins out as requests finish).\n",
      s.clock.c_str());
  std::fflush(stdout);
}

// The main mode's CSV (bench_report.cpp) names the same quantities alike and in the same order;
// batch, plain_seconds_median, spec_seconds_median and mismatches are this mode's own.
void write_csv(std::ostream& out, const BatchBenchSettings& s, const Model& model,
               const BatchRun& run) {
  out << "model,lab_impl,clock,temperature,max_new_tokens,repeats,workload,drafter,drafter_name,"
         "k,n,sa_draft_ratio,batch,target_runs,drafted,accepted,emitted,tokens_per_run,"
         "acceptance_rate,draft_us_per_token,plain_tokens_per_s,spec_tokens_per_s,speedup_median,"
         "decode_speedup,plain_seconds_median,spec_seconds_median,identical,mismatches,run_cost,"
         "core_round_trip_ns_min,core_round_trip_ns_max\n";
  char numbers[512];
  for (const BatchCaseResult& r : run.results) {
    // Six significant digits, as the main mode's CSV writes it (its stream's default), so the
    // two modes' rates read alike; empty where nothing was drafted.
    char acceptance[32] = "";
    if (r.drafted > 0) std::snprintf(acceptance, sizeof acceptance, "%.6g", r.acceptance_rate());
    std::snprintf(
        numbers, sizeof numbers,
        "%d,%s,%s,%d,%lld,%lld,%lld,%lld,%.4f,%s,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%s,%d,%.4f,%s",
        r.k,
        // Empty for a drafter without an n or a ratio (null in the JSON).
        r.n > 0 ? std::to_string(r.n).c_str() : "",
        r.sa_draft_ratio >= 0 ? std::to_string(r.sa_draft_ratio).c_str() : "", r.batch,
        static_cast<long long>(r.runs), static_cast<long long>(r.drafted),
        static_cast<long long>(r.accepted), static_cast<long long>(r.emitted), r.al(), acceptance,
        r.draft_us_per_token(), r.base_tokens_per_second(), r.spec_tokens_per_second(), r.speedup(),
        r.decode_speedup(), median(r.base_seconds), median(r.spec_seconds),
        r.mismatches == 0 ? "true" : "false", r.mismatches, r.step_cost(),
        round_trip_csv(r.round_trip).c_str());
    // Every text field through csv_field: a workload is named by its file, which may hold a
    // comma, a quote or a line break.
    out << csv_field(model.description) << ',' << lab_impl() << ',' << csv_field(s.clock) << ','
        << s.temperature << ',' << s.max_new_tokens << ',' << s.repeats << ','
        << csv_field(r.workload) << ',' << csv_field(r.drafter) << ',' << csv_field(r.drafter_name)
        << ',' << numbers << '\n';
  }
}

void write_json(std::ostream& out, const BatchBenchSettings& s, const Model& model,
                const BatchRun& run) {
  nlohmann::ordered_json j;
  j["meta"] = {{"mode", "batch"},        {"model", model.description},
               {"lab_impl", lab_impl()}, {"temperature", s.temperature},
               {"seed", s.seed},         {"max_new_tokens", s.max_new_tokens},
               {"repeats", s.repeats},   {"threads", s.target.threads},
               {"clock", s.clock},       {"requests", run.total_requests},
               {"batches", s.batches}};
  j["meta"]["core_round_trip_ns"] = round_trip_json(run.round_trips);
  j["meta"]["core_round_trip_probes"] = run.round_trips.measured;
  j["cases"] = nlohmann::ordered_json::array();
  for (const BatchCaseResult& r : run.results) {
    // The main mode's JSON (bench_report.cpp) orders the fields both have alike; batch,
    // plain_seconds_median, spec_seconds_median and mismatches follow what they follow in this
    // mode's CSV, and the per-repeat steps and draft times stand where the main JSON has its
    // per-repeat target runs.
    nlohmann::ordered_json row = {
        {"workload", r.workload},
        {"drafter", r.drafter},
        {"drafter_name", r.drafter_name},
        {"k", r.k},
        {"n", r.n > 0 ? nlohmann::ordered_json(r.n) : nlohmann::ordered_json(nullptr)},
        {"sa_draft_ratio", r.sa_draft_ratio >= 0 ? nlohmann::ordered_json(r.sa_draft_ratio)
                                                 : nlohmann::ordered_json(nullptr)},
        {"batch", r.batch},
        {"target_runs", r.runs},
        {"drafted", r.drafted},
        {"accepted", r.accepted},
        {"emitted", r.emitted},
        {"tokens_per_run", r.al()},
        {"acceptance_rate", r.drafted > 0 ? nlohmann::ordered_json(r.acceptance_rate())
                                          : nlohmann::ordered_json(nullptr)},
        {"draft_us_per_token", r.draft_us_per_token()},
        {"plain_tokens_per_s", r.base_tokens_per_second()},
        {"spec_tokens_per_s", r.spec_tokens_per_second()},
        {"speedup_median", r.speedup()},
        {"decode_speedup", r.decode_speedup()},
        {"plain_seconds_median", median(r.base_seconds)},
        {"spec_seconds_median", median(r.spec_seconds)},
        {"run_cost", r.step_cost()},
        {"core_round_trip_ns", round_trip_json(r.round_trip)},
        {"plain_seconds", r.base_seconds},
        {"spec_seconds", r.spec_seconds},
        {"plain_decode_seconds", r.base_decode},
        {"spec_decode_seconds", r.spec_decode},
        {"plain_steps", r.base_steps},
        {"spec_steps", r.spec_steps},
        {"draft_seconds", r.draft_seconds},
        {"identical", r.mismatches == 0},
        {"mismatches", r.mismatches},
    };
    if (r.mismatches) row["first_mismatch"] = r.first_mismatch;  // as in the main mode's JSON
    j["cases"].push_back(row);
  }
  // Not UTF-8 in a workload's or the model's name: U+FFFD, not an exception after the run.
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace

int run_bench_batch(const BatchBenchSettings& settings, const std::vector<BenchCase>& cases,
                    const std::vector<Workload>& workloads, const Model& model,
                    const DecodeConfig& base, const VerifyRule& verify) {
  const BatchRun run = run_cases(settings, cases, workloads, model, base, verify);
  print_table(settings, model, run);
  write_outputs(
      {{settings.csv, "--csv", [&](std::ostream& f) { write_csv(f, settings, model, run); }},
       {settings.json, "--json", [&](std::ostream& f) { write_json(f, settings, model, run); }}});
  if (!settings.csv.empty() || !settings.json.empty()) {
    std::fprintf(stderr, "bench: wrote %s%s%s\n", settings.csv.c_str(),
                 !settings.csv.empty() && !settings.json.empty() ? " and " : "",
                 settings.json.c_str());
  }
  if (run.mismatches > 0) {
    std::fprintf(stderr, "bench: FAILED: %s differed from plain decoding\n",
                 plural(run.mismatches, "speculative output").c_str());
    return 1;
  }
  return 0;
}

}  // namespace speclab::cli
