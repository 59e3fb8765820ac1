#pragma once
// `speclab bench --batch`: the drafter arena with several requests decoded at once.
//
// At every batch size B the same R requests (R = the largest B: the first turns of the
// workload's conversations, in turn) are decoded in consecutive batches of B, in lock-step with
// run_speculative_batch: plain decoding against each case. Every request's speculative output
// must equal its plain output, or the bench fails (exit status 1) and names the request.
#include <cstdint>
#include <string>
#include <vector>

#include "factory.h"
#include "mini_engine/spec/verify.h"
#include "workloads.h"

namespace speclab::cli {

// One speculative configuration of the arena (both modes of bench).
struct BenchCase {
  DrafterOptions drafter;
  int k = 0;
  int n = 0;                // 0: the drafter has no n
  int sa_draft_ratio = -1;  // -1: the drafter does not read --sa-draft-ratio
};

struct BatchBenchSettings {
  TargetOptions target;  // the model, loaded here as a BatchTarget
  std::vector<int> batches;
  int repeats = 1;
  int max_new_tokens = 0;
  std::string clock = "wall";  // wall | cpu
  double temperature = 0.0;    // --temperature and --seed, recorded with the results as the
  std::uint64_t seed = 0;      // main mode's are (`base` of run_bench_batch decodes with them)
  bool progress = true;        // draw a progress bar (on a terminal)
  std::string csv, json;       // output paths; '' = do not write. The caller has checked them
                               // with check_output_files (run_bench does, before any work).
};

// Runs every case of `cases` on every workload at every batch size, prints the table to stdout
// and writes the CSV and JSON files. `model` supplies the chat template and stop tokens (its
// target is not used); `base` is plain decoding's configuration and `verify` the case's rule.
// Returns 0, or 1 when a speculative output differed from plain decoding. Throws what loading
// the model or writing the files throws.
int run_bench_batch(const BatchBenchSettings& settings, const std::vector<BenchCase>& cases,
                    const std::vector<Workload>& workloads, const Model& model,
                    const DecodeConfig& base, const VerifyRule& verify);

}  // namespace speclab::cli
