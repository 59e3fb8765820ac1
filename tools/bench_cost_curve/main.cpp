// speclab_bench_cost_curve: measures the cost curve T(b, k) of a batched target -- the seconds
// of one verify step of b sequences with k drafts each -- and writes it in the CSV format that
// lab 06 loads (data/cost_curves/README.md). Not a test: each point is a median of timed calls.
//
//   speclab_bench_cost_curve --target cpullama --threads 2 --out data/cost_curves/x.csv
//   speclab_bench_cost_curve --target toy --clock simulated     # reproduces the toy cost model
//
// --clock cpu times with this process's CPU time, which is steadier than the wall clock on a busy
// machine but counts the work of every thread: it equals elapsed time only with --threads 1.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "flags.h"
#include "mini_engine/core/clock.h"
#include "mini_engine/spec/cost_curve.h"
#include "mini_engine/targets/cpu_llama_batch.h"
#include "mini_engine/targets/toy_batch_target.h"

using namespace speclab;

namespace {

// This process's CPU time (all threads together).
class CpuTimeClock final : public Clock {
 public:
  double now() const override {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
};

// $SPECLAB_MODEL, else ($SPECLAB_CACHE or ~/.cache/speclab)/SmolLM2-135M-Instruct.Q4_1.gguf.
std::string default_model() {
  if (const char* m = std::getenv("SPECLAB_MODEL"); m && *m) return m;
  std::string dir;
  if (const char* c = std::getenv("SPECLAB_CACHE"); c && *c) {
    dir = c;
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    dir = std::string(h) + "/.cache/speclab";
  }
  return dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace

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
  std::string model_path = default_model();
  int threads = 2;
  app.add_option("--target", target_name, "cpullama (SmolLM2 on the CPU) or toy")
      ->check(CLI::IsMember({"toy", "cpullama"}));
  app.add_option("--clock", clock_name,
                 "wall: elapsed time; cpu: process CPU time (= elapsed only with --threads 1); "
                 "simulated: the toy's cost model (toy only)")
      ->check(CLI::IsMember({"wall", "cpu", "simulated"}));
  app.add_option("--model", model_path, "cpullama: the GGUF file (default: the fetched SmolLM2)");
  app.add_option("--threads", threads, "cpullama: worker threads")
      ->check(speclab::cli::int_in(1, 1024, "worker threads"));
  speclab::cli::add_list_flag(app, "--batch", batch_sizes, "batch sizes b, increasing",
                              speclab::cli::int_in(1, 1 << 16, "batch size"));
  app.add_option("--max-k", max_k, "largest draft length k (0..max_k are measured)")
      ->check(speclab::cli::int_in(0, 64, "largest k"));
  app.add_option("--context", opt.context, "tokens each sequence holds before the timed calls")
      ->check(speclab::cli::int_in(1, 1 << 24, "context tokens"));
  app.add_option("--reps", opt.reps, "timed calls per point (the median is kept)")
      ->check(speclab::cli::int_in(1, 1 << 20, "timed calls"));
  app.add_option("--warmup", opt.warmup, "untimed calls per point before those")
      ->check(speclab::cli::int_in(0, 1 << 20, "untimed calls"));
  app.add_option("--out", out_path, "write the CSV here (default: standard output)");
  std::string note;
  app.add_option("--note", note, "one more comment line for the file (machine, load, ...)");
  app.add_option("--vocab", vocab, "toy: vocabulary size")
      ->check(speclab::cli::int_in(8, 1 << 20, "vocabulary size"));
  app.add_option("--fixed", cost.fixed_seconds, "toy cost model: seconds per call");
  app.add_option("--per-token", cost.per_token_seconds, "toy cost model: seconds per token");
  app.add_option("--knee", cost.knee_tokens,
                 "toy cost model: tokens per call where it turns compute-bound");
  app.add_option("--past-knee", cost.past_knee_seconds,
                 "toy cost model: extra seconds per token past the knee");
  CLI11_PARSE(app, argc, argv);

  try {
    std::unique_ptr<BatchTarget> target;
    ToyBatchTarget* toy = nullptr;
    if (target_name == "cpullama") {
      if (clock_name == "simulated") throw std::invalid_argument("--clock simulated is toy-only");
      CpuLlamaOptions o;
      o.threads = threads;
      target = CpuLlamaBatch::open(model_path, o);
    } else {
      ToyTargetConfig cfg;
      cfg.vocab_size = vocab;
      auto t = std::make_unique<ToyBatchTarget>(cfg, cost);
      toy = t.get();
      target = std::move(t);
    }
    const WallClock wall;
    const CpuTimeClock cpu;
    const Clock& clock = clock_name == "simulated" ? static_cast<const Clock&>(toy->clock())
                         : clock_name == "cpu"     ? static_cast<const Clock&>(cpu)
                                                   : static_cast<const Clock&>(wall);
    opt.on_point = [](int b, int k, double s) {
      std::fprintf(stderr, "b=%-3d k=%-2d %.6f s\n", b, k, s);
    };
    const CostCurve curve = measure_cost_curve(*target, clock, batch_sizes, max_k, opt);

    std::ostringstream comment;
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    comment << "speclab_bench_cost_curve: " << target->name() << ", clock " << clock_name << "\n"
            << "context " << opt.context << " tokens per sequence, median of " << opt.reps
            << " calls after " << opt.warmup << " warm-up, " << std::thread::hardware_concurrency()
            << " hardware threads, " << date;
    if (!note.empty()) comment << "\n" << note;
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
      out << csv;
      out.close();  // a full disk shows only when the buffer is flushed
      if (!out) {
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
