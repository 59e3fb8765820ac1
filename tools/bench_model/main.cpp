// speclab_bench_model: how fast CpuLlama runs on this machine. Not a test: it reports medians.
//
//   prefill   tokens/s of one append() over a P-token prompt (no logits: what the loops do)
//   decode    tokens/s of single-token extend() steps after that prompt
//   verify    the time of one extend() over k + 1 tokens (a verify pass), relative to one decode
//             step at the same context length, k = 1..kmax: the median over repeats of each
//             repeat's own ratio
//   weights   the packed weights' size, and how much of it the kernel put in 2 MiB pages
//   placement the cross-core round trip before each repeat (tools/speclab/core_probe.h): on a
//             shared virtual machine the host may put the two CPUs on one die or on two, and
//             the verify cost differs between the two (book/engine_forward.md)
//
// The output is plain text, or one JSON object with --json (tools/bench_model.py reads it).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core_probe.h"
#include "flags.h"
#include "mini_engine/targets/cpu_kernels.h"
#include "mini_engine/targets/cpu_llama.h"

using namespace speclab;

namespace {

bool g_cpu_time = false;

// Wall-clock seconds, or this process's CPU seconds with --cpu-time (steadier on a busy machine,
// but it counts the work of every thread, so it only equals elapsed time with --threads 1).
double now_s() {
  if (g_cpu_time) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A deterministic prompt: ids spread over the vocabulary (the speed does not depend on them).
std::vector<Token> make_prompt(int n, int vocab) {
  std::vector<Token> p;
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p.push_back(static_cast<Token>(x % static_cast<std::uint64_t>(std::min(vocab, 40000))));
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Measures CpuLlama's prefill, decode and verify-pass speed (medians)."};
  std::string model;
  int threads = 2, prompt_len = 128, decode_steps = 32, repeats = 5, kmax = 8;
  bool json = false;
  app.add_option("--model", model, "GGUF file")->required();
  app.add_option("--threads", threads, "worker threads")
      ->check(cli::int_in(1, 256, "worker threads"))
      ->capture_default_str();
  app.add_option("--prompt", prompt_len, "prompt tokens for the prefill")
      ->check(cli::int_in(1, 4096, "prompt tokens"))
      ->capture_default_str();
  app.add_option("--decode", decode_steps, "decode steps per repeat")
      ->check(cli::int_in(1, 4096, "decode steps"))
      ->capture_default_str();
  app.add_option("--repeats", repeats, "repeats (medians are taken over them)")
      ->check(cli::int_in(1, 1000, "repeats"))
      ->capture_default_str();
  app.add_option("--kmax", kmax, "largest k for the verify-pass cost")
      ->check(cli::int_in(1, 64, "largest k"))
      ->capture_default_str();
  app.add_flag("--json", json, "print one JSON object");
  app.add_flag("--cpu-time", g_cpu_time,
               "time with process CPU time instead of wall time (use with --threads 1)");
  CLI11_PARSE(app, argc, argv);

  CpuLlamaOptions opts;
  opts.threads = threads;
  std::unique_ptr<CpuLlama> target;
  try {
    target = CpuLlama::open(model, opts);
  } catch (const std::exception& e) {
    std::cerr << "speclab_bench_model: " << e.what() << "\n";
    return 1;
  }
  const std::vector<Token> prompt = make_prompt(prompt_len, target->vocab_size());

  // Warm-up: maps the weights into memory and sizes the KV cache.
  target->extend(prompt);
  target->truncate(0);

  std::vector<double> prefill;
  for (int r = 0; r < repeats; ++r) {
    target->truncate(0);
    const double t0 = now_s();
    target->append(prompt);
    prefill.push_back(now_s() - t0);
  }
  const double prefill_tps = prompt_len / median(prefill);

  // Decode: greedy steps after the prompt. Verify passes are timed at the same context lengths,
  // interleaved with the decode steps, so both see the same machine load and cache state.
  // The cost ratio is formed within each repeat (that repeat's verify median over its decode
  // median), and the median of those ratios is reported with their range: the machine's speed
  // drifts between repeats, and a ratio of two medians taken over all repeats would mix states.
  std::vector<double> step;
  std::vector<std::vector<double>> verify(static_cast<size_t>(kmax) + 1);
  std::vector<std::vector<double>> ratio(static_cast<size_t>(kmax) + 1);
  std::vector<CoreRoundTrip> round_trips;  // before each repeat
  for (int r = 0; r < repeats; ++r) {
    round_trips.push_back(measure_core_round_trip());
    target->truncate(prompt_len);
    Token next = prompt.back();
    std::vector<double> step_r;
    std::vector<std::vector<double>> verify_r(static_cast<size_t>(kmax) + 1);
    for (int s = 0; s < decode_steps; ++s) {
      const double t0 = now_s();
      Logits l = target->extend(std::span<const Token>(&next, 1));
      step_r.push_back(now_s() - t0);
      next = argmax(l.row(0));
      if (s % std::max(1, decode_steps / 4) == 0) {
        const int len = target->length();
        for (int k = 1; k <= kmax; ++k) {
          std::vector<Token> pass(static_cast<size_t>(k) + 1, next);
          const double t1 = now_s();
          target->extend(pass);
          verify_r[static_cast<size_t>(k)].push_back(now_s() - t1);
          target->truncate(len);
        }
      }
    }
    step.insert(step.end(), step_r.begin(), step_r.end());
    for (int k = 1; k <= kmax; ++k) {
      const auto& vk = verify_r[static_cast<size_t>(k)];
      verify[static_cast<size_t>(k)].insert(verify[static_cast<size_t>(k)].end(), vk.begin(),
                                            vk.end());
      ratio[static_cast<size_t>(k)].push_back(median(vk) / median(step_r));
    }
  }
  const double step_s = median(step);

  nlohmann::json out;
  out["engine"] = "speclab CpuLlama";
  out["model"] = model;
  out["kernel"] = cpu::packed_kernel_name();
  out["threads"] = threads;
  out["clock"] = g_cpu_time ? "process cpu time" : "wall";
  out["prompt_tokens"] = prompt_len;
  out["prefill_tokens_per_s"] = prefill_tps;
  out["decode_tokens_per_s"] = 1.0 / step_s;
  out["decode_step_ms"] = step_s * 1e3;
  nlohmann::json v = nlohmann::json::array();
  for (int k = 1; k <= kmax; ++k) {
    const double m = median(verify[static_cast<size_t>(k)]);
    const auto& rk = ratio[static_cast<size_t>(k)];
    v.push_back({{"k", k},
                 {"tokens", k + 1},
                 {"ms", m * 1e3},
                 {"relative_to_decode", median(rk)},
                 {"relative_min", *std::min_element(rk.begin(), rk.end())},
                 {"relative_max", *std::max_element(rk.begin(), rk.end())},
                 {"relative_per_repeat", rk}});
  }
  out["verify"] = v;
  // Whether the packed weights got the huge pages they ask for (weight_arena.h): a kernel with
  // transparent huge pages off, or too fragmented to find 2 MiB pages, runs a decode step slower.
  const cpu::WeightArena& arena = target->packed_weights();
  out["weights_mib"] = static_cast<double>(arena.capacity()) / (1 << 20);
  out["weights_in_huge_pages_mib"] = static_cast<double>(arena.huge_page_bytes()) / (1 << 20);
  nlohmann::json trips = nlohmann::json::array();  // null where not measured (one CPU)
  for (const CoreRoundTrip& rt : round_trips)
    trips.push_back(rt.ok() ? nlohmann::json(rt.ns) : nullptr);
  out["core_round_trip_ns"] = trips;
  if (json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf(
      "CpuLlama on %s\n  kernel %s, %d threads, prompt %d tokens, medians of %d repeats"
      " (%s)\n",
      model.c_str(), cpu::packed_kernel_name(), threads, prompt_len, repeats,
      g_cpu_time ? "process CPU time" : "wall clock");
  std::printf("  prefill  %8.1f tokens/s\n", prefill_tps);
  std::printf("  decode   %8.1f tokens/s  (%.2f ms per step)\n", 1.0 / step_s, step_s * 1e3);
  std::printf("  weights  %.1f MiB packed, %.1f MiB of them in 2 MiB pages\n",
              out["weights_mib"].get<double>(), out["weights_in_huge_pages_mib"].get<double>());
  std::printf(
      "  verify pass of k+1 tokens, cost relative to one decode step (median of the\n"
      "  per-repeat ratios, and their range):\n");
  for (const auto& e : v) {
    std::printf("    k=%d  %2d tokens  %7.2f ms  %5.2fx  (%.2f-%.2f)\n", e["k"].get<int>(),
                e["tokens"].get<int>(), e["ms"].get<double>(),
                e["relative_to_decode"].get<double>(), e["relative_min"].get<double>(),
                e["relative_max"].get<double>());
  }
  // Each repeat's placement beside its own ratio for the largest k up to 5 (k = 5 is the
  // course's 6-token verify pass).
  const int shown = std::min(kmax, 5);
  std::printf("  per repeat: cross-core round trip before it, then the k=%d ratio:\n   ", shown);
  for (int r = 0; r < repeats; ++r) {
    std::printf(" %s %.2fx%s", describe(round_trips[static_cast<size_t>(r)]).c_str(),
                ratio[static_cast<size_t>(shown)][static_cast<size_t>(r)],
                r + 1 < repeats ? " |" : "\n");
  }
  return 0;
}
