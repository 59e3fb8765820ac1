// Lab 04 -- public and private pools, and the pool drafter in the engine.
// Chapter: book/lab04_ngram_pool.md
#include <doctest/doctest.h>

#include <cctype>
#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/toy_target.h"
#include "ngram_pool.h"
#include "pool_test_util.h"
#include "prompt_lookup.h"

using namespace speclab;
using namespace speclab::lab04_testing;

namespace {

NGramPoolConfig pool_config(bool is_public) {
  NGramPoolConfig c;  // the defaults: k = 3, v = 5, keep all, oldest first
  c.is_public_pool = is_public;
  return c;
}

// Whether `word` occurs in `text` as a whole word, not inside a longer name or number: "k" in
// "k must be >= 0", "k=-1" or "(k)" but not in "token" or "max_tokens"; "-1" in "got -1" but not
// in "-10".
bool names_word(const std::string& text, const std::string& word) {
  const auto in_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  };
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const std::size_t end = at + word.size();
    if ((at == 0 || !in_name(text[at - 1])) && (end == text.size() || !in_name(text[end]))) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_SUITE("lab04 / Public and private pools") {
  TEST_CASE("a private pool starts empty: one request's pairs never reach another request") {
    NGramPoolManager manager(pool_config(false));
    const RequestId a = manager.add_request(V{1, 2, 3, 4, 5});
    CHECK(manager.propose(a, V{1, 2, 3, 4, 5, 1, 2}, 3) == V{3, 4, 5});
    const RequestId b = manager.add_request(V{9, 8, 1, 2});
    INFO("request b never saw '1 2 3 4 5': a private pool must not propose it");
    CHECK(manager.propose(b, V{9, 8, 1, 2}, 3) == V{});
    CHECK(&manager.pool(a) != &manager.pool(b));
    CHECK(manager.pool(b).values(V{1, 2}) == Values{});
  }

  TEST_CASE("a public pool shares what one request learned with the next") {
    NGramPoolManager manager(pool_config(true));
    const RequestId a = manager.add_request(V{1, 2, 3, 4, 5});
    const RequestId b = manager.add_request(V{9, 8, 1, 2});
    CHECK(&manager.pool(a) == &manager.pool(b));
    CHECK(manager.propose(b, V{9, 8, 1, 2}, 3) == V{3, 4, 5});
  }

  TEST_CASE("ending a request drops its private pool and keeps the public pool") {
    NGramPoolManager priv(pool_config(false));
    const RequestId a = priv.add_request(V{1, 2, 3});
    priv.remove_request(a);
    CHECK(priv.num_requests() == 0);
    CHECK_THROWS_AS(priv.pool(a), std::invalid_argument);
    priv.remove_request(a);  // unknown ids are ignored

    NGramPoolManager pub(pool_config(true));
    const RequestId b = pub.add_request(V{1, 2, 3});
    pub.remove_request(b);
    const RequestId c = pub.add_request(V{7, 1});
    CHECK(c != b);
    CHECK(pub.propose(c, V{7, 1}, 2) == V{2, 3});
    INFO("with one public pool for all, an id that is not a live request is still unknown");
    CHECK_THROWS_AS(pub.pool(b), std::invalid_argument);
    CHECK_THROWS_AS(pub.pool(c + 100), std::invalid_argument);
    CHECK_THROWS_AS(pub.update(b, V{1, 2, 3, 4}), std::invalid_argument);
  }

  TEST_CASE("update feeds only the tokens a request has not seen yet") {
    NGramPoolManager manager(pool_config(false));
    const RequestId a = manager.add_request(V{1, 2, 3});
    const auto after_scan = manager.pool(a).stats().pair_updates;
    manager.update(a, V{1, 2, 3});
    CHECK(manager.pool(a).stats().pair_updates == after_scan);
    manager.update(a, V{1, 2, 3, 4});
    INFO("if NGramPool::update's own cases ('The per-token update') fail too, fix those first");
    CHECK(manager.pool(a).values(V{3}) == Values{{4}});
    INFO("token 4 is seen now: the same context again feeds nothing, one more token one update");
    const auto after_4 = manager.pool(a).stats().pair_updates;
    manager.update(a, V{1, 2, 3, 4});
    CHECK(manager.pool(a).stats().pair_updates == after_4);
    NGramPool alone(pool_config(false));  // what one NGramPool::update of token 5 costs
    alone.update(V{1, 2, 3, 4, 5});
    manager.update(a, V{1, 2, 3, 4, 5});
    CHECK(manager.pool(a).stats().pair_updates == after_4 + alone.stats().pair_updates);
    CHECK_THROWS_AS(manager.update(a, V{1, 2}), std::invalid_argument);
    CHECK_THROWS_AS(manager.update(a + 100, V{1, 2}), std::invalid_argument);
  }

  TEST_CASE("an update with several new tokens feeds each of them") {
    // A verify round adds several tokens at once. Each one is an NGramPool::update of its own:
    // the pool then holds what a scan of the whole text holds. One update of the whole context
    // misses the pairs whose value was already v tokens long when a later new token came.
    for (int v : {1, 2, 5}) {
      const V text = random_stream(static_cast<std::uint64_t>(v), 60, 4);
      NGramPoolManager manager(config(3, v));
      const RequestId a = manager.add_request(std::span<const Token>(text).first(10));
      manager.update(a, std::span<const Token>(text).first(17));  // 7 new tokens at once
      manager.update(a, text);                                    // then 43 more
      NGramPool scanned(config(3, v));
      scanned.scan(text);
      INFO("v = ", v);
      // The first difference, not the two pools (printed whole, they fill screens), and only
      // for the first v that differs.
      REQUIRE(first_difference(contents(manager.pool(a)), contents(scanned)) == "none");
    }
  }

  TEST_CASE("propose feeds the new tokens to the pool before it looks up") {
    // The prompt 5 alone holds no pair. propose with the context 5 7 5 must first feed 7 and 5:
    // then the key '5' holds the value 7 5, and that is what comes back.
    NGramPoolManager manager(pool_config(false));
    const RequestId a = manager.add_request(V{5});
    CHECK(manager.pool(a).num_keys() == 0);
    CHECK(manager.propose(a, V{5, 7, 5}, 4) == V{7, 5});
    CHECK(manager.pool(a).values(V{5}) == Values{{7, 5}});
    INFO("a budget of 0 drafts proposes nothing, but the new tokens are still fed");
    const RequestId b = manager.add_request(V{5});
    CHECK(manager.propose(b, V{5, 7, 5}, 0) == V{});
    CHECK(manager.pool(b).values(V{5}) == Values{{7, 5}});
  }

  TEST_CASE("propose refuses a negative budget before it feeds anything") {
    NGramPoolManager manager(pool_config(false));
    const RequestId a = manager.add_request(V{5});
    INFO(
        "propose(a, {5, 7, 5}, k = -1): a bad argument changes nothing, so the pool must not "
        "have learned 7 and 5, and the error must name propose's k and its value");
    bool threw_invalid_argument = false;
    std::string message;
    try {
      manager.propose(a, V{5, 7, 5}, -1);
    } catch (const std::invalid_argument& e) {
      threw_invalid_argument = true;
      message = e.what();
    }
    CHECK(threw_invalid_argument);
    if (threw_invalid_argument) {
      CAPTURE(message);
      CHECK(names_word(message, "k"));  // the word k, not the letter: "token" does not name it
      CHECK(names_word(message, "-1"));
    }
    CHECK(manager.pool(a).num_keys() == 0);
    CHECK(manager.pool(a).stats().pair_updates == 0);
    INFO("the context is still unseen: the next propose feeds it");
    CHECK(manager.propose(a, V{5, 7, 5}, 4) == V{7, 5});
  }

  TEST_CASE("a negative token id changes neither the pool nor what the request has seen") {
    // Two managers get the same calls; `rejected` also gets the ones that must throw. With a
    // public pool, request b's refused tokens must not reach the pool that a drafts from.
    for (bool is_public : {false, true}) {
      // A std::string: doctest prints a `const char*` as an address.
      const std::string pools =
          is_public ? "one public pool (requests a and b share it)" : "private pools";
      INFO(pools);
      NGramPoolManager rejected(pool_config(is_public)), clean(pool_config(is_public));
      const V prompt = {1, 2, 3, 1, 2};
      const RequestId a = rejected.add_request(prompt), b = rejected.add_request(prompt);
      REQUIRE(clean.add_request(prompt) == a);
      REQUIRE(clean.add_request(prompt) == b);
      const V context = {1, 2, 3, 1, 2, 3, 4};
      CHECK(rejected.propose(b, context, 3) == clean.propose(b, context, 3));

      INFO(
          "update checks every new token before it feeds the first one: fed one by one, 5 and "
          "6 reach the pool before -7 throws, and the request has not seen them");
      CHECK_THROWS_WITH_AS(rejected.update(b, V{1, 2, 3, 1, 2, 3, 4, 5, 6, -7}),
                           doctest::Contains("-7"), std::invalid_argument);
      CHECK_THROWS_WITH_AS(rejected.propose(b, V{1, 2, 3, 1, 2, 3, 4, 5, -7}, 3),
                           doctest::Contains("-7"), std::invalid_argument);
      INFO(
          "add_request's scan checks every id before its first pair: k = 3, v = 5, so the first "
          "pair of 4 5 6 7 8 9 -7, 4 -> 5 6 7 8 9, holds no -7 and would already be in the pool "
          "when a check left to insert_pair throws");
      CHECK_THROWS_WITH_AS(rejected.add_request(V{4, 5, 6, 7, 8, 9, -7}), doctest::Contains("-7"),
                           std::invalid_argument);
      CHECK(rejected.num_requests() == clean.num_requests());
      CHECK(state_text(rejected.pool(a)) == state_text(clean.pool(a)));
      CHECK(state_text(rejected.pool(b)) == state_text(clean.pool(b)));

      INFO("afterwards both requests go on as if the refused calls never happened");
      const V next = {1, 2, 3, 1, 2, 3, 4, 5, 6, 7};
      CHECK(rejected.propose(b, next, 3) == clean.propose(b, next, 3));
      CHECK(rejected.propose(a, V{1, 2, 3, 1, 2, 3}, 3) ==
            clean.propose(a, V{1, 2, 3, 1, 2, 3}, 3));
      CHECK(state_text(rejected.pool(a)) == state_text(clean.pool(a)));
      CHECK(state_text(rejected.pool(b)) == state_text(clean.pool(b)));
    }
  }

  TEST_CASE("the pool drafter refuses a negative token id and keeps its generation") {
    auto manager = std::make_shared<NGramPoolManager>(pool_config(true));
    NGramPoolDrafter drafter(manager);
    drafter.begin(V{1, 2, 3, 1, 2});
    const auto request = drafter.request();
    REQUIRE(request.has_value());
    const std::string before = state_text(manager->pool(*request));
    CHECK_THROWS_WITH_AS(drafter.begin(V{4, 5, -7}), doctest::Contains("-7"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(drafter.observe(V{1, 2, 3, 1, 2, 5, -7}, RoundRecord{}),
                         doctest::Contains("-7"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(drafter.propose(V{1, 2, 3, 1, 2, -7}, 3), doctest::Contains("-7"),
                         std::invalid_argument);
    INFO("a refused begin() keeps the generation that was running, and its pool as it was");
    CHECK(drafter.request().value_or(-1) == *request);  // -1: no request at all
    CHECK(manager->num_requests() == 1);
    CHECK(state_text(manager->pool(*request)) == before);
    CHECK(drafter.propose(V{1, 2, 3, 1, 2}, 3) == V{3, 1, 2});
  }

  TEST_CASE("the pool drafter is lossless on the toy target") {
    for (bool is_public : {true, false}) {
      for (ToyRegime regime : {ToyRegime::periodic, ToyRegime::markov, ToyRegime::random}) {
        for (std::uint64_t seed = 0; seed < 3; ++seed) {
          ToyTargetConfig cfg;
          cfg.regime = regime;
          cfg.seed = seed;
          cfg.period = 7;
          cfg.vocab_size = regime == ToyRegime::random ? 4096 : 64;
          ToyTarget target(cfg);
          const V prompt = target.make_prompt(12);
          DecodeConfig dc;
          dc.max_new_tokens = 120;
          dc.k = 5;
          const auto base = run_baseline(target, prompt, dc);
          NGramPoolDrafter drafter(pool_config(is_public));
          const auto spec = run_speculative(target, drafter, greedy_verify_rule(), prompt, dc);
          INFO("regime=", to_string(regime), " seed=", seed, " public=", is_public);
          REQUIRE(spec.tokens == base.tokens);
          if (regime == ToyRegime::periodic) CHECK(spec.stats.tokens_per_run() > 3.0);
          if (regime == ToyRegime::random) CHECK(spec.stats.accepted == 0);
        }
      }
    }
  }
}
