// `speclab trace`: one JSON line per verify round of a speculative run, for plots and debugging.
//
// Each line is one object (the format the book's plots read; keep them in step):
//   round      0-based index of the verify round
//   position   index in the sequence of the first token this round emitted
//   draft      the drafter's proposal (possibly empty)
//   accepted   how many leading drafts the verify rule kept
//   emitted    draft[0..accepted) followed by the target's own token
//   last       "bonus" (every draft kept), "correction" (a draft was rejected) or
//              "plain" (no draft was proposed: an ordinary decode step)
//   draft_s    seconds spent in the drafter this round
//   verify_s   seconds spent in the verify pass this round
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "prompt_lookup.h"

namespace speclab::cli {
namespace {

struct TraceOptions {
  std::string model = "toy";
  std::string regime = "periodic";
  int k = 5;
  int n = 2;
  int max_new_tokens = 256;
  int prompt_len = 16;
  double noise = -1.0;  // -1: the regime's default
  std::uint64_t seed = 0;
  std::string out;  // "-" = standard output
};

const char* last_kind(const RoundRecord& r) {
  if (r.drafts.empty()) return "plain";
  return r.bonus ? "bonus" : "correction";
}

nlohmann::ordered_json round_to_json(std::int64_t index, const RoundRecord& r) {
  return {{"round", index},
          {"position", r.position},
          {"draft", r.drafts},
          {"accepted", r.accepted},
          {"emitted", r.emitted},
          {"last", last_kind(r)},
          {"draft_s", r.draft_seconds},
          {"verify_s", r.verify_seconds}};
}

void run_trace(const TraceOptions& o) {
  ToyTargetConfig cfg;
  cfg.regime = parse_toy_regime(o.regime);
  cfg.seed = o.seed;
  cfg.noise = o.noise;
  // The random regime never repeats a token only while the sequence is shorter than the vocabulary.
  cfg.vocab_size =
      cfg.regime == ToyRegime::random ? std::max(4096, o.prompt_len + o.max_new_tokens + 1) : 512;
  ToyTarget target(cfg);
  const std::vector<Token> prompt = target.make_prompt(o.prompt_len);

  std::ofstream file;
  std::ostream* out = &std::cout;
  if (o.out != "-") {
    file.open(o.out);
    if (!file) throw std::runtime_error("trace: cannot open '" + o.out + "' for writing");
    out = &file;
  }

  DecodeConfig dc;
  dc.max_new_tokens = o.max_new_tokens;
  dc.k = o.k;
  std::int64_t index = 0;
  dc.on_round = [&](const RoundRecord& r) { *out << round_to_json(index++, r).dump() << '\n'; };
  PromptLookupDrafter drafter(o.n);
  const GenerationResult result =
      run_speculative(target, drafter, greedy_verify_rule(), prompt, dc);
  out->flush();
  if (!*out) throw std::runtime_error("trace: writing '" + o.out + "' failed");
  std::fprintf(stderr, "trace: %s, %s, k=%d: %s\n", target.name().c_str(), drafter.name().c_str(),
               o.k, result.stats.summary().c_str());
}

}  // namespace

void add_trace(CLI::App& app) {
  auto opts = std::make_shared<TraceOptions>();
  CLI::App* cmd = app.add_subcommand(
      "trace", "Run speculative decoding and write one JSON line per verify round");
  cmd->add_option("--model", opts->model, "Target model (only 'toy' for now)")
      ->check(CLI::IsMember({"toy"}));
  cmd->add_option("--regime", opts->regime, "Toy target regime")
      ->check(CLI::IsMember({"periodic", "markov", "random"}));
  cmd->add_option("--k", opts->k, "Drafts per round")->check(CLI::Range(1, 64));
  cmd->add_option("--n", opts->n, "n-gram size for prompt lookup")->check(CLI::Range(1, 64));
  cmd->add_option("--max-new-tokens", opts->max_new_tokens, "Tokens to generate")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--prompt-len", opts->prompt_len, "Prompt length in tokens")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--noise", opts->noise,
                  "Chance a position departs from the regime's rule (-1: the regime's default)")
      ->check(CLI::Range(-1.0, 1.0));
  cmd->add_option("--seed", opts->seed, "Toy target seed");
  cmd->add_option("--out", opts->out, "Output file (JSON Lines), or - for standard output")
      ->required();
  cmd->callback([opts]() { run_trace(*opts); });
}

}  // namespace speclab::cli
