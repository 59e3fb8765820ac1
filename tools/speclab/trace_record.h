#pragma once
// The JSON object `speclab trace` writes for one verify round (one line of its JSON Lines
// output). The book's plots (tools/book_site/plots.py) read these fields; keep them in step.
//
//   round      0-based index of the verify round
//   position   index in the sequence of the first token this round emitted
//   draft      the drafter's proposal (possibly empty)
//   accepted   how many leading drafts the verify rule kept (and were emitted)
//   emitted    draft[0..accepted) followed by the target's own token, except when last is "stop"
//   last       what ended the round's emitted tokens:
//                "bonus"      every draft was kept, then the target's free extra token
//                "correction" a draft was rejected and the target's token replaces it
//                "plain"      no draft was proposed: an ordinary decode step
//                "stop"       an accepted draft was a stop token (end of turn): emitted ends
//                             with it, as draft[0..accepted), with no target token; the run
//                             ends here. (A stop token that is the target's own token keeps the
//                             round's usual kind; the run ends after it too.)
//   draft_s    seconds spent in the drafter this round (propose and observe; the first round
//              also its begin): they add up to the stats line's draft time
//   verify_s   seconds spent in the verify pass this round
//   text       (real models only) the emitted tokens as text, decoded on their own: a character
//              whose bytes are split between two rounds shows as U+FFFD in both, so the texts
//              joined can differ from the run's text (decode the joined `emitted` ids for that)
#include <cstdint>
#include <nlohmann/json.hpp>

#include "mini_engine/spec/round.h"
#include "text.h"

namespace speclab::cli {

// The `last` field of a round (see above).
const char* trace_last_kind(const RoundRecord& r);

// The record of round number `index`. `codec` decodes `text` when it is a text codec.
nlohmann::ordered_json trace_record(std::int64_t index, const RoundRecord& r,
                                    const TextCodec& codec);

}  // namespace speclab::cli
