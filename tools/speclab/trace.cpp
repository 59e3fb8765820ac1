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
//   text       (real models only) the emitted tokens as text
// Any model, drafter and verify rule the other subcommands take works here (factory.h).
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
#include "factory.h"
#include "prompt.h"

namespace speclab::cli {
namespace {

struct TraceOptions {
  TargetOptions target;
  DrafterOptions drafter;
  DecodeOptions decode;
  PromptOptions prompt;
  std::string out;  // "-" = standard output
};

const char* last_kind(const RoundRecord& r) {
  if (r.drafts.empty()) return "plain";
  return r.bonus ? "bonus" : "correction";
}

nlohmann::ordered_json round_to_json(std::int64_t index, const RoundRecord& r,
                                     const TextCodec& codec) {
  nlohmann::ordered_json j = {{"round", index},
                              {"position", r.position},
                              {"draft", r.drafts},
                              {"accepted", r.accepted},
                              {"emitted", r.emitted},
                              {"last", last_kind(r)},
                              {"draft_s", r.draft_seconds},
                              {"verify_s", r.verify_seconds}};
  // Tokens can end inside a UTF-8 character; dump() below replaces such bytes.
  if (codec.is_text()) j["text"] = codec.decode(r.emitted);
  return j;
}

void run_trace(const TraceOptions& o) {
  OnePromptRun run = prepare_one_prompt_run(o.target, o.drafter, o.decode, o.prompt);

  std::ofstream file;
  std::ostream* out = &std::cout;
  if (o.out != "-") {
    file.open(o.out);
    if (!file) throw std::runtime_error("trace: cannot open '" + o.out + "' for writing");
    out = &file;
  }
  std::int64_t index = 0;
  run.config.on_round = [&](const RoundRecord& r) {
    *out << round_to_json(index++, r, *run.model.codec)
                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
         << '\n';
  };
  const GenerationResult result =
      run_decode(*run.model.target, run.drafter.get(), run.verify, run.prompt, run.config);
  out->flush();
  if (!*out) throw std::runtime_error("trace: writing '" + o.out + "' failed");
  std::fprintf(stderr, "trace: %s, %s, k=%d: %s\n", run.model.description.c_str(),
               run.drafter ? run.drafter->name().c_str() : "none (plain decoding)", o.decode.k,
               result.stats.summary().c_str());
}

}  // namespace

void add_trace(CLI::App& app) {
  auto o = std::make_shared<TraceOptions>();
  o->drafter.n = 2;  // the book's traces use bigrams
  o->decode.max_new_tokens = 256;
  CLI::App* cmd = app.add_subcommand(
      "trace", "Run speculative decoding and write one JSON line per verify round");
  add_prompt_flags(*cmd, o->prompt);
  cmd->add_option("--prompt-len", o->prompt.toy_prompt_len,
                  "Toy target only: the length of its own prompt, when no --prompt is given")
      ->check(int_in(1, 4096, "prompt tokens"))
      ->capture_default_str()
      ->group("Toy target");
  add_target_flags(*cmd, o->target);
  add_drafter_flags(*cmd, o->drafter);
  add_decode_flags(*cmd, o->decode);
  cmd->add_option("--out", o->out, "Output file (JSON Lines), or - for standard output")
      ->required();
  cmd->callback([o]() { run_trace(*o); });
}

}  // namespace speclab::cli
