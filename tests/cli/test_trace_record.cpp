// speclab trace's record of one verify round (tools/speclab/trace_record.h): the shape of every
// kind of round, including the one a stop token cuts short.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "text.h"
#include "trace_record.h"

using speclab::RoundRecord;
using speclab::Token;
using speclab::cli::trace_last_kind;
using speclab::cli::trace_record;

namespace {

RoundRecord round_of(std::vector<Token> drafts, int accepted, std::vector<Token> emitted,
                     bool bonus) {
  RoundRecord r;
  r.position = 10;
  r.drafts = std::move(drafts);
  r.accepted = accepted;
  r.emitted = std::move(emitted);
  r.bonus = bonus;
  return r;
}

}  // namespace

TEST_SUITE("cli / trace records") {
  TEST_CASE("each kind of round gets its last field") {
    CHECK(std::string(trace_last_kind(round_of({}, 0, {7}, false))) == "plain");
    CHECK(std::string(trace_last_kind(round_of({4, 5}, 2, {4, 5, 6}, true))) == "bonus");
    CHECK(std::string(trace_last_kind(round_of({4, 5}, 1, {4, 9}, false))) == "correction");
    // The stop token 2 was the second accepted draft: the loop cut the round after it.
    CHECK(std::string(trace_last_kind(round_of({4, 2, 8}, 2, {4, 2}, false))) == "stop");
    // A stop token that is the target's own token keeps the usual kind.
    CHECK(std::string(trace_last_kind(round_of({4, 5}, 1, {4, 2}, false))) == "correction");
  }

  TEST_CASE("a record holds the documented fields in order") {
    const auto codec = speclab::cli::make_token_id_codec(32);
    const nlohmann::ordered_json j = trace_record(3, round_of({4, 2, 8}, 2, {4, 2}, false), *codec);
    std::vector<std::string> keys;
    for (const auto& [key, value] : j.items()) keys.push_back(key);
    CHECK(keys == std::vector<std::string>{"round", "position", "draft", "accepted", "emitted",
                                           "last", "draft_s", "verify_s"});
    CHECK(j.at("round").get<int>() == 3);
    CHECK(j.at("emitted").get<std::vector<Token>>() == std::vector<Token>{4, 2});
    CHECK(j.at("last").get<std::string>() == "stop");
  }
}
