// CpuLlamaBatch: several sequences through one forward pass. Each sequence must get the rows
// CpuLlama gives it alone (the single-sequence target is the reference), and the batched
// speculative loop must emit what each request emits alone, on tiny models and on SmolLM2.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mini_engine/spec/batch_loop.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/cpu_llama.h"
#include "mini_engine/targets/cpu_llama_batch.h"
#include "model_path.h"
#include "prompt_lookup.h"
#include "test_util.h"
#include "tiny_llama.h"

using namespace speclab;
using speclab::testing::TinyLlamaSpec;
using V = std::vector<Token>;

namespace {

// A tiny model's bytes with a single-sequence target and a batched one over the same weights.
struct TinyPair {
  std::vector<std::uint8_t> bytes;
  std::unique_ptr<CpuLlamaBatch> batch;
  std::vector<std::unique_ptr<CpuLlama>> alone;  // one per sequence, made on demand
  CpuLlamaOptions opts;
  CpuLlama& single(size_t i) {
    while (alone.size() <= i) {
      alone.push_back(std::make_unique<CpuLlama>(GgufFile::parse(bytes, "tiny.gguf"), opts));
    }
    return *alone[i];
  }
};

TinyPair make_pair(const TinyLlamaSpec& spec, int threads) {
  TinyPair p;
  p.bytes = testing::build_tiny_llama(spec);
  p.opts.threads = threads;
  p.batch = std::make_unique<CpuLlamaBatch>(GgufFile::parse(p.bytes, "tiny.gguf"), p.opts);
  return p;
}

V ids(int n, int vocab, std::uint64_t seed) {
  V v;
  for (int i = 0; i < n; ++i) {
    v.push_back(static_cast<Token>(uniform01(seed, 13, static_cast<std::uint64_t>(i)) * vocab));
  }
  return v;
}

// Largest |a - b|, and where the first mismatch is (for the failure message).
double max_abs_diff(const Logits& a, const Logits& b, std::string& where) {
  REQUIRE(a.rows() == b.rows());
  REQUIRE(a.vocab() == b.vocab());
  double m = 0;
  for (int r = 0; r < a.rows(); ++r) {
    for (int c = 0; c < a.vocab(); ++c) {
      const double d = std::fabs(a.row(r)[c] - b.row(r)[c]);
      if (d > 0 && where.empty()) {
        where = "row " + std::to_string(r) + " token " + std::to_string(c) + ": " +
                std::to_string(a.row(r)[c]) + " vs " + std::to_string(b.row(r)[c]);
      }
      m = std::max(m, d);
    }
  }
  return m;
}

}  // namespace

TEST_SUITE("engine_forward / batching sequences") {
  TEST_CASE("tiny model: each sequence of a batched call gets the rows it gets alone") {
    for (int threads : {1, 3}) {
      TinyLlamaSpec spec;
      spec.n_ctx = 128;
      TinyPair p = make_pair(spec, threads);
      const int s0 = p.batch->add_sequence(), s1 = p.batch->add_sequence(),
                s2 = p.batch->add_sequence();
      const int seqs[] = {s0, s1, s2};
      // Three rounds of uneven items: prefills of different lengths, then verify-sized passes,
      // then a rollback of one sequence and a pass that skips another.
      const std::vector<std::vector<V>> rounds = {{ids(17, 96, 1), ids(5, 96, 2), ids(30, 96, 3)},
                                                  {ids(4, 96, 4), ids(1, 96, 5), ids(9, 96, 6)},
                                                  {ids(3, 96, 7), {}, ids(6, 96, 8)}};
      for (size_t r = 0; r < rounds.size(); ++r) {
        if (r == 2) {
          p.batch->truncate(s0, 10);
          p.single(0).truncate(10);
        }
        std::vector<BatchItem> items;
        std::vector<size_t> which;
        for (size_t i = 0; i < 3; ++i) {
          if (rounds[r][i].empty()) continue;
          items.push_back({seqs[i], rounds[r][i]});
          which.push_back(i);
        }
        const std::vector<Logits> got = p.batch->extend_batch(items);
        REQUIRE(got.size() == items.size());
        for (size_t j = 0; j < items.size(); ++j) {
          const Logits want = p.single(which[j]).extend(rounds[r][which[j]]);
          std::string where;
          const double diff = max_abs_diff(got[j], want, where);
          INFO("threads ", threads, " round ", r, " sequence ", which[j], ": first mismatch ",
               where);
          // Each token is quantized, multiplied and attended on its own; only the tiling of
          // the SIMD kernel over rows differs with the row count, as it does between a
          // prefill and single steps of CpuLlama itself.
          CHECK(diff <= 1e-5);
        }
      }
      for (size_t i = 0; i < 3; ++i) {
        const auto t = p.batch->tokens(seqs[i]);
        CHECK(V(t.begin(), t.end()) == V(p.single(i).tokens().begin(), p.single(i).tokens().end()));
      }
    }
  }

  TEST_CASE("tiny model: a batched call longer than one chunk equals its sequences alone") {
    TinyLlamaSpec spec;
    spec.n_ctx = 600;
    TinyPair p = make_pair(spec, 2);
    std::vector<V> prompts = {ids(250, 96, 11), ids(180, 96, 12), ids(300, 96, 13)};  // 730 rows
    std::vector<BatchItem> items;
    for (const V& v : prompts) items.push_back({p.batch->add_sequence(), v});
    const std::vector<Logits> got = p.batch->extend_batch(items);
    for (size_t i = 0; i < prompts.size(); ++i) {
      std::string where;
      INFO("sequence ", i);
      CHECK(max_abs_diff(got[i], p.single(i).extend(prompts[i]), where) <= 1e-5);
    }
  }

  TEST_CASE("tiny model: append_batch computes no logits but leaves the caches extend_batch does") {
    TinyLlamaSpec spec;
    spec.n_ctx = 600;
    TinyPair p = make_pair(spec, 2);
    const std::vector<V> prompts = {ids(300, 96, 21), ids(250, 96, 22)};  // > one chunk
    const V next = {5, 6, 7};
    const int a = p.batch->add_sequence(), b = p.batch->add_sequence();
    std::vector<BatchItem> items = {{a, prompts[0]}, {b, prompts[1]}};
    p.batch->append_batch(items);
    CHECK(p.batch->length(a) == 300);
    CHECK(p.batch->length(b) == 250);
    items = {{a, next}, {b, next}};
    const std::vector<Logits> got = p.batch->extend_batch(items);
    for (size_t i = 0; i < prompts.size(); ++i) {
      INFO("sequence ", i);
      p.single(i).extend(prompts[i]);
      std::string where;
      CHECK(max_abs_diff(got[i], p.single(i).extend(next), where) <= 1e-5);
    }
    const V bad = {4, 96};
    items = {{a, next}, {b, bad}};
    CHECK_THROWS_WITH_AS(p.batch->append_batch(items),
                         doctest::Contains("append_batch: item 1 has token id 96"),
                         std::invalid_argument);
    CHECK(p.batch->length(a) == 303);
    // The shared item checks name the call that was made, not extend_batch.
    CHECK_THROWS_WITH_AS(p.batch->append_batch({}),
                         doctest::Contains(": append_batch with no items"), std::invalid_argument);
    items = {{a, next}, {a, next}};
    CHECK_THROWS_WITH_AS(p.batch->append_batch(items),
                         doctest::Contains("append_batch item 1 (sequence 0) names a sequence"),
                         std::invalid_argument);
    CHECK(p.batch->length(a) == 303);
  }

  TEST_CASE("tiny model: a bad item leaves every sequence unchanged") {
    TinyLlamaSpec spec;
    spec.n_ctx = 16;
    TinyPair p = make_pair(spec, 1);
    const int a = p.batch->add_sequence(), b = p.batch->add_sequence();
    const V ok = {1, 2, 3}, bad = {4, 96}, long_one = ids(17, 96, 1);
    std::vector<BatchItem> items = {{a, ok}, {b, bad}};
    CHECK_THROWS_WITH_AS(p.batch->extend_batch(items),
                         doctest::Contains("item 1 has token id 96 at index 1"),
                         std::invalid_argument);
    items = {{a, ok}, {b, long_one}};
    CHECK_THROWS_WITH_AS(p.batch->extend_batch(items), doctest::Contains("maximum of 16"),
                         ContextOverflow);
    items = {{a, ok}, {a, ok}};
    CHECK_THROWS_AS(p.batch->extend_batch(items), std::invalid_argument);
    CHECK(p.batch->length(a) == 0);
    CHECK(p.batch->length(b) == 0);
    CHECK_THROWS_AS(p.batch->truncate(a, 1), std::out_of_range);
    p.batch->remove_sequence(b);
    CHECK_THROWS_AS(p.batch->tokens(b), std::out_of_range);
    CHECK(p.batch->sequences() == std::vector<int>{a});
  }

  TEST_CASE("tiny model: the batched speculative loop emits what each request emits alone") {
    TinyLlamaSpec spec;
    spec.n_ctx = 256;
    TinyPair p = make_pair(spec, 2);
    // Repetitive prompts give prompt lookup something to copy.
    std::vector<V> prompts;
    for (int i = 0; i < 4; ++i) {
      V base = ids(6 + i, 96, 20 + static_cast<std::uint64_t>(i));
      V prompt;
      for (int r = 0; r < 4; ++r) prompt.insert(prompt.end(), base.begin(), base.end());
      prompts.push_back(prompt);
    }
    std::vector<std::unique_ptr<PromptLookupDrafter>> drafters;
    std::vector<BatchRequest> reqs;
    for (size_t i = 0; i < prompts.size(); ++i) {
      BatchRequest r;
      r.prompt = prompts[i];
      drafters.push_back(std::make_unique<PromptLookupDrafter>(1 + static_cast<int>(i % 2)));
      r.drafter = drafters.back().get();
      r.config.k = 2 + static_cast<int>(i);
      r.config.max_new_tokens = 20 + 7 * static_cast<int>(i);
      reqs.push_back(std::move(r));
    }
    const BatchGenerationResult got = run_speculative_batch(*p.batch, reqs, greedy_verify_rule());
    std::int64_t accepted = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      PromptLookupDrafter d(1 + static_cast<int>(i % 2));
      const GenerationResult want =
          run_speculative(p.single(i), d, greedy_verify_rule(), reqs[i].prompt, reqs[i].config);
      INFO("request ", i);
      CHECK(got.requests[i].tokens == want.tokens);
      accepted += got.requests[i].stats.accepted;
    }
    CHECK(p.batch->sequences().empty());
    MESSAGE("tiny model: ", accepted, " drafts accepted over ", got.stats.steps, " batched steps");
  }

  TEST_CASE("SmolLM2: batched speculative decoding emits what each request emits alone") {
    const auto path = testing::find_smollm2();
    if (!path) {
      testing::skip(
          "the SmolLM2 model file is not in the cache: run tools/fetch_model (or set "
          "SPECLAB_MODEL)");
    }
    const std::string fixture = std::string(SPECLAB_FIXTURES_DIR) + "/smollm2_llamacpp_logits.json";
    std::ifstream in(fixture);
    REQUIRE_MESSAGE(in.good(), "missing fixture ", fixture);
    std::vector<V> prompts;
    const nlohmann::json j = nlohmann::json::parse(in);
    for (const auto& pr : j.at("spec_prompts")) {
      prompts.push_back(pr.at("tokens").get<V>());
    }
    REQUIRE(prompts.size() >= 3);
    prompts.resize(3);
    CpuLlamaOptions o;
    o.threads = 1;  // ctest runs two processes at once on a 2-core machine (see test_cpu_llama)
    auto batch = CpuLlamaBatch::open(*path, o);
    auto alone = CpuLlama::open(*path, o);
    std::vector<std::unique_ptr<PromptLookupDrafter>> drafters;
    std::vector<BatchRequest> reqs;
    for (size_t i = 0; i < prompts.size(); ++i) {
      BatchRequest r;
      r.prompt = prompts[i];
      drafters.push_back(std::make_unique<PromptLookupDrafter>(2));
      r.drafter = drafters.back().get();
      r.config.k = 3;
      r.config.max_new_tokens = 24 + 4 * static_cast<int>(i);
      reqs.push_back(std::move(r));
    }
    const BatchGenerationResult got = run_speculative_batch(*batch, reqs, greedy_verify_rule());
    for (size_t i = 0; i < reqs.size(); ++i) {
      alone->truncate(0);
      PromptLookupDrafter d(2);
      const GenerationResult want =
          run_speculative(*alone, d, greedy_verify_rule(), reqs[i].prompt, reqs[i].config);
      INFO("prompt ", i);
      CHECK(got.requests[i].tokens == want.tokens);
    }
    MESSAGE("SmolLM2: ", got.stats.emitted, " tokens in ", got.stats.steps, " batched steps");
  }
}
