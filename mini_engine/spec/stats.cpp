#include "mini_engine/spec/stats.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "mini_engine/core/plural.h"

namespace speclab {

void SpecStats::record_round(int drafted_now, int accepted_now, int emitted_now) {
  if (drafted_now < 0 || accepted_now < 0 || accepted_now > drafted_now || emitted_now < 0) {
    throw std::invalid_argument(
        "SpecStats::record_round: need 0 <= accepted <= drafted and "
        "emitted >= 0, got drafted=" +
        std::to_string(drafted_now) + " accepted=" + std::to_string(accepted_now) +
        " emitted=" + std::to_string(emitted_now));
  }
  ++target_runs;
  drafted += drafted_now;
  accepted += accepted_now;
  emitted += emitted_now;
  const auto need = static_cast<size_t>(std::max(drafted_now, 0));
  if (drafted_at.size() < need) drafted_at.resize(need, 0);
  if (accepted_at.size() < need) accepted_at.resize(need, 0);
  for (int i = 0; i < drafted_now; ++i) ++drafted_at[i];
  for (int i = 0; i < accepted_now; ++i) ++accepted_at[i];
  if (accept_length_hist.size() <= static_cast<size_t>(accepted_now)) {
    accept_length_hist.resize(static_cast<size_t>(accepted_now) + 1, 0);
  }
  ++accept_length_hist[accepted_now];
}

double SpecStats::tokens_per_run() const {
  return target_runs == 0 ? 0.0 : static_cast<double>(emitted) / static_cast<double>(target_runs);
}

double SpecStats::acceptance_rate() const {
  return drafted == 0 ? 0.0 : static_cast<double>(accepted) / static_cast<double>(drafted);
}

double SpecStats::acceptance_at(int i) const {
  if (i < 0 || static_cast<size_t>(i) >= drafted_at.size() || drafted_at[i] == 0) return 0.0;
  return static_cast<double>(accepted_at[i]) / static_cast<double>(drafted_at[i]);
}

double SpecStats::other_seconds() const {
  return std::max(0.0, total_seconds - prefill_seconds - draft_seconds - verify_seconds);
}

std::string SpecStats::summary() const {
  char acceptance[64];
  if (drafted == 0) {  // 0.0% would read as every draft rejected
    std::snprintf(acceptance, sizeof acceptance, "n/a (nothing drafted)");
  } else {
    std::snprintf(acceptance, sizeof acceptance, "%.1f%% (%lld/%lld)", 100.0 * acceptance_rate(),
                  static_cast<long long>(accepted), static_cast<long long>(drafted));
  }
  char buf[320];
  const double tps = total_seconds > 0 ? static_cast<double>(emitted) / total_seconds : 0.0;
  std::snprintf(buf, sizeof buf,
                "%s, %s, %.2f tokens/run, acceptance %s, "
                "time prefill %.3fs draft %.3fs verify %.3fs other %.3fs, %.1f tokens/s",
                plural(emitted, "token").c_str(), plural(target_runs, "target run").c_str(),
                tokens_per_run(), acceptance, prefill_seconds, draft_seconds, verify_seconds,
                other_seconds(), tps);
  return buf;
}

}  // namespace speclab
