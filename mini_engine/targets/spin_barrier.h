#pragma once
// A barrier for the threads of one forward pass that spins briefly, then sleeps.
//
// A pass crosses about ten barriers per layer. On an idle machine the other thread arrives
// within microseconds, so a waiting thread should spin, not sleep (waking a sleeping thread
// costs tens of microseconds). But on a machine whose cores are busy with other programs, the
// thread being waited for may not be running at all, and a thread that keeps spinning holds the
// core it needs: the OpenMP runtime's own barrier spins for about 300,000 rounds before it sleeps,
// and with both cores of a two-core machine busy elsewhere a decode step with 2 threads took 100
// times as long as with 1. This one spins `spins` rounds of `pause` (the default 2000 took 48
// microseconds on Zen 5; an Intel core pauses longer), then sleeps until the last thread arrives.
#include <atomic>
#include <stdexcept>
#include <string>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace speclab::cpu {

class SpinBarrier {
 public:
  static constexpr int kDefaultSpins = 2000;

  // A barrier for `threads` threads (>= 1; throws std::invalid_argument otherwise). A waiting
  // thread pauses `spins` times before it sleeps (0 or less: it sleeps at once).
  explicit SpinBarrier(int threads, int spins = kDefaultSpins) : threads_(threads), spins_(spins) {
    if (threads < 1) {
      throw std::invalid_argument("SpinBarrier: needs at least 1 thread, got " +
                                  std::to_string(threads));
    }
  }
  SpinBarrier(const SpinBarrier&) = delete;
  SpinBarrier& operator=(const SpinBarrier&) = delete;

  int threads() const { return threads_; }

  // Returns once all `threads` threads have called it for this phase; then the barrier is
  // ready for the next phase. Everything a thread wrote before its call is visible to every
  // thread after theirs. Each thread must call it the same number of times.
  void arrive_and_wait() {
    const unsigned phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {
      arrived_.store(0, std::memory_order_relaxed);  // before the others can leave
      phase_.fetch_add(1, std::memory_order_seq_cst);
      if (sleepers_.load(std::memory_order_seq_cst) > 0) phase_.notify_all();
      return;
    }
    for (int i = 0; i < spins_; ++i) {
      if (phase_.load(std::memory_order_acquire) != phase) return;
      pause();
    }
    // Announce the sleep before checking the phase once more: the last thread either sees a
    // sleeper and wakes it, or changed the phase before this check (then wait returns at once).
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    while (phase_.load(std::memory_order_seq_cst) == phase) phase_.wait(phase);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  const int threads_;
  const int spins_;
  std::atomic<int> arrived_{0};
  std::atomic<unsigned> phase_{0};
  std::atomic<int> sleepers_{0};
};

}  // namespace speclab::cpu
