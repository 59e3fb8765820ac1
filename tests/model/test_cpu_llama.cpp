// CpuLlama: the loader's errors, the forward pass against a plain reference on tiny random
// models, the KV cache and rollback, and on the real SmolLM2 file: agreement with llama.cpp
// (fixture from tools/oracle/make_logit_fixtures.py) and lossless speculative decoding.
// Chapter: book/engine_forward.md.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "llama_reference.h"
#include "llamacpp_fixture.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/targets/cpu_llama.h"
#include "model_path.h"
#include "prompt_lookup.h"
#include "test_util.h"
#include "tiny_llama.h"

using namespace speclab;
using speclab::testing::TinyLlamaSpec;
using namespace speclab::testing;

namespace {

// A GgufFile becomes a CpuLlama only when the caller says so (the constructor is explicit): a
// function taking a CpuLlama must not silently load a model from a file it was handed.
static_assert(!std::is_convertible_v<GgufFile, CpuLlama>);
static_assert(std::is_constructible_v<CpuLlama, GgufFile, CpuLlamaOptions>);

// A tiny model together with the bytes it points into.
struct Tiny {
  std::vector<std::uint8_t> bytes;
  std::unique_ptr<CpuLlama> target;
};

Tiny make_tiny(const TinyLlamaSpec& spec, CpuLlamaOptions opts = {}) {
  Tiny t;
  t.bytes = testing::build_tiny_llama(spec);
  t.target = std::make_unique<CpuLlama>(GgufFile::parse(t.bytes, "tiny.gguf"), opts);
  return t;
}

std::string load_error(const TinyLlamaSpec& spec) {
  const auto bytes = testing::build_tiny_llama(spec);
  try {
    CpuLlama model(GgufFile::parse(bytes, "tiny.gguf"));
  } catch (const ModelError& e) {
    return e.what();
  }
  return "(no ModelError thrown)";
}

std::vector<Token> ids(int n, int vocab, std::uint64_t seed) {
  std::vector<Token> v;
  for (int i = 0; i < n; ++i) {
    v.push_back(static_cast<Token>(uniform01(seed, 11, static_cast<std::uint64_t>(i)) * vocab));
  }
  return v;
}

// Largest |a - b| over all entries; rows and vocab must match.
double max_abs_diff(const Logits& a, const Logits& b) {
  REQUIRE(a.rows() == b.rows());
  REQUIRE(a.vocab() == b.vocab());
  double m = 0;
  for (size_t i = 0; i < static_cast<size_t>(a.rows()) * a.vocab(); ++i) {
    m = std::max(m, static_cast<double>(std::fabs(a.data()[i] - b.data()[i])));
  }
  return m;
}

// Logits of `seq` fed one token at a time.
Logits stepwise(Target& t, std::span<const Token> seq) {
  Logits out(static_cast<int>(seq.size()), t.vocab_size());
  for (size_t i = 0; i < seq.size(); ++i) {
    const Logits l = t.extend(seq.subspan(i, 1));
    std::copy(l.row(0).begin(), l.row(0).end(), out.row(static_cast<int>(i)).begin());
  }
  return out;
}

CpuLlama& real_model() {
  static std::unique_ptr<CpuLlama> model;
  if (!model) {
    const auto path = testing::find_smollm2();
    if (!path) {
      testing::skip(
          "the SmolLM2 model file is not in the cache: run tools/fetch_model (or set "
          "SPECLAB_MODEL)");
    }
    // One thread: ctest runs two test processes at once on a 2-core machine, and OpenMP's
    // spinning barriers crawl when threads outnumber cores. The thread split itself is tested on
    // the tiny models (1 and 3 threads against the reference).
    CpuLlamaOptions o;
    o.threads = 1;
    model = CpuLlama::open(*path, o);
  }
  model->truncate(0);
  return *model;
}

}  // namespace

TEST_SUITE("engine_forward / loading a Llama GGUF") {
  TEST_CASE("the real file's hyperparameters come from its llama keys") {
    CpuLlama& m = real_model();
    const LlamaHParams& hp = m.hparams();
    CHECK(hp.n_layer == 30);
    CHECK(hp.n_embd == 576);
    CHECK(hp.n_head == 9);
    CHECK(hp.n_head_kv == 3);
    CHECK(hp.head_dim == 64);
    CHECK(hp.n_ff == 1536);
    CHECK(hp.n_vocab == 49152);
    CHECK(hp.n_ctx_train == 8192);
    CHECK(hp.rms_eps == doctest::Approx(1e-5));
    CHECK(hp.rope_base == doctest::Approx(100000.0));
    CHECK(m.max_length() == 8192);
    CHECK(m.weights().tied_output);  // no output.weight: the logits reuse token_embd (Q8_0)
    CHECK(m.weights().output.data == m.weights().token_embd.data);
    CHECK(m.weights().output.type == GgmlType::Q8_0);
  }

  TEST_CASE("an architecture other than llama is rejected by name") {
    TinyLlamaSpec s;
    s.arch = "gpt2";
    CHECK(load_error(s).find("general.architecture is 'gpt2'") != std::string::npos);
  }

  TEST_CASE("an architecture name that runs on for megabytes is cut short in the message") {
    // A corrupt length field makes the string swallow the rest of the file: the message quoted
    // all of it.
    TinyLlamaSpec s;
    s.arch = "gpt2" + std::string(1 << 20, '\x02');
    const std::string err = load_error(s);
    INFO(err.substr(0, 300));
    CHECK(err.size() < 600);
    CHECK(err.find("general.architecture is 'gpt2\\x02") != std::string::npos);
    CHECK(err.find("... (1048580 bytes in all)'; SpecLab's Llama targets run only 'llama'") !=
          std::string::npos);
  }

  TEST_CASE("the model's name from general.name is printable and cut short") {
    // name() goes into every run's header line: a file's escape sequence reached the terminal.
    TinyLlamaSpec s;
    const Tiny plain = make_tiny(s);
    CHECK(plain.target->name().find("cpu-llama(tiny-test-llama, ") == 0);
    // One thread is "1 thread": the header line of every run with --threads 1 said "1 threads".
    CHECK(make_tiny(s, {.threads = 1}).target->name() == "cpu-llama(tiny-test-llama, 1 thread)");
    CHECK(make_tiny(s, {.threads = 3}).target->name() == "cpu-llama(tiny-test-llama, 3 threads)");
    s.name = "\x1b[2Jtiny" + std::string(1000, 'y');
    const Tiny odd = make_tiny(s);
    const std::string name = odd.target->name();
    INFO(name);
    CHECK(name.find("cpu-llama(\\x1B[2Jtinyyyy") == 0);
    CHECK(name.find("... (1008 bytes in all), ") != std::string::npos);
    CHECK(name.size() < 120);
  }

  TEST_CASE("a quantization format other than ggml's version 2 is refused by name") {
    // Q4_0, Q4_1 and Q8_0 changed their block layouts twice in 2023, before GGUF; every GGUF
    // file holds version 2. Reading another version's blocks as version 2 gives garbage.
    TinyLlamaSpec s;
    s.quantization_version = 1;
    const std::string err = load_error(s);
    INFO(err);
    CHECK(err.find("general.quantization_version is 1") != std::string::npos);
    TinyLlamaSpec absent;  // files of float weights may leave the key out
    absent.omit.insert("general.quantization_version");
    CHECK(load_error(absent) == "(no ModelError thrown)");
  }

  TEST_CASE("the optional keys that must agree with the tensors are checked, type and value") {
    // llama.rope.dimension_count must be the head dimension (64 / 4 = 16 here) and
    // llama.vocab_size the rows of token_embd.weight (96). A float-typed key used to be read as
    // the integer 0 and blamed on its value ("= 0 differs from the head dimension").
    TinyLlamaSpec agree;
    agree.extra_u32 = {{"llama.rope.dimension_count", 16}, {"llama.vocab_size", 96}};
    CHECK(load_error(agree) == "(no ModelError thrown)");
    TinyLlamaSpec partial;
    partial.extra_u32 = {{"llama.rope.dimension_count", 8}};
    CHECK(load_error(partial).find("llama.rope.dimension_count = 8 differs from the head "
                                   "dimension 16") != std::string::npos);
    TinyLlamaSpec vocab;
    vocab.extra_u32 = {{"llama.vocab_size", 95}};
    CHECK(load_error(vocab).find("llama.vocab_size = 95 differs from the rows of "
                                 "token_embd.weight (96)") != std::string::npos);
    for (const char* key :
         {"llama.rope.dimension_count", "llama.vocab_size", "general.quantization_version"}) {
      TinyLlamaSpec s;
      s.omit.insert("general.quantization_version");
      s.extra_f32 = {{key, 16.0f}};
      const std::string err = load_error(s);
      INFO(std::string(key), ": ", err);
      CHECK(err.find(key) != std::string::npos);
      CHECK(err.find("integer") != std::string::npos);
      CHECK(err.find("= 0") == std::string::npos);
    }
  }

  TEST_CASE("a tokenizer with another token count than the embedding's rows is refused") {
    // A tokenizer of 9152 tokens on SmolLM2's 49152 rows loaded, and generation stopped mid-reply
    // at the first id past the tokenizer ("Tokenizer::decode: token id 17422 ... is outside the
    // vocabulary"), naming nothing in the file.
    TinyLlamaSpec same;
    same.tokenizer_tokens = 96;
    CHECK(load_error(same) == "(no ModelError thrown)");
    for (const int n : {90, 100}) {
      TinyLlamaSpec s;
      s.tokenizer_tokens = n;
      const std::string err = load_error(s);
      INFO(err);
      CHECK(err.find("tokenizer.ggml.tokens holds " + std::to_string(n) +
                     " tokens, but token_embd.weight has 96 rows") != std::string::npos);
    }
  }

  TEST_CASE("a missing hyperparameter key is named") {
    for (const char* key : {"llama.attention.head_count_kv", "llama.block_count",
                            "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon"}) {
      TinyLlamaSpec s;
      s.omit.insert(key);
      const std::string err = load_error(s);
      INFO(err);
      CHECK(err.find(std::string("'") + key + "' is missing") != std::string::npos);
    }
  }

  TEST_CASE("a missing tensor is named") {
    TinyLlamaSpec s;
    s.omit.insert("blk.1.ffn_up.weight");
    CHECK(load_error(s).find("tensor 'blk.1.ffn_up.weight' is missing") != std::string::npos);
    TinyLlamaSpec s2;
    s2.omit.insert("output_norm.weight");
    CHECK(load_error(s2).find("'output_norm.weight' is missing") != std::string::npos);
  }

  TEST_CASE("a real hyperparameter out of range is named with its value as written") {
    // 1e38 was printed as "= 99999996802856924650656260769173209088.000000 must be positive".
    TinyLlamaSpec s;
    s.rope_base = 1e38f;
    const std::string err = load_error(s);
    INFO(err);
    CHECK(err.find("'llama.rope.freq_base' = 1e+38 must be positive and at most 1e+30") !=
          std::string::npos);
    TinyLlamaSpec zero;
    zero.rms_eps = 0.0f;
    CHECK(load_error(zero).find("'llama.attention.layer_norm_rms_epsilon' = 0 must be positive") !=
          std::string::npos);
  }

  TEST_CASE("tensors of blocks past llama.block_count are refused, not ignored") {
    // A corrupt block count of 1 in a 30-block file loaded block 0 alone and decoded newlines.
    TinyLlamaSpec s;
    s.block_count_key = 1;  // the file holds blocks 0 and 1
    const std::string err = load_error(s);
    INFO(err);
    CHECK(err.find("tensor 'blk.1.attn_norm.weight' belongs to block 1, but llama.block_count "
                   "is 1") != std::string::npos);
    TinyLlamaSpec fewer;  // block 1 missing altogether is a missing tensor, as before
    fewer.block_count_key = 3;
    CHECK(load_error(fewer).find("tensor 'blk.2.attn_norm.weight' is missing") !=
          std::string::npos);
  }

  TEST_CASE("a tensor of the wrong shape is named with both shapes") {
    TinyLlamaSpec s;
    s.shape_override["blk.0.attn_k.weight"] = {64, 64};  // 4 KV heads' worth instead of 2
    const std::string err = load_error(s);
    INFO(err);
    CHECK(err.find("'blk.0.attn_k.weight' has shape [64, 64], expected [64, 32]") !=
          std::string::npos);
  }

  TEST_CASE("head counts that do not divide, and an odd head dimension, are rejected") {
    TinyLlamaSpec s;
    s.n_head = 5;  // 64 / 5 is not an integer
    s.n_head_kv = 5;
    // (F32 so that the file itself still parses: its rows of 5 * 12 = 60 are no 32-block.)
    s.type_override["blk.0.attn_output.weight"] = 0;
    s.type_override["blk.1.attn_output.weight"] = 0;
    CHECK(load_error(s).find("head_count = 5 does not divide llama.embedding_length = 64") !=
          std::string::npos);
    TinyLlamaSpec s2;
    s2.n_head_kv = 3;  // 4 query heads cannot share 3 KV heads evenly
    CHECK(load_error(s2).find("head_count_kv = 3 does not divide") != std::string::npos);
    TinyLlamaSpec s3;  // 96 / 32 = 3 dimensions per head: RoPE has no pair for the last one
    s3.n_embd = 96;
    s3.n_head = 32;
    s3.n_head_kv = 32;
    CHECK(load_error(s3).find("head dimension 3 is odd; RoPE rotates pairs") != std::string::npos);
  }

  TEST_CASE("a quantized matrix at an odd address is rejected, not read misaligned") {
    // A file may set general.alignment to 1; ggml blocks start with fp16 scales, which the
    // kernels read as 2-byte values (undefined behaviour at an odd address; UBSan reported it).
    // One of two name lengths puts the data section, and token_embd.weight, at an odd offset.
    int odd = 0;
    for (const char* name : {"t", "tt"}) {
      TinyLlamaSpec s;
      s.alignment = 1;
      s.name = name;
      const auto bytes = testing::build_tiny_llama(s);
      const GgufFile file = GgufFile::parse(bytes, "tiny.gguf");
      const auto at = reinterpret_cast<std::uintptr_t>(file.tensor("token_embd.weight")->data);
      if (at % 2 == 0) continue;
      ++odd;
      CHECK(load_error(s).find("'token_embd.weight' is not 2-byte aligned") != std::string::npos);
    }
    CHECK(odd == 1);
  }

  TEST_CASE("an unsupported matrix type is rejected naming the type") {
    TinyLlamaSpec s;
    s.type_override["blk.0.attn_q.weight"] = 0;  // F32
    CHECK(load_error(s).find("'blk.0.attn_q.weight' has type F32") != std::string::npos);
  }

  TEST_CASE("a weight that is not finite is named with where it is") {
    // A NaN or an infinity in the weights (a corrupt download, a bad conversion) would make every
    // product with them NaN: the greedy output would silently be token 0 over and over. The load
    // refuses the file instead, naming the tensor and the place.
    // `patch` gets the tensor's bytes inside the file and breaks them.
    const auto error_after = [](const TinyLlamaSpec& spec, const std::string& tensor,
                                const std::function<void(std::uint8_t*)>& patch) {
      std::vector<std::uint8_t> bytes = testing::build_tiny_llama(spec);
      {
        const GgufFile f = GgufFile::parse(bytes, "tiny.gguf");
        const GgufTensor* t = f.tensor(tensor);
        REQUIRE(t != nullptr);
        patch(bytes.data() + (t->data - bytes.data()));
      }
      try {
        CpuLlama model(GgufFile::parse(bytes, "tiny.gguf"));
      } catch (const ModelError& e) {
        return std::string(e.what());
      }
      return std::string("(no ModelError thrown)");
    };
    const auto put_float = [](std::uint8_t* p, float v) { std::memcpy(p, &v, 4); };
    const auto put_half = [](std::uint8_t* p, std::uint16_t h) { std::memcpy(p, &h, 2); };
    const TinyLlamaSpec s;  // matrices Q4_1 (20-byte blocks: d, m, codes), embedding Q8_0
    std::string err = error_after(s, "blk.1.ffn_norm.weight", [&](std::uint8_t* p) {
      put_float(p + 4 * 7, std::numeric_limits<float>::quiet_NaN());
    });
    INFO(err);
    CHECK(err.find("tensor 'blk.1.ffn_norm.weight' holds nan at index 7") != std::string::npos);
    err = error_after(s, "output_norm.weight", [&](std::uint8_t* p) {
      put_float(p, -std::numeric_limits<float>::infinity());
    });
    CHECK(err.find("tensor 'output_norm.weight' holds -inf at index 0") != std::string::npos);
    // Row 1, block 1 of a 64-column Q4_1 matrix is block 3: its scale d made infinite (fp16
    // 0x7c00), then in another copy its offset m made NaN (0x7e00).
    err = error_after(s, "blk.0.attn_k.weight",
                      [&](std::uint8_t* p) { put_half(p + 3 * 20, 0x7c00); });
    CHECK(
        err.find("tensor 'blk.0.attn_k.weight' has a scale that is not finite in row 1, block 1") !=
        std::string::npos);
    err = error_after(s, "blk.0.attn_k.weight",
                      [&](std::uint8_t* p) { put_half(p + 3 * 20 + 2, 0x7e00); });
    CHECK(
        err.find("tensor 'blk.0.attn_k.weight' has a scale that is not finite in row 1, block 1") !=
        std::string::npos);
    // The Q8_0 embedding (34-byte blocks, d first): row 95, its last block.
    err = error_after(s, "token_embd.weight",
                      [&](std::uint8_t* p) { put_half(p + (95 * 2 + 1) * 34, 0xfc00); });
    CHECK(
        err.find("tensor 'token_embd.weight' has a scale that is not finite in row 95, block 1") !=
        std::string::npos);
    // Large but finite values load: only infinities and NaN are refused.
    CHECK(error_after(s, "blk.0.attn_k.weight", [&](std::uint8_t* p) {
            put_half(p, 0x7bff);  // 65504, the largest fp16
          }) == "(no ModelError thrown)");
  }

  TEST_CASE("without output.weight the output is tied to token_embd and with it it is not") {
    TinyLlamaSpec s;
    Tiny tied = make_tiny(s);
    CHECK(tied.target->weights().tied_output);
    CHECK(tied.target->weights().output.data == tied.target->weights().token_embd.data);
    s.tied = false;
    Tiny untied = make_tiny(s);
    CHECK_FALSE(untied.target->weights().tied_output);
    CHECK(untied.target->weights().output.data != untied.target->weights().token_embd.data);
  }
}

TEST_SUITE("engine_forward / the forward pass") {
  TEST_CASE("the packed weights of a model fill one arena, in the order a pass reads them") {
    TinyLlamaSpec s;
    s.tied = false;
    Tiny t = make_tiny(s);
    const LlamaWeights& w = t.target->weights();
    const cpu::WeightArena& arena = t.target->packed_weights();
    std::vector<const QuantMatrix*> order;
    for (const LlamaLayer& L : w.layers) {
      for (const QuantMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
        order.push_back(m);
      }
    }
    order.push_back(&w.output);
    size_t bytes = 0;
    std::vector<size_t> offsets;
    for (const QuantMatrix* m : order) {
      offsets.push_back(bytes);
      bytes += cpu::WeightArena::aligned_size(cpu::PackedMatrix::packed_bytes(*m));
    }
    CHECK(arena.capacity() == bytes);
    CHECK(arena.used() == bytes);
    // The first matrix's packed codes start the block; the output projection's end it.
    const cpu::PackedMatrix wq(w.layers[0].wq);
    CHECK(std::equal(arena.data(), arena.data() + cpu::PackedMatrix::packed_bytes(w.layers[0].wq),
                     wq.at(0, 0)));
    const cpu::PackedMatrix out(w.output);
    CHECK(std::equal(arena.data() + offsets.back(),
                     arena.data() + offsets.back() + cpu::PackedMatrix::packed_bytes(w.output),
                     out.at(0, 0)));
    CpuLlamaOptions o;
    o.kernel = cpu::MatmulKernel::simd;  // reads the file's blocks: nothing is repacked
    Tiny plain = make_tiny(s, o);
    CHECK(plain.target->packed_weights().capacity() == 0);
  }

  TEST_CASE("tiny models match a plain full-recompute reference for every kernel and type") {
    for (std::uint32_t type : {2u, 3u, 8u}) {
      for (cpu::MatmulKernel kernel : {cpu::MatmulKernel::reference, cpu::MatmulKernel::scalar,
                                       cpu::MatmulKernel::simd, cpu::MatmulKernel::packed}) {
        for (int threads : {1, 3}) {
          TinyLlamaSpec s;
          s.matrix_type = type;
          s.tied = type != 8;
          s.seed = type;
          CpuLlamaOptions o;
          o.threads = threads;
          o.kernel = kernel;
          Tiny t = make_tiny(s, o);
          const std::vector<Token> seq = ids(21, s.n_vocab, type);
          const Logits want = testing::reference_llama_logits(t.target->weights(), seq, kernel);
          // Two calls (a prefill, then a verify-sized pass) so the cache is exercised too.
          const Logits a = t.target->extend(std::span(seq).first(15));
          const Logits b = t.target->extend(std::span(seq).subspan(15));
          double worst = 0;
          for (int r = 0; r < 21; ++r) {
            const auto got = r < 15 ? a.row(r) : b.row(r - 15);
            for (int c = 0; c < s.n_vocab; ++c) {
              worst = std::max(worst, static_cast<double>(std::fabs(got[c] - want.row(r)[c])));
            }
          }
          INFO("type ", type, " kernel ", static_cast<int>(kernel), " threads ", threads);
          // The same math summed in another order: float rounding only (logits here are O(1)).
          // The tiny model's attention is kept soft (small Wq, Wk) so that a rounding
          // difference cannot flip a near-one-hot softmax and be amplified.
          CHECK(worst < 1e-4);
        }
      }
    }
  }

  TEST_CASE("tiny model: the logits have the same bits whatever the thread count") {
    // The threads split every step differently with their number: rows of each matrix in 16-row
    // slices (which cut a head of head_dim 64 here), tokens for the norms and RoPE, attention
    // items sized for the thread count. None of that may move a bit of the result, also with more
    // threads than some steps have work for (7 threads, 6 tokens in the second pass).
    TinyLlamaSpec s;
    s.n_embd = 128;
    s.n_head = 2;
    s.n_head_kv = 1;
    s.n_ff = 160;
    const std::vector<Token> seq = ids(21, s.n_vocab, 11);
    std::vector<Logits> got;
    for (int threads : {1, 2, 3, 7}) {
      CpuLlamaOptions o;
      o.threads = threads;
      Tiny t = make_tiny(s, o);
      Logits all(21, s.n_vocab);
      const Logits a = t.target->extend(std::span(seq).first(15));    // a prefill
      const Logits b = t.target->extend(std::span(seq).subspan(15));  // a verify-sized pass
      std::copy(a.data(), a.data() + 15 * s.n_vocab, all.row(0).data());
      std::copy(b.data(), b.data() + 6 * s.n_vocab, all.row(15).data());
      got.push_back(all);
    }
    for (size_t i = 1; i < got.size(); ++i) {
      INFO("thread count #", i);
      CHECK(std::equal(got[0].data(), got[0].data() + 21 * s.n_vocab, got[i].data()));
    }
  }

  TEST_CASE("a token id outside the vocabulary is rejected and the sequence is unchanged") {
    Tiny t = make_tiny(TinyLlamaSpec{});
    t.target->extend(std::vector<Token>{1, 2, 3});
    const std::vector<Token> bad = {4, 96, 5};
    CHECK_THROWS_WITH_AS(t.target->extend(bad), doctest::Contains("token id 96 at index 1"),
                         std::invalid_argument);
    CHECK_THROWS_AS(t.target->extend(std::vector<Token>{-1}), std::invalid_argument);
    CHECK(t.target->length() == 3);
  }
}

TEST_SUITE("engine_forward / the KV cache and rollback") {
  TEST_CASE("tiny model: a prefill gives the same logits as one token at a time") {
    Tiny t = make_tiny(TinyLlamaSpec{});
    const std::vector<Token> seq = ids(40, 96, 3);
    const Logits all = t.target->extend(seq);
    t.target->truncate(0);
    const Logits one = stepwise(*t.target, seq);
    CHECK(max_abs_diff(all, one) <= 1e-5);
  }

  TEST_CASE("tiny model: a prefill longer than one chunk equals the same tokens in pieces") {
    TinyLlamaSpec s;
    s.n_ctx = 1200;
    Tiny t = make_tiny(s);
    const std::vector<Token> seq = ids(1100, 96, 4);  // > 512: runs as three chunks
    const Logits all = t.target->extend(seq);
    t.target->truncate(0);
    Logits pieces(1100, 96);
    for (int at = 0; at < 1100; at += 300) {
      const int m = std::min(300, 1100 - at);
      const Logits l =
          t.target->extend(std::span(seq).subspan(static_cast<size_t>(at), static_cast<size_t>(m)));
      std::copy(l.data(), l.data() + static_cast<size_t>(m) * 96, pieces.row(at).data());
    }
    CHECK(max_abs_diff(all, pieces) <= 1e-5);
  }

  TEST_CASE("tiny model: append computes no logits but leaves the same cache as extend") {
    TinyLlamaSpec s;
    s.n_ctx = 1200;
    Tiny t = make_tiny(s);
    const std::vector<Token> seq = ids(600, 96, 9);  // > 512: append also runs in chunks
    const std::span<const Token> head = std::span(seq).first(590),
                                 tail = std::span(seq).subspan(590);
    t.target->extend(head);
    const Logits after_extend = t.target->extend(tail);
    t.target->truncate(0);
    t.target->append(head);
    CHECK(t.target->length() == 590);
    CHECK(std::equal(head.begin(), head.end(), t.target->tokens().begin()));
    const Logits after_append = t.target->extend(tail);
    CHECK(max_abs_diff(after_extend, after_append) == 0.0);
    // The same checks as extend, naming append, and nothing changes.
    CHECK_THROWS_WITH_AS(t.target->append(std::vector<Token>{1, 96}),
                         doctest::Contains("CpuLlama::append: token id 96 at index 1"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(t.target->append(ids(700, 96, 2)),
                         doctest::Contains("maximum context of 1200"), ContextOverflow);
    CHECK_THROWS_AS(t.target->append(std::vector<Token>{}), std::invalid_argument);
    CHECK(t.target->length() == 600);
  }

  TEST_CASE("bad options are rejected naming the field") {
    // threads sizes per-thread buffers and the OpenMP team: a huge count used to go through.
    for (int bad : {-1, kMaxCpuThreads + 1, 1 << 30}) {
      CAPTURE(bad);
      CHECK_THROWS_WITH_AS(make_tiny(TinyLlamaSpec{}, {.threads = bad}),
                           doctest::Contains("threads must be in [0, 1024]"),
                           std::invalid_argument);
    }
    CHECK_THROWS_WITH_AS(make_tiny(TinyLlamaSpec{}, {.max_context = -1}),
                         doctest::Contains("max_context must be >= 0"), std::invalid_argument);
    // A kernel outside the enum (a bad cast from a config file) ran every matrix product as a
    // no-op: all-zero logits, and no error.
    CHECK_THROWS_WITH_AS(make_tiny(TinyLlamaSpec{}, {.kernel = static_cast<cpu::MatmulKernel>(7)}),
                         doctest::Contains("kernel 7 is not a MatmulKernel"),
                         std::invalid_argument);
    CHECK(make_tiny(TinyLlamaSpec{}, {.threads = 3}).target->threads() == 3);
  }

  TEST_CASE("tiny model: truncate then re-extend reproduces the logits") {
    Tiny t = make_tiny(TinyLlamaSpec{});
    const std::vector<Token> seq = ids(30, 96, 5);
    t.target->extend(std::span(seq).first(20));
    const Logits first = t.target->extend(std::span(seq).subspan(20));
    t.target->truncate(20);
    t.target->extend(std::vector<Token>{7, 8, 9, 10, 11, 12});  // rejected drafts
    t.target->truncate(20);
    CHECK(t.target->length() == 20);
    const Logits again = t.target->extend(std::span(seq).subspan(20));
    CHECK(max_abs_diff(first, again) == 0.0);
    CHECK(std::vector<Token>(t.target->tokens().begin(), t.target->tokens().end()) == seq);
  }

  TEST_CASE("context overflow throws ContextOverflow naming the limit and changes nothing") {
    TinyLlamaSpec s;
    s.n_ctx = 64;
    Tiny t = make_tiny(s);
    t.target->extend(ids(60, 96, 6));
    CHECK_THROWS_WITH_AS(t.target->extend(ids(5, 96, 7)),
                         doctest::Contains("maximum context of 64"), ContextOverflow);
    CHECK(t.target->length() == 60);
    t.target->extend(ids(4, 96, 7));  // exactly full is fine
    CHECK(t.target->length() == 64);
    CpuLlamaOptions o;
    o.max_context = 10;  // a smaller configured maximum wins
    Tiny small = make_tiny(s, o);
    CHECK(small.target->max_length() == 10);
    CHECK_THROWS_AS(small.target->extend(ids(11, 96, 8)), ContextOverflow);
  }

  TEST_CASE("too many tokens is a ContextOverflow before any logits are allocated") {
    // extend() used to allocate (and zero) its tokens x vocab result before checking the
    // length: a long document passed to a short-context model took gigabytes (or ended in
    // std::bad_alloc, not the ContextOverflow the header promises) before the error. Here
    // 65536 tokens x 4096 vocabulary is 1 GiB of logits; the peak RSS must not grow by it.
    TinyLlamaSpec s;
    s.n_vocab = 4096;
    s.n_ctx = 64;
    Tiny t = make_tiny(s);
    std::vector<Token> many(65536, 1);
    auto peak_mib = [] {
      rusage u{};
      getrusage(RUSAGE_SELF, &u);
      return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
    };
    const double before = peak_mib();
    CHECK_THROWS_AS(t.target->extend(many), ContextOverflow);
    many.back() = 4096;  // and a bad id too: still rejected before anything is allocated
    CHECK_THROWS_AS(t.target->extend(many), std::invalid_argument);
    CHECK(peak_mib() - before < 256.0);
    CHECK(t.target->length() == 0);
  }

  TEST_CASE("truncate outside 0..length throws out_of_range") {
    Tiny t = make_tiny(TinyLlamaSpec{});
    t.target->extend(ids(5, 96, 9));
    CHECK_THROWS_AS(t.target->truncate(6), std::out_of_range);
    CHECK_THROWS_AS(t.target->truncate(-1), std::out_of_range);
    t.target->truncate(0);
    CHECK(t.target->length() == 0);
  }

  TEST_CASE("SmolLM2: a prefill gives the same logits as one token at a time") {
    CpuLlama& m = real_model();
    const std::vector<Token>& seq = llamacpp_fixture().seqs.at(0).tokens;
    const std::span<const Token> part = std::span(seq).first(std::min<size_t>(seq.size(), 48));
    const Logits all = m.extend(part);
    m.truncate(0);
    const Logits one = stepwise(m, part);
    const double d = max_abs_diff(all, one);
    MESSAGE("max |prefill - stepwise| = ", d);
    CHECK(d <= 1e-4);
  }

  TEST_CASE("SmolLM2: truncate then re-extend reproduces the logits") {
    CpuLlama& m = real_model();
    const std::vector<Token>& seq = llamacpp_fixture().seqs.at(1).tokens;
    m.extend(std::span(seq).first(40));
    const Logits first = m.extend(std::span(seq).subspan(40, 6));
    m.truncate(40);
    m.extend(std::span(seq).subspan(0, 6));  // six wrong drafts
    m.truncate(40);
    const Logits again = m.extend(std::span(seq).subspan(40, 6));
    CHECK(max_abs_diff(first, again) == 0.0);
  }
}

TEST_SUITE("engine_forward / checking against llama.cpp") {
  // The fixture, the noise measure and the thresholds are in tests/support/llamacpp_fixture.h,
  // shared with CudaLlama's tests, which say why the comparison is not exact.
  TEST_CASE("llama.cpp's one-pass and one-token-at-a-time logits differ only by rounding") {
    const SelfNoise sn = llamacpp_self_noise();
    MESSAGE("llama.cpp against itself: top-1 ", sn.top1_same, " / ", sn.positions, ", mean |diff| ",
            sn.diff.mean(), ", max |diff| ", sn.diff.worst);
    CHECK(sn.positions >= 500);
    // The fixture's two passes must be of the same model and settings: a rounding-level
    // difference, not a different computation.
    CHECK(sn.top1_same >= 0.95 * sn.positions);
    CHECK(sn.diff.mean() <= 0.15);
    CHECK(sn.diff.worst <= kLlamacppLogitTol);
  }

  TEST_CASE("top-1 agrees with llama.cpp wherever llama.cpp has one answer") {
    check_top1_against_llamacpp(compare_with_llamacpp(real_model()));
  }

  TEST_CASE("logits agree with llama.cpp within llama.cpp's own rounding noise") {
    check_logits_against_llamacpp(compare_with_llamacpp(real_model()));
  }
}

TEST_SUITE("engine_forward / speculative decoding on SmolLM2") {
  void check_identity(int k) {
    CpuLlama& m = real_model();
    const Fixture& f = llamacpp_fixture();
    REQUIRE(f.spec_prompts.size() >= 5);
    long long runs = 0, emitted = 0;
    for (size_t i = 0; i < f.spec_prompts.size(); ++i) {
      DecodeConfig dc;
      dc.max_new_tokens = 40;
      dc.k = k;
      m.truncate(0);
      const GenerationResult base = run_baseline(m, f.spec_prompts[i], dc);
      m.truncate(0);
      PromptLookupDrafter drafter(2);
      const GenerationResult spec =
          run_speculative(m, drafter, greedy_verify_rule(), f.spec_prompts[i], dc);
      INFO("prompt ", i, " k=", k);
      CHECK(spec.tokens == base.tokens);
      runs += spec.stats.target_runs;
      emitted += static_cast<long long>(spec.tokens.size());
    }
    MESSAGE("k=", k, ": ", emitted, " tokens in ", runs, " verify passes");
    CHECK(runs < emitted);  // the prompts are copy-heavy: some drafts must have been accepted
  }

  TEST_CASE("greedy prompt lookup equals plain greedy decoding with k 1") { check_identity(1); }
  TEST_CASE("greedy prompt lookup equals plain greedy decoding with k 3") { check_identity(3); }
  TEST_CASE("greedy prompt lookup equals plain greedy decoding with k 5") { check_identity(5); }
}
