// speclab_bench_cost_curve: measures the cost curve T(b, k) of a batched target -- the seconds
// of one verify step of b sequences with k drafts each -- and writes it in the CSV format that
// lab 06 loads (data/cost_curves/README.md). Not a test: each point is a median of timed calls.
//
//   speclab_bench_cost_curve --target toy --clock simulated          # reproduces the cost model
//   speclab_bench_cost_curve --target toy --clock wall --out x.csv   # the toy's own CPU time
//
// --target cpullama is reserved for CpuLlama's batched extend, which is not in this build yet.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mini_engine/core/clock.h"
#include "mini_engine/spec/cost_curve.h"
#include "mini_engine/targets/toy_batch_target.h"

using namespace speclab;

int main(int argc, char** argv) {
  CLI::App app{"speclab_bench_cost_curve: measure T(b, k) of a batched target as a CSV cost curve"};
  std::string target_name = "toy";
  std::string clock_name = "wall";
  std::vector<int> batch_sizes = {1, 4, 8, 32};
  int max_k = 8;
  MeasureOptions opt;
  std::string out_path;
  ToyCostModel cost;
  int vocab = 512;
  app.add_option("--target", target_name, "toy (cpullama: once its batched extend lands)")
      ->check(CLI::IsMember({"toy", "cpullama"}));
  app.add_option("--clock", clock_name,
                 "wall: real time; simulated: the toy's cost model (toy only)")
      ->check(CLI::IsMember({"wall", "simulated"}));
  app.add_option("--batch", batch_sizes, "batch sizes b, increasing")->delimiter(',');
  app.add_option("--max-k", max_k, "largest draft length k (0..max_k are measured)")
      ->check(CLI::Range(0, 64));
  app.add_option("--context", opt.context, "tokens each sequence holds before the timed calls")
      ->check(CLI::PositiveNumber);
  app.add_option("--reps", opt.reps, "timed calls per point (the median is kept)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", opt.warmup, "untimed calls per point before those")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--out", out_path, "write the CSV here (default: standard output)");
  app.add_option("--vocab", vocab, "toy: vocabulary size")->check(CLI::Range(8, 1 << 20));
  app.add_option("--fixed", cost.fixed_seconds, "toy cost model: seconds per call");
  app.add_option("--per-token", cost.per_token_seconds, "toy cost model: seconds per token");
  app.add_option("--knee", cost.knee_tokens,
                 "toy cost model: tokens per call where it turns compute-bound");
  app.add_option("--past-knee", cost.past_knee_seconds,
                 "toy cost model: extra seconds per token past the knee");
  CLI11_PARSE(app, argc, argv);

  try {
    if (target_name == "cpullama") {
      std::cerr << "speclab_bench_cost_curve: --target cpullama needs CpuLlama's batched extend, "
                   "which this build does not have yet (branch cpullama). Use --target toy.\n";
      return 2;
    }
    ToyTargetConfig cfg;
    cfg.vocab_size = vocab;
    ToyBatchTarget toy(cfg, cost);
    const WallClock wall;
    const Clock& clock = clock_name == "simulated" ? static_cast<const Clock&>(toy.clock())
                                                   : static_cast<const Clock&>(wall);
    opt.on_point = [](int b, int k, double s) {
      std::fprintf(stderr, "b=%-3d k=%-2d %.6f s\n", b, k, s);
    };
    const CostCurve curve = measure_cost_curve(toy, clock, batch_sizes, max_k, opt);

    std::ostringstream comment;
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    comment << "speclab_bench_cost_curve: " << toy.name() << ", clock " << clock_name << "\n"
            << "context " << opt.context << " tokens per sequence, median of " << opt.reps
            << " calls after " << opt.warmup << " warm-up, " << std::thread::hardware_concurrency()
            << " hardware threads, " << date;
    if (clock_name == "simulated") {
      comment << "\ncost model: fixed " << cost.fixed_seconds << " s, per token "
              << cost.per_token_seconds << " s, knee " << cost.knee_tokens << " tokens, past knee "
              << cost.past_knee_seconds << " s";
    }
    const std::string csv = curve.to_csv(comment.str());
    if (out_path.empty()) {
      std::cout << csv;
    } else {
      std::ofstream out(out_path, std::ios::binary);
      if (!(out << csv)) {
        std::cerr << "speclab_bench_cost_curve: cannot write " << out_path << "\n";
        return 1;
      }
      std::cerr << "wrote " << out_path << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "speclab_bench_cost_curve: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
