// Lab 03's filler_top_k table: what enrichment buys in tokens per run, and what it costs in
// storage entries, on the ToyTarget (book/lab03_nasd.md, "Learning more per round").
//
//   build/bin/bench_nasd_enrichment            # 20 seeds of 300 tokens per workload
//   build/bin/bench_nasd_enrichment --smoke    # 2 seeds of 40 tokens: checks that it still runs
//
// The tables are printed as Markdown; the chapter's sampled table is this output, and
// tests/book/check_lab03_table.py (ctest label book) keeps the two the same.
//
// Each workload (vocabulary 64, prompt 16 tokens) is decoded with NASD n = 3, min_context = 1,
// k = 4 drafts, at filler_top_k 1..4, for every seed: sampled at temperature 1 (the table), then
// greedily (the line under it). Tokens per run is emitted tokens over target runs summed over the
// seeds; entries is the mean of NasdDrafter::storage().size() at the end of a decode. The decoded
// text is the same at every filler_top_k (verification is lossless and seeded), so the bench
// checks that too: exit status 1 if it ever differs.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "nasd.h"
#include "prompt_lookup.h"

namespace {

using namespace speclab;

struct Workload {
  const char* name;
  ToyTargetConfig config;  // seed set per decode
};

struct Cell {
  double emitted = 0, runs = 0, entries = 0;
  double tokens_per_run() const { return emitted / runs; }
};

constexpr int kMaxTopK = 4;

// Decodes `w` with every seed at filler_top_k 1..kMaxTopK; cells[i] is top-k i + 1. Returns false
// if some seed's output differs between two filler_top_k values.
bool measure(const Workload& w, bool sampled, int seeds, int tokens, Cell (&cells)[kMaxTopK]) {
  bool same = true;
  for (int seed = 0; seed < seeds; ++seed) {
    ToyTargetConfig cfg = w.config;
    cfg.seed = static_cast<std::uint64_t>(seed);
    ToyTarget target(cfg);
    const std::vector<Token> prompt = target.make_prompt(16);
    DecodeConfig dc;
    dc.max_new_tokens = tokens;
    dc.k = 4;
    if (sampled) dc.sampling = SamplingParams{1.0, static_cast<std::uint64_t>(seed), 0};
    std::vector<Token> first;
    for (int i = 0; i < kMaxTopK; ++i) {
      NasdDrafter drafter({.n = 3, .min_context = 1, .filler_top_k = i + 1});
      const auto res = sampled ? run_speculative(target, drafter, sampled_verify_rule(), prompt, dc)
                               : run_speculative(target, drafter, greedy_verify_rule(), prompt, dc);
      cells[i].emitted += static_cast<double>(res.stats.emitted);
      cells[i].runs += static_cast<double>(res.stats.target_runs);
      cells[i].entries += static_cast<double>(drafter.storage().size()) / seeds;
      if (i == 0) first = res.tokens;
      same = same && res.tokens == first;
    }
  }
  return same;
}

}  // namespace

int main(int argc, char** argv) {
  const bool smoke = argc > 1 && std::strcmp(argv[1], "--smoke") == 0;
  if (argc > 2 || (argc > 1 && !smoke)) {
    std::fprintf(stderr, "usage: %s [--smoke]\n", argv[0]);
    return 2;
  }
  const int seeds = smoke ? 2 : 20;
  const int tokens = smoke ? 40 : 300;

  auto config = [](ToyRegime regime, double noise, int branching) {
    ToyTargetConfig c;
    c.regime = regime;
    c.vocab_size = 64;
    c.noise = noise;
    c.branching = branching;
    return c;
  };
  const Workload workloads[] = {
      {"periodic, noise 0.2", config(ToyRegime::periodic, 0.2, 3)},
      {"markov, 3 successors", config(ToyRegime::markov, -1.0, 3)},
      {"markov, 4 successors", config(ToyRegime::markov, -1.0, 4)},
  };

  std::printf("NASD n=3, min_context=1, k=4 drafts, vocabulary 64, %d seeds of %d tokens\n\n",
              seeds, tokens);
  bool ok = true;
  for (const bool sampled : {true, false}) {
    std::printf("%s (tokens per run; storage entries, mean over seeds)\n",
                sampled ? "sampled at temperature 1" : "greedy");
    std::printf(
        "\n| workload | top-k 1 | top-k 2 | top-k 3 | top-k 4 | entries at top-k 1 / 3 |\n");
    std::printf("|---|---|---|---|---|---|\n");
    for (const Workload& w : workloads) {
      Cell cells[kMaxTopK];
      const bool same = measure(w, sampled, seeds, tokens, cells);
      ok = ok && same;
      std::printf("| %s |", w.name);
      for (const Cell& c : cells) std::printf(" %.3f |", c.tokens_per_run());
      std::printf(" %.1f / %.1f |%s\n", cells[0].entries, cells[2].entries,
                  same ? "" : "  OUTPUT DIFFERS BETWEEN filler_top_k VALUES");
    }
    std::printf("\n");
  }
  return ok ? 0 : 1;
}
