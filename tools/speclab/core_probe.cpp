#include "core_probe.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <utility>
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

  // One counter on its own cache line: the initiator writes an odd value, the responder answers
  // with the next even one, and -1 sends the responder home. Each step hands the line to the
  // other core and back. Each batch stops early at kBatchTime, so a busy machine (the responder's
  // CPU shared with another job, answering once a scheduler slice) cannot stall a bench for long.
  struct alignas(64) Line {
    std::atomic<long> value{0};
  };
  using Clock = std::chrono::steady_clock;
  constexpr auto kBatchTime = std::chrono::milliseconds(20);
  Line line;
  std::atomic<bool> pinned_ok{true};
  std::vector<double> batch_ns;
  std::thread responder([&] {
    if (!pin_to(cpus[1])) pinned_ok = false;
    for (;;) {
      const long v = line.value.load(std::memory_order_acquire);
      if (v < 0) return;
      if (v % 2 == 1) line.value.store(v + 1, std::memory_order_release);
    }
  });
  std::thread initiator([&] {
    if (pin_to(cpus[0]) && pinned_ok) {
      long next = 1;
      for (int b = 0; b < batches; ++b) {
        const auto start = Clock::now();
        const auto deadline = start + kBatchTime;
        int done = 0;
        bool late = false;
        for (; done < trips && !late; ++done, next += 2) {
          line.value.store(next, std::memory_order_release);
          for (long spins = 1; line.value.load(std::memory_order_acquire) != next + 1; ++spins) {
            if (spins % 1024 == 0 && Clock::now() > deadline) {
              late = true;  // no answer yet: wait for this one, then end the batch
              while (line.value.load(std::memory_order_acquire) != next + 1) {
              }
              break;
            }
          }
          if (done % 64 == 63 && Clock::now() > deadline) late = true;
        }
        const std::chrono::duration<double, std::nano> took = Clock::now() - start;
        batch_ns.push_back(took.count() / done);
      }
    } else {
      pinned_ok = false;
    }
    line.value.store(-1, std::memory_order_release);
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

std::string probe_scope_text(int a, int b, int allowed) {
  if (allowed == 2) return "";
  return "between CPUs " + std::to_string(a) + " and " + std::to_string(b) + " of the " +
         std::to_string(allowed) +
         " this process may use; the model's threads are not pinned to them";
}

std::string probe_scope() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return "";
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  if (cpus.size() < 2) return "";  // nothing is measured, and the error says why
  return probe_scope_text(cpus[0], cpus[1], static_cast<int>(cpus.size()));
}

void RoundTripRange::add(const CoreRoundTrip& rt) {
  if (!rt.ok()) {
    error = rt.error;
    return;
  }
  min_ns = measured == 0 ? rt.ns : std::min(min_ns, rt.ns);
  max_ns = measured == 0 ? rt.ns : std::max(max_ns, rt.ns);
  ++measured;
}

void RoundTripRange::add(const RoundTripRange& other) {
  if (!other.scope.empty()) scope = other.scope;
  if (other.measured == 0) {
    if (!other.error.empty()) error = other.error;
    return;
  }
  min_ns = measured == 0 ? other.min_ns : std::min(min_ns, other.min_ns);
  max_ns = measured == 0 ? other.max_ns : std::max(max_ns, other.max_ns);
  measured += other.measured;
}

std::string RoundTripRange::describe() const {
  if (measured == 0) return "n/a (" + (error.empty() ? std::string("not measured") : error) + ")";
  const long lo = std::lround(min_ns), hi = std::lround(max_ns);
  if (lo == hi) return std::to_string(lo) + " ns";
  return std::to_string(lo) + " to " + std::to_string(hi) + " ns";
}

RoundTripProbes::RoundTripProbes(std::string skip) : skip_(std::move(skip)) {
  if (skip_.empty()) all_.scope = probe_scope();
  last_ = probe();
  all_.add(last_);
}

CoreRoundTrip RoundTripProbes::probe() const {
  if (!skip_.empty()) return CoreRoundTrip{0.0, skip_};
  return measure_core_round_trip();
}

RoundTripRange RoundTripProbes::next() {
  const CoreRoundTrip now = probe();
  all_.add(now);
  RoundTripRange around;
  around.scope = all_.scope;
  around.add(last_);
  around.add(now);
  last_ = now;
  return around;
}

}  // namespace speclab
