// How `speclab bench` decodes a conversation (tools/speclab/bench_run.h): under --clock cpu every
// time it reports, the loops' own split included, is this process's CPU time, not wall time.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "bench_run.h"
#include "text.h"

namespace {

using namespace speclab;
using speclab::cli::Conversation;
using speclab::cli::Model;

// A target that sleeps through every forward pass, as if it waited on a device: wall time passes,
// this process's CPU time hardly does. It continues any token t with t + 1 (mod its vocabulary).
class SleepingTarget final : public Target {
 public:
  static constexpr int kVocab = 8;
  static constexpr auto kPass = std::chrono::milliseconds(10);
  std::string name() const override { return "sleeping target"; }
  int vocab_size() const override { return kVocab; }
  int max_length() const override { return 1024; }
  std::span<const Token> tokens() const override { return tokens_; }
  Logits extend(std::span<const Token> tokens) override {
    std::this_thread::sleep_for(kPass);
    Logits out(static_cast<int>(tokens.size()), kVocab);
    for (size_t i = 0; i < tokens.size(); ++i) {
      out.row(static_cast<int>(i))[static_cast<size_t>((tokens[i] + 1) % kVocab)] = 1.0f;
    }
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    return out;
  }
  void truncate(int new_len) override { tokens_.resize(static_cast<size_t>(new_len)); }

 private:
  std::vector<Token> tokens_;
};

Model sleeping_model() {
  Model m;
  m.target = std::make_unique<SleepingTarget>();
  m.codec = cli::make_token_id_codec(SleepingTarget::kVocab);
  return m;
}

}  // namespace

TEST_CASE(
    "run_conversation times on the wall clock, or with cpu_clock on this process's CPU time") {
  Model model = sleeping_model();
  const Conversation conv{"c", "", {"1 2 3"}};
  DecodeConfig dc;
  dc.max_new_tokens = 5;  // a prefill and five decode steps: six passes, 60 ms asleep

  SpecStats wall_all, wall_later;
  double wall_seconds = 0.0;
  const auto wall_out = cli::run_conversation(model, conv, nullptr, VerifyRule{}, dc, wall_all,
                                              wall_later, wall_seconds, /*cpu_clock=*/false);
  CHECK(wall_out == std::vector<std::vector<Token>>{{4, 5, 6, 7, 0}});
  CHECK(wall_seconds >= 0.06);
  CHECK(wall_all.verify_seconds >= 0.05);
  CHECK(wall_all.prefill_seconds >= 0.01);

  SpecStats cpu_all, cpu_later;
  double cpu_seconds = 0.0;
  const auto cpu_out = cli::run_conversation(model, conv, nullptr, VerifyRule{}, dc, cpu_all,
                                             cpu_later, cpu_seconds, /*cpu_clock=*/true);
  CHECK(cpu_out == wall_out);
  // Asleep, the process spends next to no CPU time: every figure, the split included, says so.
  CHECK(cpu_seconds < 0.02);
  CHECK(cpu_all.verify_seconds < 0.02);
  CHECK(cpu_all.prefill_seconds < 0.01);
  CHECK(cpu_all.total_seconds == doctest::Approx(cpu_seconds));
  CHECK(cpu_all.emitted == 5);
  CHECK(cpu_later.target_runs == 0);  // one turn: nothing in turns 2+
}
