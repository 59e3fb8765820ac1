// The forward pass's barrier: no thread passes before every thread has arrived, phase after
// phase, whether the waiting threads spin or sleep; and what a thread wrote before it arrived is
// what the others read after.
#include <doctest/doctest.h>

#include <stdexcept>
#include <thread>
#include <vector>

#include "mini_engine/targets/spin_barrier.h"

using speclab::cpu::SpinBarrier;

namespace {

// `threads` threads cross `phases` phases. Before each crossing, thread t writes the phase into
// its own slot (a plain int, so the barrier must order it); after it, every thread checks every
// slot. Returns how many times a slot held something other than the phase just crossed.
int count_early_passes(int threads, int phases, int spins) {
  SpinBarrier barrier(threads, spins);
  std::vector<int> slot(static_cast<size_t>(threads), -1);
  std::vector<int> wrong(static_cast<size_t>(threads), 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int p = 0; p < phases; ++p) {
        slot[static_cast<size_t>(t)] = p;
        barrier.arrive_and_wait();
        for (int u = 0; u < threads; ++u)
          wrong[static_cast<size_t>(t)] += slot[static_cast<size_t>(u)] != p;
        barrier.arrive_and_wait();  // nobody writes the next phase before all have read this one
      }
    });
  }
  for (std::thread& th : pool) th.join();
  int total = 0;
  for (int w : wrong) total += w;
  return total;
}

}  // namespace

TEST_SUITE("CpuLlama: the pass's barrier") {
  TEST_CASE("no thread passes the barrier before all have arrived, spinning or sleeping") {
    for (int threads : {2, 3, 4}) {
      // spins 0: every waiting thread sleeps at once; the default: on an idle machine they
      // mostly spin. (Far longer spins make this test crawl when threads outnumber the cores,
      // which is the very problem the barrier's sleep solves.)
      for (int spins : {0, SpinBarrier::kDefaultSpins}) {
        CAPTURE(threads);
        CAPTURE(spins);
        CHECK(count_early_passes(threads, 2000, spins) == 0);
      }
    }
  }

  TEST_CASE("one thread passes at once, and a barrier needs a thread") {
    SpinBarrier one(1);
    for (int i = 0; i < 3; ++i) one.arrive_and_wait();
    CHECK(one.threads() == 1);
    CHECK_THROWS_AS(SpinBarrier(0), std::invalid_argument);
  }
}
