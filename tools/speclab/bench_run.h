#pragma once
// How `speclab bench` decodes one conversation (bench.cpp runs it for every case and repeat), and
// the clock behind `--clock cpu`.
#include <vector>

#include "factory.h"
#include "mini_engine/core/clock.h"
#include "mini_engine/spec/stats.h"
#include "workloads.h"

namespace speclab::cli {

// This process's CPU time, every thread's, in seconds: steadier than the wall clock on a machine
// shared with other jobs, but it also counts OpenMP workers spinning at a barrier.
class ProcessCpuClock final : public Clock {
 public:
  double now() const override;
};

// Decodes conversation `c` turn by turn on `model`, from an empty sequence: for each user turn,
// the chat template's tokens are appended to the history and the reply is decoded with
// `drafter` (nullptr: plain decoding) and `verify`, then closed. Returns the replies, one per
// turn. Adds the stats of every turn to `all` (and of turns 2.. to `later`) and their time to
// `seconds`. With `cpu_clock` the decoding loops time themselves with ProcessCpuClock, so the
// time and the whole split in the stats (prefill, draft, verify) are CPU seconds; otherwise wall
// seconds. `dc.stop_tokens` is replaced by the codec's. When `prompts` is not null it receives
// each turn's prompt: the whole conversation the reply was decoded after. Throws what run_decode
// throws.
std::vector<std::vector<Token>> run_conversation(
    Model& model, const Conversation& c, Drafter* drafter, const VerifyRule& verify,
    DecodeConfig dc, SpecStats& all, SpecStats& later, double& seconds, bool cpu_clock,
    std::vector<std::vector<Token>>* prompts = nullptr);

}  // namespace speclab::cli
