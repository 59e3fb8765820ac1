#include "trace_record.h"

namespace speclab::cli {

const char* trace_last_kind(const RoundRecord& r) {
  if (r.drafts.empty()) return "plain";
  // The loop cuts the emitted tokens right after a stop token; only an accepted draft can leave
  // the round without a token of the target's own.
  if (r.emitted.size() == static_cast<std::size_t>(r.accepted)) return "stop";
  return r.bonus ? "bonus" : "correction";
}

nlohmann::ordered_json trace_record(std::int64_t index, const RoundRecord& r,
                                    const TextCodec& codec) {
  nlohmann::ordered_json j = {{"round", index},
                              {"position", r.position},
                              {"draft", r.drafts},
                              {"accepted", r.accepted},
                              {"emitted", r.emitted},
                              {"last", trace_last_kind(r)},
                              {"draft_s", r.draft_seconds},
                              {"verify_s", r.verify_seconds}};
  // Tokens can end inside a UTF-8 character; the caller's dump() replaces such bytes.
  if (codec.is_text()) j["text"] = codec.decode(r.emitted);
  return j;
}

}  // namespace speclab::cli
