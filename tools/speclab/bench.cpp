// `speclab bench`: the drafter arena. Runs workloads x drafters x parameters (k, n) x repeats.
//
// For every conversation of a workload and every case, plain decoding runs and then the case's
// speculative decoding, back to back, on the same target and with the same prompt: each case's
// speedup is timed against its own plain run, taken a moment before, so a machine whose speed
// drifts during the bench (a shared one does) does not favour the cases that run first. Every
// speculative output must equal the plain one token for token, or the bench fails (exit status 1)
// and says where. Each run
// starts from an empty KV cache, so neither side gets the other's prefill for free; a later turn
// reuses its own conversation's cache, as a chat server would. A case gets a fresh drafter per
// conversation, kept across that conversation's turns.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_batch.h"
#include "bench_report.h"
#include "bench_run.h"
#include "commands.h"
#include "factory.h"
#include "mini_engine/core/plural.h"
#include "mini_engine/targets/toy_target.h"
#include "output_file.h"
#include "progress.h"
#include "user_files.h"
#include "workloads.h"

namespace speclab::cli {
namespace {

struct BenchOptions {
  TargetOptions target;
  DrafterOptions drafter;  // the per-drafter options; --drafter / --k / --n /
                           // --sa-draft-ratio are lists here
  std::vector<std::string> drafters;
  std::vector<int> ks = {5};
  std::vector<int> ns = {3};
  std::vector<int> ratios = {0};  // --sa-draft-ratio
  std::vector<std::string> workloads;
  int prompts = 0;  // conversations per workload; 0 = all
  int repeats = 3;
  int max_new_tokens = 128;
  double temperature = 0.0;
  std::uint64_t seed = 0;
  std::string csv = "out/bench.csv";
  std::string json = "out/bench.json";
  std::string tokens;  // --tokens: each turn's prompt and plain reply, JSON Lines ('' = none)
  bool no_progress = false;
  std::string clock = "wall";   // wall | cpu (this process's CPU time)
  std::vector<int> batches;     // --batch: batch sizes to run (batched mode); empty: off
  bool corrupt_verify = false;  // hidden: breaks the verify rule, to test the identity check
};

constexpr const char* kToyPrefix = "toy-";

// "a", "a and b", "a, b and c": the files a run wrote, for its last line.
std::string join_and(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

// The drafters to compare: --drafter's list, or every one in this build for 'all' (the default).
std::vector<std::string> compared_drafters(const BenchOptions& o) {
  std::vector<std::string> names = o.drafters;
  if (names.empty() || (names.size() == 1 && names[0] == "all")) {
    names.clear();
    for (const std::string& d : available_drafters()) {
      if (d != "none") names.push_back(d);
    }
  }
  if (std::find(names.begin(), names.end(), "all") != names.end()) {
    throw UsageError(
        "--drafter: 'all' stands for every drafter on its own; it cannot be listed "
        "with others (" +
        join_and(names) + ")");
  }
  return names;
}

std::vector<BenchCase> make_cases(const BenchOptions& o) {
  std::vector<BenchCase> cases;
  for (const std::string& name : compared_drafters(o)) {
    const DrafterInfo& info = drafter_info(name);  // throws for an unknown name
    if (name == "none") {
      throw UsageError("--drafter none: plain decoding is the baseline of every case already");
    }
    if (!info.available) (void)make_drafter(DrafterOptions{.drafter = name}, 1);  // says why
    const DrafterInfo& reader = name == "auto" ? drafter_info(o.drafter.auto_inner) : info;
    for (int k : o.ks) {
      for (int n : reader.uses_n() ? o.ns : std::vector<int>{0}) {
        for (int ratio : reader.reads("--sa-draft-ratio") ? o.ratios : std::vector<int>{-1}) {
          BenchCase c;
          c.drafter = o.drafter;
          c.drafter.drafter = name;
          if (n > 0) c.drafter.n = n;
          if (ratio >= 0) c.drafter.sa_draft_ratio = ratio;
          c.k = k;
          c.n = n;
          c.sa_draft_ratio = ratio;
          cases.push_back(c);
        }
      }
    }
  }
  return cases;
}

// The toy target's workloads: each regime, with prompts of growing length.
Workload toy_workload(const std::string& name, const Model& model) {
  const auto* toy = dynamic_cast<const ToyTarget*>(model.target.get());
  Workload w;
  w.name = name;
  w.path = "(built in)";
  for (int i = 0; i < 8; ++i) {
    const int length = 8 + 4 * i;
    w.items.push_back(
        {"len" + std::to_string(length), "", {model.codec->decode(toy->make_prompt(length))}});
  }
  return w;
}

std::string describe_mismatch(const std::vector<std::vector<Token>>& base,
                              const std::vector<std::vector<Token>>& spec) {
  for (size_t t = 0; t < base.size() && t < spec.size(); ++t) {
    const std::string where = describe_difference(base[t], spec[t]);
    if (!where.empty()) return "turn " + std::to_string(t + 1) + ", " + where;
  }
  return "the number of turns differs";
}

// Throws UsageError when the comma-separated `flag` names one value twice: each of its cases
// would run twice, for nothing.
template <typename T>
void require_distinct(const std::vector<T>& values, const std::string& flag) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::find(values.begin() + static_cast<std::ptrdiff_t>(i) + 1, values.end(), values[i]) !=
        values.end()) {
      std::ostringstream value;
      value << values[i];
      throw UsageError(flag + " names " + value.str() +
                       " twice: each of its cases would run twice");
    }
  }
}

int run_bench(const BenchOptions& o) {
  require_distinct(o.drafters, "--drafter");
  require_distinct(o.ks, "--k");
  require_distinct(o.ns, "--n");
  require_distinct(o.ratios, "--sa-draft-ratio");
  require_distinct(o.workloads, "--workload");
  require_distinct(o.batches, "--batch");
  const std::vector<BenchCase> cases = make_cases(o);
  if (cases.empty()) throw UsageError("bench: no case to run (check --drafter, --k and --n)");
  for (int k : o.ks) {
    if (k < 1 || k > 64) {
      throw UsageError("--k must be between 1 and 64 (drafts per round), got " + std::to_string(k));
    }
  }
  // A long run must not end in "cannot write", nor one output overwrite the other: check the
  // output paths before any work (batched mode's too: it writes the same two files).
  const std::vector<std::pair<std::string, std::string>> outputs = {
      {o.csv, "--csv"}, {o.json, "--json"}, {o.tokens, "--tokens"}};
  for (const auto& [path, flag] : outputs) {
    if (path == "-") {  // trace's "standard output", but bench prints its table there
      throw UsageError(flag +
                       " '-': bench prints its table on standard output; give a file, or '' to "
                       "leave this one out");
    }
  }
  if (!o.tokens.empty() && !o.batches.empty()) {
    throw UsageError(
        "--tokens records the conversations of the main mode; batched mode "
        "(--batch) decodes first turns in batches and does not write it");
  }
  check_output_files(outputs);
  DecodeOptions decode;
  decode.temperature = o.temperature;
  decode.seed = o.seed;
  decode.max_new_tokens = o.max_new_tokens;
  const DecodeConfig base_dc = decode_config(decode);
  VerifyRule verify = make_verify_rule(base_dc.sampling);
  if (o.corrupt_verify) {
    // After a draft, the target's own token becomes the next id: the output must then differ.
    verify = [inner = verify](const VerifyInput& in) {
      VerifyResult r = inner(in);
      if (!in.drafts.empty()) r.emitted.back() = (r.emitted.back() + 1) % in.logits.vocab();
      return r;
    };
  }

  // The workloads and the model(s) they run on: one model for a real LLM, one toy target per
  // regime for the toy.
  const bool toy = o.target.model == "toy";
  const std::vector<std::string> toy_names = {"toy-periodic", "toy-markov", "toy-random"};
  std::vector<std::string> names = o.workloads;
  if (names.empty()) {
    if (toy) {
      names = toy_names;
    } else {
      names = shipped_workloads();
    }
  }
  std::map<std::string, Model> models;  // workload -> model (a real model is loaded once)
  std::vector<Workload> workloads;
  Model shared;
  for (const std::string& name : names) {
    if (toy) {
      if (std::find(toy_names.begin(), toy_names.end(), name) == toy_names.end()) {
        if (looks_like_workload_path(name)) open_input_file(name, "workload");  // a bad path first
        throw UsageError("workload '" + name +
                         "': the toy target reads token ids, so it runs the built-in workloads "
                         "toy-periodic, toy-markov and toy-random");
      }
      TargetOptions t = o.target;
      t.regime = name.substr(std::string(kToyPrefix).size());
      t.toy_seed = o.seed;
      t.toy_length_hint = 40 + o.max_new_tokens;  // the longest built-in prompt + the reply
      Model m = load_model(t);
      workloads.push_back(toy_workload(name, m));
      models.emplace(name, std::move(m));
    } else {
      if (name.starts_with(kToyPrefix)) {
        throw UsageError("workload '" + name + "' needs --model toy");
      }
      workloads.push_back(find_workload(name));
    }
  }
  // One file named twice (by name and by path) would run each of its cases twice.
  for (size_t i = 0; !toy && i < workloads.size(); ++i) {
    for (size_t j = i + 1; j < workloads.size(); ++j) {
      if (same_file(workloads[i].path, workloads[j].path)) {
        throw UsageError("--workload names one file twice, as '" + names[i] + "' and '" + names[j] +
                         "' (" + workloads[i].path + "): each of its cases would run twice");
      }
    }
  }
  // The results must not land on what the run reads: checked before the model is loaded.
  std::vector<std::pair<std::string, std::string>> inputs = {
      {model_file_given(o.target), "--model"}};
  if (!toy) {  // the toy's workloads are built in
    for (const Workload& w : workloads) inputs.emplace_back(w.path, "workload");
  }
  check_outputs_spare_inputs(outputs, inputs);
  if (!toy) shared = load_model(o.target);
  const auto model_for = [&](const std::string& workload) -> Model& {
    return toy ? models.at(workload) : shared;
  };
  for (Workload& w : workloads) {
    if (o.prompts > 0 && static_cast<int>(w.items.size()) > o.prompts) w.items.resize(o.prompts);
  }

  // Check every case against every first prompt before spending any time.
  long total_runs = 0;
  for (const Workload& w : workloads) {
    Model& m = model_for(w.name);
    long long longest = 0;  // the most tokens a conversation of w reaches, replies included
    std::string longest_id;
    for (const Conversation& c : w.items) {
      std::vector<Token> first = m.codec->system_prompt(c.system);
      const std::vector<Token> user = m.codec->user_turn(c.turns[0]);
      first.insert(first.end(), user.begin(), user.end());
      // The last turn's prompt holds every turn before it: all the user turns, and each earlier
      // reply at its longest with what closes it. Batched mode decodes first turns only.
      const size_t turns = o.batches.empty() ? c.turns.size() : 1;
      size_t templates = first.size();
      const size_t close =
          std::max(m.codec->close_reply(false).size(), m.codec->close_reply(true).size());
      for (size_t t = 1; t < turns; ++t) templates += m.codec->user_turn(c.turns[t]).size() + close;
      if (templates + static_cast<size_t>(o.max_new_tokens) * turns >
          static_cast<size_t>(m.target->max_length())) {
        // Fewer new tokens help only when the prompts alone fit; --context only below the
        // model's own limit; shorter prompts are the workload's to change.
        const bool prompts_fit = templates < static_cast<size_t>(m.target->max_length());
        const bool below_limit = m.target->max_length() < m.context_limit;
        std::string way_out = prompts_fit
                                  ? std::string(" tokens (lower --max-new-tokens")
                                  : " tokens (its prompts alone hold " + plural(templates, "token");
        if (below_limit) {
          way_out += std::string(prompts_fit ? ", or" : ":") +
                     " raise --context, up to the model's own limit of " +
                     std::to_string(m.context_limit);
        } else {
          way_out += std::string(prompts_fit ? "" : ": shorten them") + "; " +
                     std::to_string(m.target->max_length()) + " is the model's own limit";
        }
        way_out += ")";
        throw UsageError("workload " + w.name + ", '" + c.id + "': its " + plural(turns, "turn") +
                         " (" + plural(templates, "token") +
                         " of prompts and templates) + --max-new-tokens " +
                         std::to_string(o.max_new_tokens) +
                         " for each reply do not fit the context: " + m.target->name() +
                         " holds at most " + std::to_string(m.target->max_length()) + way_out);
      }
      const long long reached = static_cast<long long>(templates + o.max_new_tokens * turns);
      if (reached > longest) {
        longest = reached;
        longest_id = c.id;
      }
    }
    for (const BenchCase& cs : cases) {
      check_n_within(cs.drafter, longest,
                     "the longest conversation of workload " + w.name + ", '" + longest_id +
                         "', with its replies at --max-new-tokens " +
                         std::to_string(o.max_new_tokens));
    }
    total_runs +=
        static_cast<long>(w.items.size()) * static_cast<long>(2 * cases.size()) * o.repeats;
  }

  if (!o.batches.empty()) {
    if (toy) throw UsageError("--batch needs a real model (--model smollm2 or a GGUF path)");
    BatchBenchSettings settings;
    settings.target = o.target;
    settings.batches = o.batches;
    settings.repeats = o.repeats;
    settings.max_new_tokens = o.max_new_tokens;
    settings.clock = o.clock;
    settings.temperature = o.temperature;
    settings.seed = o.seed;
    settings.progress = !o.no_progress;
    settings.csv = o.csv;
    settings.json = o.json;
    return run_bench_batch(settings, cases, workloads, shared, base_dc, verify);
  }

  std::vector<CaseResult> results;
  for (const Workload& w : workloads) {
    for (const BenchCase& cs : cases) {
      CaseResult r;
      r.workload = w.name;
      r.drafter = cs.drafter.drafter;
      r.drafter_name = make_drafter(cs.drafter, cs.k)->name();
      r.k = cs.k;
      r.n = cs.n;
      r.sa_draft_ratio = cs.sa_draft_ratio;
      r.base_seconds.assign(static_cast<size_t>(o.repeats), 0.0);
      r.spec_seconds.assign(static_cast<size_t>(o.repeats), 0.0);
      r.base_decode_seconds.assign(static_cast<size_t>(o.repeats), 0.0);
      r.spec_decode_seconds.assign(static_cast<size_t>(o.repeats), 0.0);
      r.base_runs.assign(static_cast<size_t>(o.repeats), 0);
      r.spec_runs.assign(static_cast<size_t>(o.repeats), 0);
      r.conversation_emitted.assign(w.items.size(), 0);
      r.conversation_runs.assign(w.items.size(), 0);
      results.push_back(r);
    }
  }

  size_t conversations = 0;
  for (const auto& w : workloads) conversations += w.items.size();
  // "cases" are drafter settings (drafter x k x n ...), not prompts: say both.
  std::fprintf(
      stderr, "speclab bench: %s, LAB_IMPL=%s: %s (%s) x %s x %s\n",
      toy ? "toy target" : shared.description.c_str(), lab_impl(),
      plural(workloads.size(), "workload").c_str(), plural(conversations, "conversation").c_str(),
      plural(cases.size(), "drafter setting").c_str(), plural(o.repeats, "repeat").c_str());
  ProgressBar progress(total_runs, !o.no_progress && isatty(fileno(stderr)) != 0);
  int mismatches = 0;
  std::vector<TurnTokens> turn_tokens;  // --tokens
  const bool cpu_clock = o.clock == "cpu";
  // Where the host has the CPUs: probed before each conversation and after the last, and each
  // case of a conversation gets the probes on either side of its runs. Not on a GPU: there the
  // placement of the CPUs says little about the run.
  RoundTripProbes probes(
      o.target.device == "cuda" ? "not probed: --device cuda runs the model on the GPU" : "");
  for (int rep = 0; rep < o.repeats; ++rep) {
    size_t result_base = 0;
    for (const Workload& w : workloads) {
      Model& model = model_for(w.name);
      for (size_t conv_index = 0; conv_index < w.items.size(); ++conv_index) {
        const Conversation& conv = w.items[conv_index];
        for (size_t ci = 0; ci < cases.size(); ++ci) {
          const BenchCase& cs = cases[ci];
          CaseResult& r = results[result_base + ci];
          SpecStats base_all, base_later;
          double base_seconds = 0.0;
          // --tokens: each conversation once, from the first repeat's first plain run.
          const bool record = !o.tokens.empty() && rep == 0 && ci == 0;
          std::vector<std::vector<Token>> prompts;
          const auto base_out =
              run_conversation(model, conv, nullptr, VerifyRule{}, base_dc, base_all, base_later,
                               base_seconds, cpu_clock, record ? &prompts : nullptr);
          for (size_t t = 0; record && t < base_out.size(); ++t) {
            turn_tokens.push_back(
                {w.name, conv.id, static_cast<int>(t) + 1, prompts[t], base_out[t]});
          }
          progress.advance(1, w.name + "/" + conv.id + " plain");
          DecodeConfig dc = base_dc;
          dc.k = cs.k;
          DrafterOptions options = cs.drafter;
          options.stop_tokens = model.codec->stop_tokens();
          std::unique_ptr<Drafter> drafter = make_drafter(options, cs.k);
          double spec_seconds = 0.0;
          const std::int64_t emitted_before = r.spec.emitted, runs_before = r.spec.target_runs;
          const double spec_decode_before = r.spec.total_seconds - r.spec.prefill_seconds;
          const auto spec_out = run_conversation(model, conv, drafter.get(), verify, dc, r.spec,
                                                 r.spec_later_turns, spec_seconds, cpu_clock);
          r.conversation_emitted[conv_index] += r.spec.emitted - emitted_before;
          r.conversation_runs[conv_index] += r.spec.target_runs - runs_before;
          r.base_seconds[rep] += base_seconds;
          r.spec_seconds[rep] += spec_seconds;
          r.base_decode_seconds[rep] += base_all.total_seconds - base_all.prefill_seconds;
          r.spec_decode_seconds[rep] +=
              r.spec.total_seconds - r.spec.prefill_seconds - spec_decode_before;
          r.base_runs[rep] += base_all.target_runs;
          r.spec_runs[rep] += r.spec.target_runs - runs_before;
          // Plain decoding's counters, for its tokens/s.
          r.base.emitted += base_all.emitted;
          r.base.target_runs += base_all.target_runs;
          r.base.prefill_seconds += base_all.prefill_seconds;
          r.base.total_seconds += base_all.total_seconds;
          if (spec_out != base_out) {
            ++r.mismatches;
            ++mismatches;
            const std::string where = describe_mismatch(base_out, spec_out);
            if (r.first_mismatch.empty()) r.first_mismatch = conv.id + ": " + where;
            progress.clear();
            std::fprintf(stderr,
                         "bench: MISMATCH: %s/%s with %s (k=%d): speculative output differs from "
                         "plain decoding at %s\n",
                         w.name.c_str(), conv.id.c_str(), r.drafter_name.c_str(), cs.k,
                         where.c_str());
          }
          progress.advance(1, w.name + "/" + conv.id + " " + cs.drafter.drafter);
        }
        const RoundTripRange around = probes.next();
        for (size_t ci = 0; ci < cases.size(); ++ci)
          results[result_base + ci].round_trip.add(around);
      }
      result_base += cases.size();
    }
  }
  progress.clear();

  BenchMeta meta;
  meta.model = toy ? "toy target" : shared.description;
  meta.lab_impl = lab_impl();
  meta.max_new_tokens = o.max_new_tokens;
  meta.repeats = o.repeats;
  meta.temperature = o.temperature;
  meta.seed = o.seed;
  meta.threads = o.target.threads;
  meta.clock = o.clock;
  meta.round_trip = probes.all();
  print_table(stdout, meta, results);
  std::fflush(stdout);
  write_outputs({{o.csv, "--csv", [&](std::ostream& f) { write_csv(f, meta, results); }},
                 {o.json, "--json", [&](std::ostream& f) { write_json(f, meta, results); }},
                 {o.tokens, "--tokens", [&](std::ostream& f) { write_tokens(f, turn_tokens); }}});
  std::vector<std::string> written;
  for (const auto& [path, flag] : outputs) {
    if (!path.empty()) written.push_back(path);
  }
  if (!written.empty()) std::fprintf(stderr, "bench: wrote %s\n", join_and(written).c_str());
  if (mismatches > 0) {
    std::fprintf(stderr,
                 "bench: FAILED: %s differed from plain decoding; speculative decoding must be "
                 "lossless (see the MISMATCH lines above)\n",
                 plural(mismatches, "speculative output").c_str());
    return 1;
  }
  return 0;
}

}  // namespace

void add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "The drafter arena: workloads x drafters x parameters x repeats. Each case runs plain and "
      "speculative decoding back to back on the same target (so each speedup is timed side by "
      "side), fails if their outputs differ, and reports "
      "acceptance length, per-position acceptance, drafter cost, the median wall speedup and the "
      "run cost (a speculative round in plain decode steps; per repeat, decode-only speedup = AL / "
      "run cost), "
      "with the cross-core round trip probed between conversations (where the host put the CPUs: "
      "one die or two; not probed with --device cuda)");
  add_target_flags(*cmd, o->target);
  add_drafter_flags(*cmd, o->drafter, &o->drafters, &o->ns, &o->ratios);
  add_list_flag(*cmd, "--k", o->ks, "Drafts per round, comma-separated values to sweep",
                int_in(1, 64, "drafts per round"));
  add_list_flag(*cmd, "--workload", o->workloads,
                "Workloads, comma-separated: shipped names (data/workloads/NAME.jsonl), paths, "
                "or for --model toy: toy-periodic, toy-markov, toy-random. Default: all");
  cmd->add_option("--prompts", o->prompts, "Conversations per workload; 0 = all")
      ->check(int_in(0, 100000, "conversations per workload"))
      ->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "Repeats of every run; the speedup is their median")
      ->check(int_in(1, 1000, "repeats"))
      ->capture_default_str();
  cmd->add_option("--max-new-tokens", o->max_new_tokens, "The most tokens per reply")
      ->check(int_in(1, 1 << 20, "tokens per reply"))
      ->capture_default_str();
  cmd->add_option("--temperature", o->temperature, "Sampling temperature; 0 = greedy")
      ->check(real_in(0.0, 100.0, "sampling temperature"))
      ->capture_default_str();
  add_seed_flag(*cmd, o->seed, "Sampling seed; for the toy workloads also the seed of their text");
  cmd->add_option(
         "--csv", o->csv,
         "Write the results as CSV here ('' = do not); its folder is made when it is written. "
         "Checked before the run, as is that it is neither the --json file nor a file the run "
         "reads "
         "(a workload, the model)")
      ->capture_default_str();
  cmd->add_option(
         "--json", o->json,
         "Write the results as JSON here ('' = do not); its folder is made when it is written. "
         "Checked before the run, as is that it is neither the --csv file nor a file the run reads "
         "(a workload, the model)")
      ->capture_default_str();
  cmd->add_option(
         "--tokens", o->tokens,
         "Write every conversation turn's prompt and plain reply as token ids here, one JSON line "
         "per turn, from the first repeat (what tools/ceiling.py replays; '' = do not). Checked "
         "before the run, as --csv is. Not in batched mode")
      ->capture_default_str();
  cmd->add_flag("--no-progress", o->no_progress,
                "No progress bar (it is drawn only on a terminal)");
  cmd->add_option("--clock", o->clock,
                  "How runs are timed: wall (elapsed time, what a user waits for) or cpu (this "
                  "process's CPU time: steadier on a machine shared with other jobs; use it with "
                  "--threads 1, since idle worker threads may spin)")
      ->check(CLI::IsMember({"wall", "cpu"}))
      ->capture_default_str();
  add_list_flag(*cmd, "--batch", o->batches,
                "Batched mode: batch sizes to run, comma-separated. At every size B the same R "
                "requests (R = the largest B: the first turns of the workload's conversations, "
                "in turn) are decoded in consecutive batches of B, in lock-step with "
                "run_speculative_batch, plain against each case; --csv and --json get one row "
                "per case and batch size. Needs a real model",
                int_in(1, 256, "requests per batch"));
  cmd->add_flag("--corrupt-verify-for-testing", o->corrupt_verify,
                "Break the verify rule on purpose, to check that the bench catches it")
      ->group("");  // hidden
  cmd->callback([o, cmd]() {
    warn_ignored_flags(*cmd, {.toy = o->target.model == "toy",
                              .cuda = runs_on_gpu(o->target),
                              .drafters = compared_drafters(*o),
                              .auto_inner = o->drafter.auto_inner,
                              .seed_unused = o->target.model != "toy" && o->temperature == 0.0});
    const int rc = run_bench(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speclab::cli
