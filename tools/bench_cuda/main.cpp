// speclab_bench_cuda: CudaLlama's decode speed and the cost of a verify pass of k + 1 tokens
// relative to one decode step, k = 1..8, as medians; with CUDA graphs (the default) and with
// the kernels launched one by one, side by side. Needs a CUDA GPU; exits 2 with the reason
// where there is none. Not a test.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "flags.h"
#include "mini_engine/targets/cuda/cuda_llama.h"

using namespace speclab;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double seconds(const std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Measures CudaLlama's decode speed and verify-pass cost (medians), with CUDA graphs and "
      "with the kernels launched one by one, side by side."};
  std::string model;
  int prompt_len = 128, repeats = 20, kmax = 8;
  app.add_option("--model", model, "GGUF file")->required();
  app.add_option("--prompt", prompt_len, "context tokens before measuring")
      ->check(cli::int_in(1, 4096, "context tokens"))
      ->capture_default_str();
  app.add_option("--repeats", repeats, "repeats per measurement")
      ->check(cli::int_in(1, 10000, "repeats"))
      ->capture_default_str();
  app.add_option("--kmax", kmax, "largest k")
      ->check(cli::int_in(1, 64, "largest k"))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (const std::string why = cuda_unavailable_reason(); !why.empty()) {
    std::fprintf(stderr, "speclab_bench_cuda: %s\n", why.c_str());
    return 2;
  }
  try {
    std::vector<Token> prompt(static_cast<size_t>(prompt_len));
    for (int i = 0; i < prompt_len; ++i) prompt[i] = static_cast<Token>((i * 7919) % 30000 + 100);
    // The same model twice: decode steps and verify passes replayed as CUDA graphs (the
    // default), and the same kernels launched one by one. Measured in turns, in one run.
    const int max_length = prompt_len + kmax + 16;
    auto graphed = make_cuda_llama(model, {.max_length = max_length, .graphs = true});
    auto eager = make_cuda_llama(model, {.max_length = max_length, .graphs = false});
    auto t0 = std::chrono::steady_clock::now();
    graphed->extend(prompt);
    const double prefill = seconds(t0);
    eager->extend(prompt);
    // cost(t, n): one extend of n tokens at the end of the prompt, rolled back after each.
    auto cost = [&](Target& t, int n) {
      std::vector<Token> block(static_cast<size_t>(n), 42);
      std::vector<double> s;
      for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        t.extend(block);
        s.push_back(seconds(start));
        t.truncate(prompt_len);
      }
      return median(s);
    };
    for (int n = 1; n <= kmax + 1; ++n) cost(*graphed, n);  // capture every block size first
    cost(*eager, 1);
    const double decode = cost(*graphed, 1), decode_eager = cost(*eager, 1);
    std::printf(
        "CudaLlama on %s\n  prefill %d tokens: %.1f tokens/s\n"
        "  decode: %.1f tokens/s (%.3f ms per step) with CUDA graphs; %.3f ms launching the "
        "kernels one by one (%.2fx)\n\n  k  verify(k+1)/decode   one by one\n",
        model.c_str(), prompt_len, prompt_len / prefill, 1.0 / decode, decode * 1e3,
        decode_eager * 1e3, decode_eager / decode);
    for (int k = 1; k <= kmax; ++k) {
      std::printf("%3d  %-18.2f   %.2f\n", k, cost(*graphed, k + 1) / decode,
                  cost(*eager, k + 1) / decode_eager);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "speclab_bench_cuda: %s\n", e.what());
    return 1;
  }
  return 0;
}
