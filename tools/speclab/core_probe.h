#pragma once
// Where the host has put this process's CPUs, measured: the round trip of a cache line between
// two of them.
//
// Why speclab bench measures it: on a shared virtual machine the host may place the two CPUs on
// one die (they share a last-level cache: a round trip of about 80 ns on the Zen 5 host of
// book/engine_forward.md) or on two dies (about 370 ns), and may move them from one to the other
// within minutes. The two placements give different speedups for the same code: on two dies a
// decode step gets more memory bandwidth while a verify pass does not get faster, so the run cost
// rises and the speedup falls. bench probes the round trip before each conversation and after
// the last, and speclab_bench_model before each repeat, so that a result can be read with the
// placement it was measured on.
#include <string>

namespace speclab {

struct CoreRoundTrip {
  double ns = 0.0;    // median over batches of the mean round trip in a batch, in nanoseconds
  std::string error;  // why nothing was measured; empty when ns is a measurement
  bool ok() const { return error.empty(); }
};

// Bounces a counter between two threads pinned to the first two CPUs this process may run on
// (sched_getaffinity): `batches` batches of up to `trips` round trips, each batch cut short after
// 20 ms, so the whole takes at most about batches * 20 ms even on a busy machine (some 8 ms at
// 400 ns a trip when idle). The calling thread's own affinity is left as it was.
// Requires trips >= 1 and batches >= 1 (throws std::invalid_argument otherwise). Returns an
// error, not a measurement, when the process may run on only one CPU or a thread cannot be
// pinned.
CoreRoundTrip measure_core_round_trip(int trips = 4000, int batches = 5);

// "372 ns", or "n/a (<error>)".
std::string describe(const CoreRoundTrip& rt);

// Which CPUs the probe measures, for a reader of its figure: "" when this process may run on
// exactly two CPUs (the probe then measures the pair the model's threads run on), otherwise
// probe_scope_text() of the two it pins to and the count, or "" when the affinity is unknown.
std::string probe_scope();
// "between CPUs <a> and <b> of the <allowed> this process may use; the model's threads are not
// pinned to them", or "" when allowed == 2. Requires a != b.
std::string probe_scope_text(int a, int b, int allowed);

// The lowest and highest of several round trips: bench probes before every conversation and
// after the last, and gives each case the probes on either side of its runs (the host may move
// the CPUs in the middle of a run).
struct RoundTripRange {
  int measured = 0;     // probes that measured a round trip
  double min_ns = 0.0;  // meaningful when measured > 0
  double max_ns = 0.0;
  std::string error;  // why the last probe measured nothing; kept for describe()
  std::string scope;  // probe_scope() of the probes, set by RoundTripProbes; "" = the model's CPUs

  void add(const CoreRoundTrip& rt);
  void add(const RoundTripRange& other);
  // "79 to 414 ns", "80 ns" when all agree to the nanosecond, "n/a (<error>)" when none measured.
  std::string describe() const;
};

// Probes taken between runs: one when constructed, then one per next(), which returns the range
// of that probe and the one before it, the placement around the runs in between.
// With a non-empty `skip` nothing is probed, and every range says "n/a (<skip>)": bench passes
// one for --device cuda, where the CPUs' placement says little about the run.
class RoundTripProbes {
 public:
  explicit RoundTripProbes(std::string skip = {});
  RoundTripRange next();
  const RoundTripRange& all() const { return all_; }  // every probe so far

 private:
  CoreRoundTrip probe() const;  // one measurement, or the skip reason
  std::string skip_;
  CoreRoundTrip last_;
  RoundTripRange all_;
};

}  // namespace speclab
