// Lab 07, the model-free half: the end of a turn, the draft-length controller and the
// ChatDrafter wrapper, each against a scripted inner drafter whose every call is recorded.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "real_model.h"

namespace speclab {
namespace {

using Tokens = std::vector<Token>;

// An inner drafter that records what it was given and proposes `script` (at most k of it). Like
// every lab's drafter (Drafter's contract), its begin() and observe() refuse a negative id in what
// they take in with std::invalid_argument, before they record anything.
struct Calls {
  Tokens begun;                      // the prompt begin() received
  std::vector<Tokens> proposed_for;  // the context of each propose()
  std::vector<int> asked_k;          // the k of each propose()
  std::vector<Tokens> observed;      // the context of each observe()
  std::vector<RoundRecord> rounds;   // the round of each observe()
};
class ScriptedDrafter final : public Drafter {
 public:
  ScriptedDrafter(std::shared_ptr<Calls> calls, Tokens script)
      : calls_(std::move(calls)), script_(std::move(script)) {}
  std::string name() const override { return "scripted"; }
  void begin(std::span<const Token> prompt) override {
    refuse_negative(prompt, "begin");
    calls_->begun.assign(prompt.begin(), prompt.end());
  }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    calls_->proposed_for.emplace_back(context.begin(), context.end());
    calls_->asked_k.push_back(k);
    const std::size_t n = std::min(script_.size(), static_cast<std::size_t>(std::max(k, 0)));
    return {script_.begin(), script_.begin() + static_cast<std::ptrdiff_t>(n)};
  }
  void observe(std::span<const Token> context, const RoundRecord& round) override {
    refuse_negative(round.emitted, "observe");
    calls_->observed.emplace_back(context.begin(), context.end());
    calls_->rounds.push_back(round);
  }

 private:
  static void refuse_negative(std::span<const Token> tokens, const std::string& call) {
    for (Token t : tokens) {
      if (t < 0) {
        throw std::invalid_argument("scripted " + call + ": token id " + std::to_string(t) +
                                    " is negative");
      }
    }
  }

  std::shared_ptr<Calls> calls_;
  Tokens script_;
};

ChatDrafterConfig config(bool adaptive, int k_min, int k_max, Tokens stops = {2}) {
  ChatDrafterConfig c;
  c.stop_tokens = std::move(stops);
  c.adaptive_k = adaptive;
  c.k_min = k_min;
  c.k_max = k_max;
  return c;
}

RoundRecord round_with(Tokens drafts, int accepted) {
  // The rounds the cases script accept some of what propose() returned: a proposal shorter than
  // the case expects fails here, with its size, rather than crashing the test.
  REQUIRE_MESSAGE(static_cast<std::size_t>(accepted) <= drafts.size(), "the proposal ", drafts,
                  " is too short for a round that accepts ", accepted, " of it");
  RoundRecord r;
  r.drafts = std::move(drafts);
  r.accepted = accepted;
  r.emitted.assign(r.drafts.begin(), r.drafts.begin() + accepted);
  r.emitted.push_back(99);
  return r;
}

Tokens iota_tokens(int from, int count) {
  Tokens t(static_cast<std::size_t>(count));
  std::iota(t.begin(), t.end(), from);
  return t;
}

// begin(context), then a round that keeps none of the k_max = 5 drafts: an adaptive controller
// (config(true, 1, 5)) shrinks to k = 1. The round's 99 is appended to `context`.
void begin_and_reject_a_round(ChatDrafter& d, Tokens& context) {
  d.begin(context);
  const Tokens first = d.propose(context, 5);
  context.insert(context.end(), {99});
  d.observe(context, round_with(first, 0));
  REQUIRE(d.controller().next_k() == 1);
}

// A two-turn ChatML stream in SmolLM2's ids (1 <|im_start|>, 198 newline, 9 a role name), whose
// turns end with `eot`: the second reply is copying the first answer, 100..120, and has reached
// 114. Copying on would run through `eot` into the next "<|im_start|>user" block. Checks that
// make_my_drafter(o) (o.k is set to 8 here) continues the copy and drafts nothing after `eot`.
Tokens two_turn_prompt(Token eot, const Tokens& answer) {
  Tokens prompt = {1, 9, 198, 50, 51, 52, eot, 198, 1, 9, 198};
  prompt.insert(prompt.end(), answer.begin(), answer.end());
  for (Token t : {eot, 198, 1, 9, 198, 60, 61, 62, 63, eot, 198, 1, 9, 198}) prompt.push_back(t);
  return prompt;
}

// What a failing make_my_drafter case prints when an earlier lab's TODO is what threw (a
// std::string: doctest prints a `const char*` as an address).
const std::string kEarlierLabNote =
    "(a TODO(labNN) thrown here comes from an earlier lab your drafter uses: finish it first)";

void check_copy_stops_at_end_of_turn(Token eot, MyDrafterOptions o) {
  const Tokens answer = iota_tokens(100, 21);
  const Tokens prompt = two_turn_prompt(eot, answer);
  o.k = 8;
  std::unique_ptr<Drafter> d = make_my_drafter(o);
  REQUIRE(d != nullptr);
  const auto* chat = dynamic_cast<const ChatDrafter*>(d.get());
  const std::string config_stops =
      chat ? doctest::toString(chat->config().stop_tokens).c_str() : "(not a ChatDrafter)";
  INFO("make_my_drafter was given stop tokens ", o.stop_tokens, ", its ChatDrafter's config has ",
       config_stops, ": make_my_drafter passes them on, propose cuts at config().stop_tokens");
  INFO(kEarlierLabNote);
  d->begin(prompt);
  Tokens context = prompt;
  context.insert(context.end(), answer.begin(), answer.begin() + 15);
  const Tokens drafts = d->propose(context, 8);
  INFO("drafts: ", drafts, "; end of turn: ", eot);
  REQUIRE_MESSAGE(!drafts.empty(),
                  "a copy drafter should continue a 15-token copy: the answer being copied is in "
                  "the prompt, so an empty draft usually means begin() did not index the prompt "
                  "or propose() did not pass the inner drafter the whole context");
  CHECK(drafts.front() == 115);
  const auto stop = std::find(drafts.begin(), drafts.end(), eot);
  CHECK_MESSAGE(drafts.end() - stop <= 1, "nothing may follow the end-of-turn token in a draft");
}

}  // namespace

// What a failing check below prints next to its values: which ids are the stop tokens.
const std::string kStopsNote =
    "kSmolLM2StopTokens = " + std::string(doctest::toString(kSmolLM2StopTokens).c_str()) +
    " (0 <|endoftext|>, 2 <|im_end|>)";

TEST_SUITE("lab07 / The end of a turn") {
  TEST_CASE("drafts past the end-of-turn token are dropped") {
    INFO(kStopsNote);
    const Tokens drafts = {10, 11, 2, 1, 12};  // ... <|im_end|> <|im_start|> user
    CHECK(stop_at_end_of_turn(drafts, kSmolLM2StopTokens) == Tokens{10, 11, 2});
  }
  TEST_CASE("the end-of-turn token itself is kept so the reply can end in this round") {
    INFO(kStopsNote);
    CHECK(stop_at_end_of_turn(Tokens{2, 7, 8}, kSmolLM2StopTokens) == Tokens{2});
    CHECK(stop_at_end_of_turn(Tokens{5, 6, 2}, kSmolLM2StopTokens) == Tokens{5, 6, 2});
  }
  TEST_CASE("drafts without a stop token come back unchanged") {
    INFO(kStopsNote);
    CHECK(stop_at_end_of_turn(Tokens{5, 6, 7, 8}, kSmolLM2StopTokens) == Tokens{5, 6, 7, 8});
    CHECK(stop_at_end_of_turn(Tokens{}, kSmolLM2StopTokens) == Tokens{});
    CHECK(stop_at_end_of_turn(Tokens{5, 2, 6}, Tokens{}) == Tokens{5, 2, 6});
  }
  TEST_CASE("your drafter stops its copy of an earlier answer at the end-of-turn token") {
    check_copy_stops_at_end_of_turn(2, MyDrafterOptions{});  // 2 is SmolLM2's <|im_end|>
  }
  TEST_CASE("the first of several stop tokens ends the draft") {
    INFO(kStopsNote);
    CHECK(stop_at_end_of_turn(Tokens{5, 0, 6, 2, 7}, kSmolLM2StopTokens) == Tokens{5, 0});
    CHECK(stop_at_end_of_turn(Tokens{5, 6, 40, 2}, Tokens{40, 2}) == Tokens{5, 6, 40});
  }
}

TEST_SUITE("lab07 / The end of a turn") {
  TEST_CASE("your drafter stops at the end-of-turn tokens it is given") {
    // The copy test above for a model whose turns end with id 900, not 2: the CLI passes the
    // tokenizer's stop tokens in MyDrafterOptions::stop_tokens.
    MyDrafterOptions o;
    o.stop_tokens = {900};
    check_copy_stops_at_end_of_turn(900, o);
  }
}

TEST_SUITE("lab07 / How far to draft") {
  TEST_CASE("the controller starts at k_max") {
    DraftLengthController c(1, 6);
    CHECK(c.next_k() == 6);
    c.observe(0, 0);
    CHECK(c.next_k() == 6);
    {
      INFO("it starts at k_max = 6: a fully accepted first round has no room to grow");
      c.observe(6, 6);
      CHECK(c.next_k() == 6);
    }
    INFO(
        "and the first rejection leaves k_max: 6 drafted, 2 accepted gives accepted + 1 = 3 (your "
        "observe() moves k; the constructor only sets the start)");
    c.observe(6, 2);
    CHECK(c.next_k() == 3);
  }
  TEST_CASE("a fully accepted round grows k by one up to k_max") {
    DraftLengthController c(1, 6);
    c.observe(6, 1);
    INFO(
        "6 drafted, 1 accepted is a rejection: k becomes accepted + 1 = 2; then each round that "
        "accepts all it drafted grows k by one");
    REQUIRE(c.next_k() == 2);
    c.observe(2, 2);
    CHECK(c.next_k() == 3);
    c.observe(3, 3);
    CHECK(c.next_k() == 4);
    for (int i = 0; i < 5; ++i) c.observe(c.next_k(), c.next_k());
    CHECK_MESSAGE(c.next_k() == 6, "k_max is 6: full rounds grow k up to it and no further");
    DraftLengthController short_match(1, 8);
    short_match.observe(8, 2);
    REQUIRE(short_match.next_k() == 3);
    INFO("the drafter had only 2 tokens to offer and both were accepted: k still grows, 3 -> 4");
    short_match.observe(2, 2);
    CHECK(short_match.next_k() == 4);
  }
  TEST_CASE("a rejection shrinks k to accepted + 1") {
    DraftLengthController c(1, 8);
    c.observe(8, 3);
    CHECK(c.next_k() == 4);
    c.observe(4, 0);
    CHECK(c.next_k() == 1);
    INFO("a round longer than k_max (its length chosen elsewhere) still leaves k within k_max");
    c.observe(20, 15);
    CHECK(c.next_k() == 8);
  }
  TEST_CASE("k never falls below k_min") {
    DraftLengthController c(3, 8);
    INFO("k_min is 3: a rejection's accepted + 1 is raised to it");
    c.observe(8, 0);
    CHECK(c.next_k() == 3);
    c.observe(3, 1);
    CHECK(c.next_k() == 3);
  }
  TEST_CASE("a round with no drafts leaves k alone") {
    DraftLengthController c(1, 8);
    c.observe(8, 2);
    REQUIRE(c.next_k() == 3);
    c.observe(0, 0);
    CHECK(c.next_k() == 3);
  }
  TEST_CASE("impossible counts are rejected with std::invalid_argument") {
    DraftLengthController c(1, 8);
    CHECK_THROWS_AS(c.observe(2, 3), std::invalid_argument);
    CHECK_THROWS_AS(c.observe(-1, 0), std::invalid_argument);
    CHECK_THROWS_AS(c.observe(2, -1), std::invalid_argument);
    INFO("a round with no drafts is checked too: 0 drafted cannot have 1 (or -1) accepted");
    CHECK_THROWS_AS(c.observe(0, 1), std::invalid_argument);
    CHECK_THROWS_AS(c.observe(0, -1), std::invalid_argument);
    CHECK(c.next_k() == 8);
  }
}

TEST_SUITE("lab07 / How far to draft") {
  TEST_CASE("your drafter drafts as far as the k it is given") {
    // The copy of check_copy_stops_at_end_of_turn with a longer answer (100..139) and o.k = 12,
    // more than ChatDrafterConfig's default k_max of 8: the 15 tokens copied so far are an
    // unambiguous match, and the next 12 tokens of the answer are what a copy drafter proposes.
    const Tokens answer = iota_tokens(100, 40);
    const Tokens prompt = two_turn_prompt(2, answer);
    MyDrafterOptions o;
    o.k = 12;
    std::unique_ptr<Drafter> d = make_my_drafter(o);
    REQUIRE(d != nullptr);
    INFO(kEarlierLabNote);
    d->begin(prompt);
    Tokens context = prompt;
    context.insert(context.end(), answer.begin(), answer.begin() + 15);
    const Tokens drafts = d->propose(context, 12);
    INFO("drafts: ", drafts);
    const auto* chat = dynamic_cast<const ChatDrafter*>(d.get());
    const std::string k_max =
        chat ? std::to_string(chat->config().k_max) : std::string("(not a ChatDrafter)");
    INFO("make_my_drafter was given k = 12, its ChatDrafter's config has k_max = ", k_max,
         ": a k_max below options.k caps every draft below the loop's k (set k_max = options.k)");
    CHECK(drafts == iota_tokens(115, 12));
  }
}

TEST_SUITE("lab07 / Index the whole prompt") {
  TEST_CASE("begin hands the whole prompt to the inner drafter") {
    auto calls = std::make_shared<Calls>();
    ChatDrafter d(std::make_unique<ScriptedDrafter>(calls, Tokens{}), config(true, 1, 5));
    const Tokens prompt = {1, 9, 20, 21, 22, 2, 1, 30, 31};  // template ids included
    d.begin(prompt);
    INFO(
        "begin(prompt) calls the inner drafter's begin with the same, whole prompt, the "
        "template's control tokens included: that is where a reply copies from");
    CHECK(calls->begun == prompt);
  }
  TEST_CASE("propose asks the inner drafter about the whole context") {
    auto calls = std::make_shared<Calls>();
    ChatDrafter d(std::make_unique<ScriptedDrafter>(calls, Tokens{40, 41}), config(false, 1, 5));
    // A long conversation (3000 tokens): a window of the last few hundred tokens is not the
    // whole context.
    Tokens prompt = {1, 9};
    const Tokens body = iota_tokens(200, 2996);
    prompt.insert(prompt.end(), body.begin(), body.end());
    prompt.insert(prompt.end(), {2, 1});
    d.begin(prompt);
    Tokens context = prompt;
    context.push_back(50);
    CHECK(d.propose(context, 4) == Tokens{40, 41});
    REQUIRE(calls->proposed_for.size() == 1);
    INFO("the inner drafter got ", calls->proposed_for[0].size(), " tokens of the ", context.size(),
         "-token context: pass it all, not a window");
    CHECK(calls->proposed_for[0] == context);
  }
  TEST_CASE("observe passes every round to the inner drafter") {
    for (const bool adaptive : {true, false}) {
      INFO("adaptive_k = ", adaptive, ": the inner drafter learns from every round either way");
      auto calls = std::make_shared<Calls>();
      ChatDrafter d(std::make_unique<ScriptedDrafter>(calls, Tokens{40, 41}),
                    config(adaptive, 1, 5));
      const Tokens prompt = {1, 9, 20, 21};
      d.begin(prompt);
      Tokens context = prompt;
      (void)d.propose(context, 5);
      context.insert(context.end(), {40, 99});
      const RoundRecord round = round_with({40, 41}, 1);
      d.observe(context, round);
      REQUIRE(calls->observed.size() == 1);
      CHECK(calls->observed[0] == context);
      INFO("the round itself, as the loop gave it: lab 02's drafter learns from its tokens");
      CHECK(calls->rounds[0].drafts == round.drafts);
      CHECK(calls->rounds[0].accepted == round.accepted);
      CHECK(calls->rounds[0].emitted == round.emitted);
    }
  }
}

TEST_SUITE("lab07 / The end of a turn") {
  TEST_CASE("proposals are cut right after the end-of-turn token") {
    auto calls = std::make_shared<Calls>();
    ChatDrafter d(std::make_unique<ScriptedDrafter>(calls, Tokens{40, 41, 2, 1, 42}),
                  config(false, 1, 8));
    d.begin(Tokens{1, 9});
    CHECK(d.propose(Tokens{1, 9}, 5) == Tokens{40, 41, 2});
    INFO("the config's stop tokens, not SmolLM2's: another model ends its turns with other ids");
    ChatDrafter other(std::make_unique<ScriptedDrafter>(calls, Tokens{40, 41, 2, 1, 42}),
                      config(false, 1, 8, Tokens{41}));
    other.begin(Tokens{1, 9});
    CHECK(other.propose(Tokens{1, 9}, 5) == Tokens{40, 41});
  }
}

TEST_SUITE("lab07 / How far to draft") {
  TEST_CASE("never more drafts than the loop asked for") {
    auto calls = std::make_shared<Calls>();
    ChatDrafter d(std::make_unique<ScriptedDrafter>(calls, iota_tokens(40, 10)),
                  config(true, 1, 8));
    d.begin(Tokens{1, 9});
    INFO(
        "the loop asks for k = 3 and the controller's next_k() is 8: ask the inner drafter for "
        "min(k, next_k()), the loop's k is a hard cap");
    CHECK(d.propose(Tokens{1, 9}, 3).size() == 3u);
    REQUIRE(calls->asked_k.size() == 1);
    CHECK(calls->asked_k[0] == 3);
    INFO(
        "k_min is the controller's floor, not the loop's: with k_min = 3 and the loop asking for "
        "2, the inner drafter is asked for 2");
    auto calls3 = std::make_shared<Calls>();
    ChatDrafter floor3(std::make_unique<ScriptedDrafter>(calls3, iota_tokens(40, 10)),
                       config(true, 3, 8));
    floor3.begin(Tokens{1, 9});
    CHECK(floor3.propose(Tokens{1, 9}, 2).size() == 2u);
    CHECK(calls3->asked_k == std::vector<int>{2});
  }
  TEST_CASE("with adaptive k a rejected round shortens the next proposal") {
    auto calls = std::make_shared<Calls>();
    ChatDrafter d(std::make_unique<ScriptedDrafter>(calls, iota_tokens(40, 10)),
                  config(true, 1, 6));
    Tokens context = {1, 9};
    d.begin(context);
    const Tokens first = d.propose(context, 6);
    REQUIRE(first.size() == 6u);
    context.insert(context.end(), {40, 99});
    d.observe(context, round_with(first, 1));  // one of six accepted
    CHECK(d.controller().next_k() == 2);
    CHECK(d.propose(context, 6).size() == 2u);
    INFO(
        "the k each propose() passed to the inner drafter: ask it for min(k, next_k), not for k "
        "with the proposal cut afterwards (a drafter may do less work for a smaller k)");
    CHECK(calls->asked_k == std::vector<int>{6, 2});
  }
  TEST_CASE("the controller counts the drafts proposed, not the k asked for") {
    auto calls = std::make_shared<Calls>();
    ChatDrafter d(std::make_unique<ScriptedDrafter>(calls, Tokens{40, 41}), config(true, 1, 6));
    Tokens context = {1, 9};
    d.begin(context);
    const Tokens first = d.propose(context, 6);
    REQUIRE(first.size() == 2u);
    context.insert(context.end(), {40, 41, 99});
    d.observe(context, round_with(first, 2));
    CHECK_MESSAGE(d.controller().next_k() == 6,
                  "asked for 6 (k_max), the inner drafter proposed 2 and both were accepted: a "
                  "full round, so k grows, but never past k_max = 6");
    const int before = d.controller().next_k();
    context.push_back(99);
    d.observe(context, round_with({}, 0));
    CHECK_MESSAGE(d.controller().next_k() == before,
                  "a round with no drafts (nothing to say) leaves k alone");
  }

  TEST_CASE("without adaptive k the loop's k is used as is") {
    auto calls = std::make_shared<Calls>();
    ChatDrafter d(std::make_unique<ScriptedDrafter>(calls, iota_tokens(40, 10)),
                  config(false, 1, 6));
    Tokens context = {1, 9};
    d.begin(context);
    const Tokens first = d.propose(context, 6);
    context.insert(context.end(), {99});
    d.observe(context, round_with(first, 0));
    CHECK(d.propose(context, 6).size() == 6u);
    CHECK_MESSAGE(d.controller().next_k() == 6,
                  "without adaptive_k, observe feeds the inner drafter only: the controller stays "
                  "at k_max");
    INFO("k_max bounds the controller only: without adaptive_k a loop k of 8 > k_max asks for 8");
    CHECK(d.propose(context, 8).size() == 8u);
    REQUIRE_MESSAGE(!calls->asked_k.empty(), "propose() never asked the inner drafter");
    CHECK(calls->asked_k.back() == 8);
  }
  TEST_CASE("each reply starts again from k_max") {
    auto calls = std::make_shared<Calls>();
    ChatDrafter d(std::make_unique<ScriptedDrafter>(calls, iota_tokens(40, 10)),
                  config(true, 1, 5));
    Tokens context = {1, 9};
    begin_and_reject_a_round(d, context);
    context.insert(context.end(), {2, 1, 9});  // the next turn
    d.begin(context);
    INFO("begin() starts a new reply: it resets the controller to k_max = 5");
    CHECK(d.controller().next_k() == 5);
    CHECK(d.propose(context, 5).size() == 5u);
  }
  TEST_CASE("a begin or observe the inner drafter refuses leaves the controller as it was") {
    auto calls = std::make_shared<Calls>();
    ChatDrafter d(std::make_unique<ScriptedDrafter>(calls, iota_tokens(40, 10)),
                  config(true, 1, 5));
    Tokens context = {1, 9};
    begin_and_reject_a_round(d, context);
    INFO(
        "the Drafter contract: a call the inner drafter refuses (a negative id: "
        "std::invalid_argument) leaves the ChatDrafter as it was, and the reply it was running "
        "goes on. Call the inner drafter first, and move the controller only once it accepted");
    Tokens refused_prompt = context;
    refused_prompt.insert(refused_prompt.end(), {2, 1, -1});
    CHECK_THROWS_AS(d.begin(refused_prompt), std::invalid_argument);
    CHECK_MESSAGE(d.controller().next_k() == 1,
                  "a refused begin() must not reset the controller to k_max = 5");
    const Tokens second = d.propose(context, 5);
    REQUIRE(second.size() == 1u);
    RoundRecord refused_round = round_with(second, 1);  // a full round: k would grow to 2
    refused_round.emitted.back() = -1;
    Tokens refused_context = context;
    refused_context.insert(refused_context.end(), refused_round.emitted.begin(),
                           refused_round.emitted.end());
    CHECK_THROWS_AS(d.observe(refused_context, refused_round), std::invalid_argument);
    CHECK_MESSAGE(d.controller().next_k() == 1,
                  "a refused observe() must not count its round in the controller");
  }
}

}  // namespace speclab
