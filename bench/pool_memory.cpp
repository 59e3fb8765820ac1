// The lab 04 n-gram pool's memory over a long stream, with and without a capacity.
//
//   build/bin/bench_pool_memory            # 1M tokens
//   build/bin/bench_pool_memory --smoke    # 20k tokens: checks that the bench still runs
//
// A bounded pool (capacity 65536 keys, at most 4 values per key) takes in a 1M-token mixed stream
// one token at a time (the per-token update). Every 10% of the stream it prints the keys, values
// and tokens stored, and the bound capacity * (k + v * max_values_per_key). An unbounded pool
// (capacity 0, the production behaviour) runs beside it for the first 25% of the stream to show
// the growth the capacity prevents. Exit status 1 if the bounded pool ever exceeds its bound.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench_stream.h"
#include "ngram_pool.h"

int main(int argc, char** argv) {
  using namespace speclab;
  const bool smoke = argc > 1 && std::strcmp(argv[1], "--smoke") == 0;
  if (argc > 2 || (argc > 1 && !smoke)) {
    std::fprintf(stderr, "usage: %s [--smoke]\n", argv[0]);
    return 2;
  }
  const std::size_t length = smoke ? 20000 : 1000000;
  NGramPoolConfig bounded_cfg;  // k = 3, v = 5, keep all
  bounded_cfg.capacity = smoke ? 2048 : 65536;
  bounded_cfg.max_values_per_key = 4;
  NGramPoolConfig unbounded_cfg = bounded_cfg;
  unbounded_cfg.capacity = 0;
  unbounded_cfg.max_values_per_key = 0;
  const std::size_t bound =
      bounded_cfg.capacity *
      static_cast<std::size_t>(bounded_cfg.max_matching_ngram_size +
                               bounded_cfg.max_draft_len * bounded_cfg.max_values_per_key);

  const std::vector<Token> s = bench::mixed_stream(7, length, 32000);
  NGramPool bounded(bounded_cfg);
  NGramPool unbounded(unbounded_cfg);
  const std::size_t unbounded_until = length / 4;

  std::printf("n-gram pool memory over a %zu-token stream (k=%d, v=%d, keep all)\n", length,
              bounded_cfg.max_matching_ngram_size, bounded_cfg.max_draft_len);
  std::printf("bounded: capacity %zu keys, %d values per key -> at most %zu stored tokens\n\n",
              bounded_cfg.capacity, bounded_cfg.max_values_per_key, bound);
  std::printf("%10s %10s %10s %14s %12s   %s\n", "tokens", "keys", "values", "stored tokens",
              "evicted", "unbounded pool: keys / stored tokens");
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t most_stored = 0, most_keys = 0;
  bool ok = true;
  for (std::size_t end = 1; end <= length; ++end) {
    const std::span<const Token> seen = std::span<const Token>(s).first(end);
    bounded.update(seen);
    if (end <= unbounded_until) unbounded.update(seen);
    most_keys = std::max(most_keys, bounded.num_keys());
    if (end % (length / 10) == 0) {
      const std::size_t stored = bounded.stored_tokens();
      most_stored = std::max(most_stored, stored);
      ok = ok && stored <= bound && bounded.num_keys() <= bounded_cfg.capacity;
      std::printf("%10zu %10zu %10zu %14zu %12lld   ", end, bounded.num_keys(),
                  bounded.num_values(), stored,
                  static_cast<long long>(bounded.stats().evicted_keys));
      if (end <= unbounded_until) {
        std::printf("%zu / %zu\n", unbounded.num_keys(), unbounded.stored_tokens());
      } else {
        std::printf("(stopped at %zu tokens)\n", unbounded_until);
      }
      std::fflush(stdout);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "\nbounded pool: at most %zu keys (capacity %zu), at most %zu stored tokens (bound "
      "%zu): %s\n",
      most_keys, bounded_cfg.capacity, most_stored, bound, ok ? "within the cap" : "OVER THE CAP");
  std::printf("time %.1f s (%.2f us per token for both pools), peak RSS %.0f MiB (both pools)\n",
              secs, 1e6 * secs / static_cast<double>(length),
              static_cast<double>(usage.ru_maxrss) / 1024.0);
  return ok ? 0 : 1;
}
