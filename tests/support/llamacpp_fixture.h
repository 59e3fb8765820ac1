#pragma once
// llama.cpp's logits for SmolLM2 (tests/fixtures/smollm2_llamacpp_logits.json, made by
// tools/oracle/make_logit_fixtures.py), and one way to compare any Target with them. CpuLlama's
// tests (tests/model/) and CudaLlama's (tests/cuda/) use the same fixture, the same noise
// measure and the same thresholds, so "agrees with llama.cpp" means one thing for every backend.
//
// Needs SPECLAB_FIXTURES_DIR defined to the fixtures folder and nlohmann_json linked.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mini_engine/core/logits.h"
#include "mini_engine/core/target.h"

namespace speclab::testing {

// One teacher-forced sequence: llama.cpp's top-20 ids and logits at every position, from one
// pass over the whole sequence (top_*, the reference) and from feeding it one token at a time
// (step_*).
struct FixtureSeq {
  std::string name;
  std::vector<Token> tokens;
  std::vector<std::vector<Token>> top_ids;  // per position, best first
  std::vector<std::vector<float>> top_logits;
  std::vector<std::vector<Token>> step_ids;
  std::vector<std::vector<float>> step_logits;
};
struct Fixture {
  nlohmann::json generator;
  std::vector<FixtureSeq> seqs;
  std::vector<std::vector<Token>> spec_prompts;  // copy-heavy chat prompts, as token ids
};

// Loaded once; REQUIREs that the file exists.
inline const Fixture& llamacpp_fixture() {
  static Fixture f;
  static bool loaded = false;
  if (!loaded) {
    const std::string path = std::string(SPECLAB_FIXTURES_DIR) + "/smollm2_llamacpp_logits.json";
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "missing fixture ", path,
                    " (regenerate it with tools/oracle/make_logit_fixtures.py)");
    const nlohmann::json j = nlohmann::json::parse(in);
    f.generator = j.at("generator");
    for (const auto& s : j.at("sequences")) {
      FixtureSeq fs;
      fs.name = s.at("name").get<std::string>();
      fs.tokens = s.at("tokens").get<std::vector<Token>>();
      fs.top_ids = s.at("top_ids").get<std::vector<std::vector<Token>>>();
      fs.top_logits = s.at("top_logits").get<std::vector<std::vector<float>>>();
      fs.step_ids = s.at("stepwise_top_ids").get<std::vector<std::vector<Token>>>();
      fs.step_logits = s.at("stepwise_top_logits").get<std::vector<std::vector<float>>>();
      f.seqs.push_back(std::move(fs));
    }
    for (const auto& p : j.at("spec_prompts")) {
      f.spec_prompts.push_back(p.at("tokens").get<std::vector<Token>>());
    }
    loaded = true;
  }
  return f;
}

// Mean and max |a - b| over pairs of logits, after removing the mean shift between the two
// (softmax ignores a common shift).
struct LogitDiff {
  double sum = 0, worst = 0;
  long long n = 0;
  double mean() const { return n ? sum / static_cast<double>(n) : 0.0; }
};

// Adds |other(id) - val - shift| for every (id, val) of one position to `acc`; `shift` is the
// mean of other(id) - val over the position. `worst_here`, if given, gets this position's max.
template <typename Get>
void add_shifted_diffs(const std::vector<Token>& ids, const std::vector<float>& vals, Get other,
                       LogitDiff& acc, double* worst_here = nullptr) {
  double shift = 0;
  for (size_t j = 0; j < ids.size(); ++j) shift += other(ids[j]) - vals[j];
  shift /= static_cast<double>(ids.size());
  double w = 0;
  for (size_t j = 0; j < ids.size(); ++j) {
    const double d = std::fabs(other(ids[j]) - vals[j] - shift);
    w = std::max(w, d);
    acc.sum += d;
    ++acc.n;
  }
  acc.worst = std::max(acc.worst, w);
  if (worst_here) *worst_here = w;
}

// llama.cpp against itself: its one-pass logits against its one-token-at-a-time logits on the
// same tokens. Only the batch shape differs, so this is the rounding noise of a faithful
// implementation of the same 8-bit arithmetic.
struct SelfNoise {
  int positions = 0, top1_same = 0;
  LogitDiff diff;
};
inline SelfNoise llamacpp_self_noise() {
  SelfNoise sn;
  for (const FixtureSeq& s : llamacpp_fixture().seqs) {
    for (size_t p = 0; p < s.tokens.size(); ++p) {
      ++sn.positions;
      sn.top1_same += s.top_ids[p][0] == s.step_ids[p][0];
      std::vector<Token> common_ids;
      std::vector<float> common_vals;
      for (size_t j = 0; j < s.top_ids[p].size(); ++j) {
        const auto it = std::find(s.step_ids[p].begin(), s.step_ids[p].end(), s.top_ids[p][j]);
        if (it == s.step_ids[p].end()) continue;
        common_ids.push_back(s.top_ids[p][j]);
        common_vals.push_back(s.top_logits[p][j]);
      }
      const auto& sid = s.step_ids[p];
      const auto& slog = s.step_logits[p];
      add_shifted_diffs(
          common_ids, common_vals,
          [&](Token id) {
            return static_cast<double>(
                slog[static_cast<size_t>(std::find(sid.begin(), sid.end(), id) - sid.begin())]);
          },
          sn.diff);
    }
  }
  return sn;
}

// The fixture holds llama.cpp's top-20 logits at every position of several teacher-forced
// sequences (tools/oracle/make_logit_fixtures.py: llama-cpp-python 0.3.16, the same GGUF),
// twice: from one pass over each whole sequence (top_ids, the reference) and from feeding it
// one token at a time (step_ids).
//
// Why not exact: CpuLlama and llama.cpp both quantize every activation vector to 8 bits (blocks
// of 32) before each Q4_1 / Q8_0 product, and the rounding of one code depends on the last bits
// of the value being rounded. Any difference in float summation order flips a few codes in the
// first layers, and 30 layers spread that into a noise of about 0.1 per logit (logits are
// ~10..30 here). CpuLlama copies llama.cpp's roundings where they are systematic (fp16 block
// scales, the fp16 KV cache and attention operands, RoPE angles, the norm's double sum) but not
// its kernels' summation orders, and that alone saturates the noise: its own packed and simd
// kernels differ from each other as much as either differs from llama.cpp (mean |diff| ~0.10,
// top-1 ~98%). CudaLlama keeps activations in fp16 and fp32, and lands as close (mean 0.10).
// llama.cpp is no more reproducible itself: its one-pass and one-token-at-a-time logits for
// the same tokens differ by a mean 0.09 (max 1.06) and disagree on top-1 at 18 of 684
// positions (97.4%). So top-1 over *every* position cannot reach 99% for any implementation
// that is not bit-identical to one particular llama.cpp batch path; every disagreement we
// have is at a near-tie (in one of llama.cpp's passes its top two are < 0.3 apart). The
// checks, with llama.cpp's own noise measured from the fixture rather than assumed:
//  - top-1 >= 99% at the positions where llama.cpp has one answer: both of its passes pick the
//    same token with a top-two margin of at least its own mean noise (> 500 such positions);
//  - top-1 >= 99% where its one-pass margin is >= kLlamacppMargin, and overall no more than
//    2 points below llama.cpp's agreement with itself;
//  - logits: after removing each position's common shift (softmax ignores it), the mean
//    |diff| over all top-20 logits is within 1.5x llama.cpp's own, and no logit is off by
//    more than kLlamacppLogitTol. A real bug (wrong RoPE pairing, GQA group, norm) moves
//    logits by whole units and collapses top-1 agreement.
constexpr float kLlamacppMargin = 0.5f;
// Measured max 1.1..1.6 for CpuLlama depending on the kernel's summation order (mean 0.10..0.11;
// llama.cpp against itself: max 1.06): near a tie a few flipped codes move one logit more than
// elsewhere.
constexpr double kLlamacppLogitTol = 2.0;

// How a target's logits on the fixture's sequences compare with llama.cpp's.
struct LlamacppAgreement {
  int positions = 0, agree = 0;        // top-1 equal to llama.cpp's one-pass top-1
  int clear = 0, clear_agree = 0;      // where llama.cpp's one-pass margin >= kLlamacppMargin
  int decided = 0, decided_agree = 0;  // where both llama.cpp passes pick the same token with
                                       // margins >= its own mean noise
  LogitDiff diff;                      // over llama.cpp's top-20 logits, shift removed
  std::string top1_misses;             // the first few disagreements, one per line
  std::string logit_misses;            // the first few positions with a logit off > tolerance
};

// Runs every fixture sequence through `target` in one extend each (from an empty sequence) and
// compares. Leaves the target truncated to 0.
inline LlamacppAgreement compare_with_llamacpp(Target& target) {
  const Fixture& f = llamacpp_fixture();
  const double tie = llamacpp_self_noise().diff.mean();  // margins below this are ties
  LlamacppAgreement a;
  for (const FixtureSeq& s : f.seqs) {
    target.truncate(0);
    const Logits l = target.extend(s.tokens);
    for (int p = 0; p < l.rows(); ++p) {
      const Token ours = argmax(l.row(p));
      const bool same = ours == s.top_ids[p][0];
      const float margin = s.top_logits[p][0] - s.top_logits[p][1];
      const float step_margin = s.step_logits[p][0] - s.step_logits[p][1];
      const bool is_clear = margin >= kLlamacppMargin;
      const bool is_decided =
          s.step_ids[p][0] == s.top_ids[p][0] && std::min(margin, step_margin) >= tie;
      ++a.positions;
      a.agree += same;
      a.clear += is_clear;
      a.clear_agree += is_clear && same;
      a.decided += is_decided;
      a.decided_agree += is_decided && same;
      if (!same && a.top1_misses.size() < 1600) {
        char buf[220];
        std::snprintf(buf, sizeof buf,
                      "  %s pos %d: ours %d (%.3f), llama.cpp %d (%.3f, margin %.3f; one token "
                      "at a time: %d, margin %.3f)\n",
                      s.name.c_str(), p, ours, l.row(p)[ours], s.top_ids[p][0], s.top_logits[p][0],
                      margin, s.step_ids[p][0], step_margin);
        a.top1_misses += buf;
      }
      double worst_here = 0;
      add_shifted_diffs(
          s.top_ids[p], s.top_logits[p],
          [&](Token id) { return static_cast<double>(l.row(p)[id]); }, a.diff, &worst_here);
      if (worst_here > kLlamacppLogitTol && a.logit_misses.size() < 800) {
        a.logit_misses += "  " + s.name + " pos " + std::to_string(p) + ": max |diff| " +
                          std::to_string(worst_here) + "\n";
      }
    }
  }
  target.truncate(0);
  return a;
}

// The top-1 checks above, on `a`; the message carries the figures and the first misses.
inline void check_top1_against_llamacpp(const LlamacppAgreement& a) {
  const SelfNoise sn = llamacpp_self_noise();
  MESSAGE("top-1 agreement: ", a.decided_agree, " / ", a.decided,
          " positions where llama.cpp's two passes agree, ", a.clear_agree, " / ", a.clear,
          " with margin >= ", kLlamacppMargin, ", ", a.agree, " / ", a.positions,
          " overall (llama.cpp against itself: ", sn.top1_same, ")\n", a.top1_misses);
  CHECK(a.decided >= 500);
  CHECK(a.decided_agree >= 0.99 * a.decided);
  CHECK(a.clear >= 500);
  CHECK(a.clear_agree >= 0.99 * a.clear);
  CHECK(a.agree >= sn.top1_same - 0.02 * a.positions);
}

// The logit checks above, on `a`.
inline void check_logits_against_llamacpp(const LlamacppAgreement& a) {
  const SelfNoise sn = llamacpp_self_noise();
  MESSAGE("compared ", a.diff.n, " logits (shift removed): max |diff| ", a.diff.worst,
          ", mean |diff| ", a.diff.mean(), " (llama.cpp against itself: max ", sn.diff.worst,
          ", mean ", sn.diff.mean(), ")");
  INFO(a.logit_misses);
  CHECK(a.diff.n >= 500 * 20);
  CHECK(a.diff.worst <= kLlamacppLogitTol);
  CHECK(a.diff.mean() <= 1.5 * sn.diff.mean());
}

}  // namespace speclab::testing
