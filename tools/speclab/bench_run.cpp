#include "bench_run.h"

#include <time.h>

namespace speclab::cli {

double ProcessCpuClock::now() const {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<std::vector<Token>> run_conversation(Model& model, const Conversation& c,
                                                 Drafter* drafter, const VerifyRule& verify,
                                                 DecodeConfig dc, SpecStats& all, SpecStats& later,
                                                 double& seconds, bool cpu_clock,
                                                 std::vector<std::vector<Token>>* prompts) {
  static const ProcessCpuClock cpu;
  if (cpu_clock) dc.clock = &cpu;
  dc.stop_tokens = model.codec->stop_tokens();
  model.target->truncate(0);  // no prefill left over from the previous run
  std::vector<Token> history = model.codec->system_prompt(c.system);
  std::vector<std::vector<Token>> outputs;
  if (prompts != nullptr) prompts->clear();
  for (size_t t = 0; t < c.turns.size(); ++t) {
    const std::vector<Token> user = model.codec->user_turn(c.turns[t]);
    history.insert(history.end(), user.begin(), user.end());
    if (prompts != nullptr) prompts->push_back(history);
    const GenerationResult r = run_decode(*model.target, drafter, verify, history, dc);
    for (SpecStats* s : {&all, t > 0 ? &later : nullptr}) {
      if (s == nullptr) continue;
      s->prompt_tokens += r.stats.prompt_tokens;
      s->target_runs += r.stats.target_runs;
      s->drafted += r.stats.drafted;
      s->accepted += r.stats.accepted;
      s->emitted += r.stats.emitted;
      s->prefill_seconds += r.stats.prefill_seconds;
      s->draft_seconds += r.stats.draft_seconds;
      s->verify_seconds += r.stats.verify_seconds;
      s->total_seconds += r.stats.total_seconds;
      const auto grow = [](std::vector<std::int64_t>& into, const std::vector<std::int64_t>& from) {
        if (into.size() < from.size()) into.resize(from.size(), 0);
        for (size_t i = 0; i < from.size(); ++i) into[i] += from[i];
      };
      grow(s->drafted_at, r.stats.drafted_at);
      grow(s->accepted_at, r.stats.accepted_at);
      grow(s->accept_length_hist, r.stats.accept_length_hist);
    }
    seconds += r.stats.total_seconds;
    history.insert(history.end(), r.tokens.begin(), r.tokens.end());
    const std::vector<Token> close = model.codec->close_reply(r.finish == Finish::stop_token);
    history.insert(history.end(), close.begin(), close.end());
    outputs.push_back(r.tokens);
  }
  return outputs;
}

}  // namespace speclab::cli
