#include "mini_engine/spec/cost_curve.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "mini_engine/spec/loop.h"  // kMaxDrafts

namespace speclab {
namespace {

void check_axes(const std::vector<int>& batch_sizes, int max_k, const std::string& source) {
  if (batch_sizes.empty()) {
    throw std::invalid_argument(source + ": a cost curve needs at least one batch size");
  }
  for (size_t i = 0; i < batch_sizes.size(); ++i) {
    if (batch_sizes[i] < 1) {
      throw std::invalid_argument(source + ": batch size " + std::to_string(batch_sizes[i]) +
                                  " must be >= 1");
    }
    if (i > 0 && batch_sizes[i] <= batch_sizes[i - 1]) {
      throw std::invalid_argument(source + ": batch sizes must be strictly increasing");
    }
  }
  // k is a round's draft count, which the decoding loops keep in [1, kMaxDrafts].
  if (max_k < 0 || max_k > kMaxDrafts) {
    throw std::invalid_argument(source + ": max_k must be in [0, " + std::to_string(kMaxDrafts) +
                                "], got " + std::to_string(max_k));
  }
}

bool good_seconds(double s) { return std::isfinite(s) && s > 0.0; }

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split_commas(std::string_view line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    out.push_back(
        trim(line.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

CostCurve CostCurve::from_function(std::vector<int> batch_sizes, int max_k,
                                   const std::function<double(int b, int k)>& seconds,
                                   std::string source) {
  check_axes(batch_sizes, max_k, source);
  if (!seconds) throw std::invalid_argument(source + ": no cost function given");
  CostCurve c;
  c.batch_sizes_ = std::move(batch_sizes);
  c.max_k_ = max_k;
  c.source_ = std::move(source);
  for (int b : c.batch_sizes_) {
    for (int k = 0; k <= max_k; ++k) {
      const double s = seconds(b, k);
      if (!good_seconds(s)) {
        throw std::invalid_argument(c.source_ + ": T(b=" + std::to_string(b) +
                                    ", k=" + std::to_string(k) + ") = " + std::to_string(s) +
                                    " must be finite and > 0");
      }
      c.table_.push_back(s);
    }
  }
  return c;
}

CostCurve CostCurve::parse_csv(std::string_view text, const std::string& source) {
  std::map<std::pair<int, int>, double> points;
  std::map<std::pair<int, int>, int> line_of;
  bool header = false;
  int line_no = 0;
  size_t pos = 0;
  auto fail = [&](const std::string& what) {
    throw std::runtime_error(source + ":" + std::to_string(line_no) + ": " + what);
  };
  while (pos <= text.size()) {
    const size_t nl = text.find('\n', pos);
    const std::string line =
        trim(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = split_commas(line);
    if (!header) {
      if (f != std::vector<std::string>{"b", "k", "seconds"}) {
        fail("expected the header 'b,k,seconds', got '" + line + "'");
      }
      header = true;
      continue;
    }
    if (f.size() != 3) fail("expected 3 fields (b,k,seconds), got " + std::to_string(f.size()));
    int b = 0, k = 0;
    auto parse_int = [&](const std::string& s, int& v, const char* name) {
      const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
        fail(std::string(name) + " '" + s + "' is not an integer");
      }
    };
    parse_int(f[0], b, "b");
    parse_int(f[1], k, "k");
    if (b < 1) fail("b must be >= 1, got " + std::to_string(b));
    if (k < 0) fail("k must be >= 0, got " + std::to_string(k));
    if (k > kMaxDrafts) {
      fail("k must be at most " + std::to_string(kMaxDrafts) + ", got " + std::to_string(k));
    }
    double s = 0.0;
    try {
      size_t used = 0;
      s = std::stod(f[2], &used);
      if (used != f[2].size()) throw std::invalid_argument("trailing characters");
    } catch (const std::exception&) {
      fail("seconds '" + f[2] + "' is not a number");
    }
    if (!good_seconds(s)) fail("seconds must be finite and > 0, got '" + f[2] + "'");
    if (points.count({b, k})) {
      fail("a second row for b=" + std::to_string(b) + ", k=" + std::to_string(k) +
           " (the first is on line " + std::to_string(line_of[{b, k}]) + ")");
    }
    points[{b, k}] = s;
    line_of[{b, k}] = line_no;
  }
  if (!header) throw std::runtime_error(source + ": no 'b,k,seconds' header: not a cost curve");
  if (points.empty()) throw std::runtime_error(source + ": the cost curve has no rows");

  CostCurve c;
  c.source_ = source;
  for (const auto& [bk, s] : points) {
    if (c.batch_sizes_.empty() || c.batch_sizes_.back() != bk.first) {
      c.batch_sizes_.push_back(bk.first);
    }
    c.max_k_ = std::max(c.max_k_, bk.second);
  }
  for (int b : c.batch_sizes_) {
    for (int k = 0; k <= c.max_k_; ++k) {
      const auto it = points.find({b, k});
      if (it == points.end()) {
        throw std::runtime_error(
            source + ": no row for b=" + std::to_string(b) + ", k=" + std::to_string(k) +
            " (every listed b needs every k in 0.." + std::to_string(c.max_k_) + ")");
      }
      c.table_.push_back(it->second);
    }
  }
  return c;
}

CostCurve CostCurve::load_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open cost curve '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_csv(ss.str(), path);
}

std::string CostCurve::to_csv(const std::string& comment) const {
  std::ostringstream out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
  out << "b,k,seconds\n";
  char buf[64];
  for (size_t bi = 0; bi < batch_sizes_.size(); ++bi) {
    for (int k = 0; k <= max_k_; ++k) {
      std::snprintf(buf, sizeof buf, "%d,%d,%.6g\n", batch_sizes_[bi], k, at(bi, k));
      out << buf;
    }
  }
  return out.str();
}

double CostCurve::seconds(int batch, int k) const {
  if (k < 0 || k > max_k_) {
    throw std::out_of_range("cost curve " + source_ + ": k=" + std::to_string(k) +
                            " is outside its range 0.." + std::to_string(max_k_));
  }
  if (batch < batch_sizes_.front() || batch > batch_sizes_.back()) {
    throw std::out_of_range("cost curve " + source_ + ": batch size " + std::to_string(batch) +
                            " is outside its range " + std::to_string(batch_sizes_.front()) + ".." +
                            std::to_string(batch_sizes_.back()));
  }
  const auto hi = std::lower_bound(batch_sizes_.begin(), batch_sizes_.end(), batch);
  const auto i1 = static_cast<size_t>(hi - batch_sizes_.begin());
  if (*hi == batch) return at(i1, k);
  const size_t i0 = i1 - 1;
  const double w = static_cast<double>(batch - batch_sizes_[i0]) /
                   static_cast<double>(batch_sizes_[i1] - batch_sizes_[i0]);
  return (1.0 - w) * at(i0, k) + w * at(i1, k);
}

CostCurve measure_cost_curve(BatchTarget& target, const Clock& clock, std::vector<int> batch_sizes,
                             int max_k, const MeasureOptions& options) {
  check_axes(batch_sizes, max_k, "measure_cost_curve");
  if (options.context < 1 || options.reps < 1 || options.warmup < 0) {
    throw std::invalid_argument("measure_cost_curve: need context >= 1, reps >= 1, warmup >= 0");
  }
  if (static_cast<long long>(options.context) + max_k + 1 > target.max_length()) {
    throw ContextOverflow("measure_cost_curve: context " + std::to_string(options.context) + " + " +
                          std::to_string(max_k + 1) + " tokens exceeds " + target.name() +
                          "'s max_length " + std::to_string(target.max_length()));
  }
  const int vocab = target.vocab_size();
  // Deterministic ids spread over the vocabulary; the speed of a pass does not depend on them.
  // In 64 bits: i * 104729 alone passes INT_MAX from i = 20506 on.
  auto token = [vocab](int seq, int i) {
    return static_cast<Token>(
        (static_cast<std::int64_t>(seq) * 7919 + static_cast<std::int64_t>(i) * 104729 + 17) %
        vocab);
  };
  std::map<std::pair<int, int>, double> measured;
  for (int b : batch_sizes) {
    std::vector<int> ids;
    std::vector<std::vector<Token>> feeds(static_cast<size_t>(b));
    try {
      std::vector<std::vector<Token>> prompts(static_cast<size_t>(b));
      std::vector<BatchItem> items;
      for (int s = 0; s < b; ++s) {
        ids.push_back(target.add_sequence());
        for (int i = 0; i < options.context; ++i) prompts[s].push_back(token(s, i));
        items.push_back({ids.back(), prompts[s]});
      }
      target.extend_batch(items);
      for (int k = 0; k <= max_k; ++k) {
        items.clear();
        for (int s = 0; s < b; ++s) {
          feeds[s].clear();
          for (int i = 0; i <= k; ++i) feeds[s].push_back(token(s, options.context + i));
          items.push_back({ids[s], feeds[s]});
        }
        std::vector<double> times;
        for (int r = 0; r < options.warmup + options.reps; ++r) {
          const double t0 = clock.now();
          target.extend_batch(items);
          const double dt = clock.now() - t0;
          if (r >= options.warmup) times.push_back(dt);
          for (int id : ids) target.truncate(id, options.context);
        }
        const double m = median(times);
        measured[{b, k}] = m;
        if (options.on_point) options.on_point(b, k, m);
      }
    } catch (...) {
      for (int id : ids) target.remove_sequence(id);
      throw;
    }
    for (int id : ids) target.remove_sequence(id);
  }
  return CostCurve::from_function(
      std::move(batch_sizes), max_k,
      [&](int b, int k) {
        return measured.at({b, k});
      },
      "measured " + target.name());
}

}  // namespace speclab
