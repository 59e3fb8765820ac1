// `speclab demo`: the README's first command. Plain vs speculative decoding side by side, on
// SmolLM2 when it is cached or can be fetched, otherwise on the toy target, with one line that
// says why.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_report.h"
#include "commands.h"
#include "factory.h"
#include "mini_engine/core/clock.h"
#include "mini_engine/core/plural.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "workloads.h"

namespace speclab::cli {
namespace {

constexpr const char* kDemoPrompt = "js-let-to-const";  // in data/workloads/code_edit.jsonl

struct DemoOptions {
  std::string model = "auto";  // auto | smollm2 | toy
  int k = 5;
  int n = 0;               // 0: 2 on the toy target, 3 on SmolLM2
  int max_new_tokens = 0;  // 0: 256 on the toy target, 120 on SmolLM2
  int threads = 0;
  std::uint64_t seed = 0;
  bool no_color = false;
};

// The toy table's prompt: 16 tokens of the target's own.
constexpr int kToyPromptTokens = 16;

// Throws UsageError when prompt lookup's --n cannot match within a run of `prompt_tokens` plus
// `max_new_tokens` (as generate, trace and bench refuse it): the demo would show no speedup at
// all, for a reason it never says.
void check_demo_n(int n, std::size_t prompt_tokens, int max_new_tokens, const std::string& what) {
  DrafterOptions d;
  d.drafter = "prompt-lookup";
  d.n = n;
  check_n_within(d, static_cast<long long>(prompt_tokens) + max_new_tokens,
                 what + " " + std::to_string(prompt_tokens) + " + max-new-tokens " +
                     std::to_string(max_new_tokens));
}

// Returns false when speculative output differs from the baseline.
bool demo_regime(ToyRegime regime, const DemoOptions& o, int max_new_tokens) {
  TargetOptions t;
  t.regime = to_string(regime);
  t.toy_seed = o.seed;
  t.toy_length_hint = kToyPromptTokens + max_new_tokens;
  Model model = load_model(t);
  auto* toy = dynamic_cast<ToyTarget*>(model.target.get());
  const std::vector<Token> prompt = toy->make_prompt(kToyPromptTokens);
  DecodeConfig dc;
  dc.max_new_tokens = max_new_tokens;
  dc.k = o.k;
  const GenerationResult base = run_baseline(*model.target, prompt, dc);
  DrafterOptions d;
  d.drafter = "prompt-lookup";
  d.n = o.n > 0 ? o.n : 2;
  std::unique_ptr<Drafter> drafter = make_drafter(d, o.k);
  const GenerationResult spec =
      run_speculative(*model.target, *drafter, make_verify_rule(dc.sampling), prompt, dc);
  const bool same = spec.tokens == base.tokens;
  const double reduction = 1.0 - static_cast<double>(spec.stats.target_runs) /
                                     static_cast<double>(base.stats.target_runs);
  std::printf("%-9s %7lld %7lld %9.2f %10.1f%%  %s\n", to_string(regime).c_str(),
              static_cast<long long>(base.stats.target_runs),
              static_cast<long long>(spec.stats.target_runs), spec.stats.tokens_per_run(),
              100.0 * reduction, same ? "identical" : "DIFFERENT");
  return same;
}

bool toy_demo(const DemoOptions& o) {
  const int max_new = o.max_new_tokens > 0 ? o.max_new_tokens : 256;
  std::printf("SpecLab demo: greedy decoding of %s on the toy target, prompt lookup n=%d, k=%d\n\n",
              plural(max_new, "token").c_str(), o.n > 0 ? o.n : 2, o.k);
  std::printf("%-9s %7s %7s %9s %11s  %s\n", "regime", "plain", "spec", "tokens/", "target-run",
              "output vs");
  std::printf("%-9s %7s %7s %9s %11s  %s\n", "", "runs", "runs", "run", "reduction", "plain");
  bool ok = true;
  for (ToyRegime r : {ToyRegime::periodic, ToyRegime::markov, ToyRegime::random}) {
    ok = demo_regime(r, o, max_new) && ok;
  }
  std::printf(
      "\nTokens per run = emitted tokens / target runs. Periodic text is easy to guess;\n"
      "random text cannot be guessed at all, so speculation saves nothing there.\n");
  return ok;
}

// SmolLM2 on one code-editing prompt: plain decoding, then speculative decoding with the reply
// streamed and accepted drafts highlighted, then both timings.
bool model_demo(Model& model, const DemoOptions& o) {
  const int max_new = o.max_new_tokens > 0 ? o.max_new_tokens : 120;
  const int n = o.n > 0 ? o.n : 3;
  // A rewrite that SmolLM2-135M answers by copying: the case speculation is made for.
  const Workload w = find_workload("code_edit");
  const Conversation* chosen = &w.items.front();
  for (const Conversation& item : w.items) {
    if (item.id == kDemoPrompt) chosen = &item;
  }
  const Conversation& c = *chosen;
  std::vector<Token> prompt = model.codec->system_prompt(c.system);
  const std::vector<Token> user = model.codec->user_turn(c.turns.front());
  prompt.insert(prompt.end(), user.begin(), user.end());
  check_fits_context(model, prompt.size(), max_new, "the demo's prompt", /*shorten=*/"");
  check_demo_n(n, prompt.size(), max_new, "the demo's prompt");

  DecodeConfig dc;
  dc.max_new_tokens = max_new;
  dc.k = o.k;
  dc.stop_tokens = model.codec->stop_tokens();
  std::printf("SpecLab demo: %s, greedy, up to %s, prompt lookup n=%d, k=%d\n\n",
              model.description.c_str(), plural(max_new, "new token").c_str(), n, o.k);
  std::printf("user> %s\n\n", c.turns.front().c_str());
  std::fflush(stdout);

  model.target->truncate(0);
  const GenerationResult base = run_baseline(*model.target, prompt, dc);

  DrafterOptions d;
  d.drafter = "prompt-lookup";
  d.n = n;
  std::unique_ptr<Drafter> drafter = make_drafter(d, o.k);
  const bool color = !o.no_color && color_wanted(stdout);
  std::printf("assistant (speculative%s)>\n", color ? std::string(", ")
                                                          .append(TokenPrinter::kHighlight)
                                                          .append("accepted drafts")
                                                          .append(TokenPrinter::kReset)
                                                          .c_str()
                                                    : "");
  TokenPrinter printer(*model.codec, stdout, color, dc.stop_tokens);
  // The printing is timed apart and taken out below: the plain run it is compared with prints
  // nothing.
  const WallClock clock;  // the loop's own clock (DecodeConfig::clock is not set)
  double printing_s = 0.0;
  dc.on_round = [&](const RoundRecord& r) {
    const double start = clock.now();
    printer.print_round(r);
    printing_s += clock.now() - start;
  };
  model.target->truncate(0);
  const GenerationResult spec =
      run_speculative(*model.target, *drafter, make_verify_rule(dc.sampling), prompt, dc);
  printer.finish();
  bool same = spec.tokens == base.tokens;
  // Decode time only: the prefill (and the first call's page-in of the weights) is the same
  // work for both and would blur the comparison.
  auto decode_s = [](const GenerationResult& r) {
    return r.stats.total_seconds - r.stats.prefill_seconds;
  };
  // One timing each is at the mercy of a busy machine (on a shared host a run can take twice as
  // long now and then): kPairs - 1 more plain and speculative runs, alternating and not shown,
  // and the median of the pairs' ratios.
  constexpr int kPairs = 3;
  std::vector<double> base_s{decode_s(base)}, spec_s{decode_s(spec) - printing_s};
  std::vector<double> ratios{base_s.back() / spec_s.back()};
  dc.on_round = nullptr;
  for (int i = 1; i < kPairs; ++i) {
    model.target->truncate(0);
    const GenerationResult b = run_baseline(*model.target, prompt, dc);
    model.target->truncate(0);
    drafter = make_drafter(d, o.k);
    const GenerationResult s =
        run_speculative(*model.target, *drafter, make_verify_rule(dc.sampling), prompt, dc);
    same = same && b.tokens == base.tokens && s.tokens == base.tokens;
    base_s.push_back(decode_s(b));
    spec_s.push_back(decode_s(s));
    ratios.push_back(base_s.back() / spec_s.back());
  }
  std::printf("\n\n%-12s %7s %9s %9s\n", "", "target", "tokens/", "decode");
  std::printf("%-12s %7s %9s %9s\n", "", "runs", "run", "tokens/s");
  for (const auto* r : {&base, &spec}) {
    const double seconds = median(r == &base ? base_s : spec_s);
    std::printf("%-12s %7lld %9.2f %9.1f\n", r == &base ? "plain" : "speculative",
                static_cast<long long>(r->stats.target_runs), r->stats.tokens_per_run(),
                static_cast<double>(r->stats.emitted) / seconds);
  }
  std::printf(
      "\nDecode speedup %.2fx (median of %d runs each, %.2f to %.2f; prefill excluded); the "
      "speculative output is %s to plain decoding.\n",
      median(ratios), kPairs, *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()), same ? "identical" : "NOT identical");
  std::printf(
      "More: speclab generate / chat / bench --help (and --model toy for the toy "
      "target).\n");
  return same;
}

void run_demo(const DemoOptions& o) {
  // The toy table runs unless --model smollm2: its --n is checked before anything runs.
  if (o.model != "smollm2" && o.n > 0) {
    check_demo_n(o.n, kToyPromptTokens, o.max_new_tokens > 0 ? o.max_new_tokens : 256,
                 "the toy table's prompt");
  }
  bool ok = true;
  if (o.model == "toy") {
    ok = toy_demo(o);
  } else {
    std::string why;
    std::optional<Model> model;
    check_cpu_threads(o.threads);  // a bad flag is an error, not a reason to fall back to the toy
    if (!fetch_smollm2(&why)) {
      if (o.model == "smollm2") throw UsageError("--model smollm2: " + why);
    } else {
      TargetOptions t;
      t.model = "smollm2";
      t.threads = o.threads;
      try {
        model = load_model(t);
      } catch (const UsageError& e) {
        if (o.model == "smollm2") throw;
        why = e.what();
      }
    }
    if (model) {
      ok = model_demo(*model, o);
      if (o.model == "auto") {  // the toy regimes show the two extremes of guessable text
        std::printf("\n");
        ok = toy_demo(o) && ok;
      }
    } else {
      std::printf("(SmolLM2 is not available: %s. Showing the toy target instead.)\n\n",
                  why.c_str());
      ok = toy_demo(o);
    }
  }
  if (!ok) throw std::runtime_error("speculative output differed from plain decoding");
}

}  // namespace

void add_demo(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "Plain vs speculative (prompt lookup) decoding side by side: on SmolLM2 when it is cached "
      "or can be fetched, otherwise on the toy target");
  cmd->add_option("--model", o->model,
                  "auto: SmolLM2 if it can be had (then the toy table too), else the toy "
                  "target; or smollm2, or toy")
      ->check(CLI::IsMember({"auto", "smollm2", "toy"}))
      ->capture_default_str();
  cmd->add_option("--k", o->k, "Drafts per round")
      ->check(int_in(1, 64, "drafts per round"))
      ->capture_default_str();
  cmd->add_option("--n", o->n,
                  "n-gram size for prompt lookup; 0 = 2 on the toy target, 3 on SmolLM2")
      ->check(int_in(0, 64, "n-gram size"))
      ->capture_default_str();
  cmd->add_option("--max-new-tokens", o->max_new_tokens,
                  "Tokens to generate, by SmolLM2 and by the toy table alike; 0 = 256 on the toy "
                  "target, 120 on SmolLM2")
      ->check(int_in(0, 100000, "tokens to generate"))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "CPU threads for SmolLM2, at most the machine's cores; 0 = every core")
      ->check(int_in(0, 1024, "CPU threads"))
      ->capture_default_str();
  add_seed_flag(*cmd, o->seed, "Toy target seed");
  cmd->add_flag("--no-color", o->no_color, "Plain text even on a terminal");
  cmd->callback([o, cmd]() {
    // --model auto runs SmolLM2 and the toy target when it can, so every flag applies.
    warn_ignored_flags(*cmd, {.toy = o->model == "toy",
                              .drafters = {"prompt-lookup"},
                              .seed_unused = o->model == "smollm2"});
    run_demo(*o);
  });
}

}  // namespace speclab::cli
