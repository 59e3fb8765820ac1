#include "core_probe.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

namespace speclab {
namespace {

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

}  // namespace

CoreRoundTrip measure_core_round_trip(int trips, int batches) {
  if (trips < 1 || batches < 1) {
    throw std::invalid_argument("measure_core_round_trip: trips and batches must be >= 1");
  }
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    return {0.0, "the CPUs this process may run on are unknown"};
  }
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  if (cpus.size() < 2) return {0.0, "this process may run on one CPU only"};

  // One counter on its own cache line: the initiator writes odd values, the responder answers
  // with the next even one. Each step hands the line to the other core and back.
  struct alignas(64) Line {
    std::atomic<long> value{0};
  };
  Line line;
  std::atomic<bool> pinned_ok{true};
  const long total = static_cast<long>(trips) * batches;
  std::vector<double> batch_ns;
  std::thread responder([&] {
    if (!pin_to(cpus[1])) pinned_ok = false;
    for (long i = 0; i < total; ++i) {
      while (line.value.load(std::memory_order_acquire) != 2 * i + 1) {
        if (line.value.load(std::memory_order_relaxed) < 0) return;  // the initiator gave up
      }
      line.value.store(2 * i + 2, std::memory_order_release);
    }
  });
  std::thread initiator([&] {
    if (!pin_to(cpus[0]) || !pinned_ok) {
      pinned_ok = false;
      line.value.store(-1, std::memory_order_release);
      return;
    }
    long i = 0;
    for (int b = 0; b < batches; ++b) {
      const auto start = std::chrono::steady_clock::now();
      for (int t = 0; t < trips; ++t, ++i) {
        line.value.store(2 * i + 1, std::memory_order_release);
        while (line.value.load(std::memory_order_acquire) != 2 * i + 2) {
        }
      }
      const std::chrono::duration<double, std::nano> took =
          std::chrono::steady_clock::now() - start;
      batch_ns.push_back(took.count() / trips);
    }
  });
  initiator.join();
  responder.join();
  if (!pinned_ok) return {0.0, "a thread could not be pinned to a CPU"};
  std::sort(batch_ns.begin(), batch_ns.end());
  return {batch_ns[batch_ns.size() / 2], ""};
}

std::string describe(const CoreRoundTrip& rt) {
  if (!rt.ok()) return "n/a (" + rt.error + ")";
  return std::to_string(static_cast<long>(std::lround(rt.ns))) + " ns";
}

}  // namespace speclab
