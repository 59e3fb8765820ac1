#pragma once
// A one-line progress bar with an ETA, on stderr, drawn only when stderr is a terminal.
#include <chrono>
#include <cstdio>
#include <string>

namespace speclab::cli {

class ProgressBar {
 public:
  // `total` units of work; `enabled` false draws nothing (not a terminal, or --no-progress).
  ProgressBar(long total, bool enabled) : total_(total > 0 ? total : 1), enabled_(enabled) {}
  ~ProgressBar() { clear(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Marks `units` more as done and redraws, naming what is running now.
  void advance(long units, const std::string& what) {
    done_ += units;
    if (!enabled_) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double fraction = static_cast<double>(done_) / static_cast<double>(total_);
    const int width = 24;
    const int filled = static_cast<int>(fraction * width);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    std::string eta = "--";
    if (done_ > 0 && fraction < 1.0) eta = format_seconds(seconds_left(elapsed, fraction));
    std::fprintf(stderr, "\r\x1b[K[%s] %3d%% %ld/%ld runs, ETA %s  %s", bar.c_str(),
                 static_cast<int>(100.0 * fraction), done_, total_, eta.c_str(), what.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

  // Erases the bar (before printing anything else on stderr).
  void clear() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r\x1b[K");
    std::fflush(stderr);
    drawn_ = false;
  }

  // The time still to go when `fraction` (in (0, 1]) of the work took `elapsed` seconds, at the
  // same pace: the whole run's estimate less what has passed.
  static double seconds_left(double elapsed, double fraction) {
    return elapsed / fraction - elapsed;
  }

  static std::string format_seconds(double s) {
    char buf[32];
    if (s < 60) {
      std::snprintf(buf, sizeof buf, "%.0fs", s);
    } else if (s < 3600) {
      std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60,
                    static_cast<int>(s) % 60);
    } else {
      std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600,
                    (static_cast<int>(s) % 3600) / 60);
    }
    return buf;
  }

 private:
  using Clock = std::chrono::steady_clock;
  long total_;
  long done_ = 0;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_ = Clock::now();
};

}  // namespace speclab::cli
