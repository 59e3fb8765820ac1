// Lab 07, on the real model: your drafter (make_my_drafter) decoding SmolLM2-135M-Instruct.
// Every case here loads the model (one thread, as the other model tests) and reports SKIPPED when
// the model file is not in the cache (tools/fetch_model downloads it). Case names start with
// "real model: ", which gives them the ctest label `model` as well as `lab07`.
//
// The prompts are the first conversations of the shipped workloads (data/workloads), rendered
// exactly as `speclab bench` renders them (tools/speclab/chat_codec.cpp): ChatML, one block per
// message, the control tokens placed as ids.
#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "mini_engine/model/chat_template.h"
#include "mini_engine/model/gguf.h"
#include "mini_engine/model/tokenizer.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/cpu_llama.h"
#include "model_path.h"
#include "prompt_lookup.h"  // lab 01's greedy_verify_rule (LAB_IMPL's, like your drafter)
#include "real_model.h"
#include "test_util.h"

namespace speclab {
namespace {

using Tokens = std::vector<Token>;

struct RealModel {
  std::unique_ptr<CpuLlama> target;
  std::optional<Tokenizer> tokenizer;
  Token im_start = 0;
  Token im_end = 0;
};

RealModel& real_model() {
  static RealModel m;
  if (!m.target) {
    const auto path = testing::find_smollm2();
    if (!path) {
      testing::skip(
          "the SmolLM2 model file is not in the cache: run tools/fetch_model (or set "
          "SPECLAB_MODEL)");
    }
    // One thread: ctest runs two test processes at once on a 2-core machine.
    CpuLlamaOptions o;
    o.threads = 1;
    m.target = CpuLlama::open(*path, o);
    m.tokenizer = Tokenizer::from_gguf(GgufFile::open(*path));
    m.im_start = m.tokenizer->find("<|im_start|>").value();
    m.im_end = m.tokenizer->find("<|im_end|>").value();
  }
  m.target->truncate(0);
  return m;
}

void append_text(const RealModel& m, Tokens& out, const std::string& text) {
  const Tokens ids = m.tokenizer->encode(text, /*parse_special=*/false);
  out.insert(out.end(), ids.begin(), ids.end());
}

// <|im_start|>system\n...<|im_end|>\n<|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n
Tokens chat_prompt(const RealModel& m, std::string system, const std::string& user) {
  if (system.empty()) system = std::string(kSmolLM2DefaultSystemPrompt);
  Tokens out;
  for (const auto& [role, content] :
       {std::pair{std::string("system"), system}, std::pair{std::string("user"), user}}) {
    out.push_back(m.im_start);
    append_text(m, out, role + "\n" + content);
    out.push_back(m.im_end);
    append_text(m, out, "\n");
  }
  out.push_back(m.im_start);
  append_text(m, out, "assistant\n");
  return out;
}

struct Item {
  std::string id;
  std::string system;
  std::string user;  // the first turn
};

std::vector<Item> workload(const std::string& name, std::size_t count) {
  const std::string path = std::string(SPECLAB_DATA_DIR) + "/workloads/" + name + ".jsonl";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::vector<Item> items;
  std::string line;
  while (items.size() < count && std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    items.push_back({j.at("id").get<std::string>(), j.value("system", std::string()),
                     j.at("turns").at(0).get<std::string>()});
  }
  REQUIRE(items.size() == count);
  return items;
}

DecodeConfig greedy(int max_new_tokens, int k) {
  DecodeConfig c;
  c.max_new_tokens = max_new_tokens;
  c.k = k;
  c.stop_tokens = kSmolLM2StopTokens;
  return c;
}

// Your drafter on one prompt. Requires the model to be loaded.
GenerationResult speculate(RealModel& m, const Tokens& prompt, int max_new_tokens, int k) {
  MyDrafterOptions o;
  o.k = k;
  o.stop_tokens = m.tokenizer->stop_tokens();
  std::unique_ptr<Drafter> drafter = make_my_drafter(o);
  REQUIRE(drafter != nullptr);
  INFO(
      "(a TODO(labNN) thrown here comes from an earlier lab: one your drafter uses, or lab 01's "
      "verify_greedy. Finish it first, or test in a tree with the reference labs 01-05: "
      "book/lab07_real_model.md, section 'Your own labs, linked in')");
  m.target->truncate(0);
  return run_speculative(*m.target, *drafter, greedy_verify_rule(), prompt,
                         greedy(max_new_tokens, k));
}

void check_identity(const std::string& name, std::size_t prompts, int max_new_tokens) {
  RealModel& m = real_model();
  for (const Item& item : workload(name, prompts)) {
    const Tokens prompt = chat_prompt(m, item.system, item.user);
    const GenerationResult spec = speculate(m, prompt, max_new_tokens, 5);
    m.target->truncate(0);
    const GenerationResult plain = run_baseline(*m.target, prompt, greedy(max_new_tokens, 5));
    INFO(name, "/", item.id,
         ": your drafter's output must equal plain greedy decoding token for "
         "token (book/lab07_real_model.md, section 'Lossless on a real model')");
    CHECK(spec.tokens == plain.tokens);
    CHECK(spec.finish == plain.finish);
  }
}

}  // namespace

TEST_SUITE("lab07 / Lossless on a real model") {
  TEST_CASE("real model: token identity with plain decoding on code_edit prompts") {
    check_identity("code_edit", 2, 40);
  }
  TEST_CASE("real model: token identity with plain decoding on rewrite prompts") {
    check_identity("rewrite", 2, 40);
  }
}

TEST_SUITE("lab07 / Choosing your drafter") {
  // The floor. On these three prompts (64 new tokens each, k = 5) the reference solution --
  // suffix automaton over lab 02's n-gram model, adaptive k -- reaches an AL of 2.91 with the
  // AVX-512 VNNI kernels. The greedy reply, and so every AL, depends on the CPU's kernels, which
  // sum in different orders: with the AVX2 kernels the reference reaches 3.47 (a build with
  // -mavx2 -mfma -mf16c and SPECLAB_NATIVE=OFF). The floor is 2.2, 24% below the lower figure,
  // so that any sensible copy drafter clears it on either kind of CPU (`speclab generate` on the
  // same prompts, AVX-512 / AVX2: plain prompt lookup with n = 2 or 3 2.52 / 2.92, with n = 4
  // 2.34 / 2.66, lab 04's pool 2.86 / 3.39, lab 05's automaton alone 2.72 / 3.24), while a drafter
  // that learns from the reply and never from the prompt reaches 1.08. AL counts target runs, not
  // seconds, so it does not depend on the machine's speed or load.
  // (64 tokens, not more: a mutant that drafts nothing must still finish within the mutant
  // runner's 10 s on a loaded two-core machine.)
  // A std::string: doctest prints a `const char*` as an address.
  const std::string kSolutionAL = "2.91 with the AVX-512 kernels, 3.47 with the AVX2 ones";
  constexpr double kFloorAL = 2.2;
  TEST_CASE("real model: your drafter reaches the acceptance-length floor on code_edit") {
    RealModel& m = real_model();
    std::int64_t runs = 0, emitted = 0;
    for (const Item& item : workload("code_edit", 3)) {
      const GenerationResult r = speculate(m, chat_prompt(m, item.system, item.user), 64, 5);
      runs += r.stats.target_runs;
      emitted += r.stats.emitted;
    }
    REQUIRE(runs > 0);
    const double al = static_cast<double>(emitted) / static_cast<double>(runs);
    MESSAGE("measured: your drafter's acceptance length on code_edit is ", al, " (the floor is ",
            kFloorAL, "; the reference reaches ", kSolutionAL, ")");
    INFO("acceptance length (tokens per target run) ", al, " is below the floor ", kFloorAL,
         ": your drafter misses most of what a code edit copies from the prompt "
         "(book/lab07_real_model.md, sections 'Index the whole prompt' and 'Choosing your "
         "drafter')");
    CHECK(al >= kFloorAL);
  }
}

}  // namespace speclab
