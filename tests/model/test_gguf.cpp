// The GGUF reader on small synthetic files: parsing, lookups and every kind of malformed input.
// This file is also built with AddressSanitizer (gguf_fuzz_asan) so the fuzz cases prove that no
// malformed file reads out of bounds.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gguf_writer.h"
#include "mini_engine/model/gguf.h"
#include "mini_engine/sampling/rng.h"

using namespace speclab;
using speclab::testing::GgufWriter;

namespace {

std::vector<std::uint8_t> sample_file() {
  GgufWriter w;
  w.kv_string("general.architecture", "llama");
  w.kv_u32("llama.block_count", 2);
  w.kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.kv_strings("tokenizer.ggml.tokens", {"a", "b", "ab"});
  w.kv_i32s("tokenizer.ggml.token_type", {1, 1, 3});
  std::vector<std::uint8_t> f32(4 * 8);
  for (int i = 0; i < 8; ++i) {
    const float x = static_cast<float>(i);
    std::memcpy(f32.data() + 4 * i, &x, 4);
  }
  w.tensor("norm.weight", 0, {8}, f32);
  std::vector<std::uint8_t> q41(2 * 20, 0x11);
  w.tensor("blk.0.attn_q.weight", 3, {32, 2}, q41);
  std::vector<std::uint8_t> q8(34, 0x02);
  w.tensor("token_embd.weight", 8, {32, 1}, q8);
  return w.build();
}

}  // namespace

TEST_SUITE("model / GGUF reader") {
  TEST_CASE("a valid file parses: metadata, tensor shapes, types and data offsets") {
    const auto bytes = sample_file();
    const GgufFile f = GgufFile::parse(bytes);
    CHECK(f.version() == 3);
    CHECK(f.get_string("general.architecture") == "llama");
    CHECK(f.get_int("llama.block_count") == 2);
    CHECK(f.get_real("llama.attention.layer_norm_rms_epsilon") == doctest::Approx(1e-5));
    CHECK(f.get_strings("tokenizer.ggml.tokens") == std::vector<std::string>{"a", "b", "ab"});
    CHECK(f.get_integers("tokenizer.ggml.token_type") == std::vector<std::int64_t>{1, 1, 3});
    CHECK(f.tensors().size() == 3);
    const GgufTensor& q = f.require_tensor("blk.0.attn_q.weight");
    CHECK(q.type == GgmlType::Q4_1);
    CHECK(q.shape == std::vector<std::int64_t>{32, 2});
    CHECK(q.rows() == 2);
    CHECK(q.n_bytes == 40);
    CHECK(q.file_offset % 32 == 0);
    const GgufTensor& n = f.require_tensor("norm.weight");
    float x;
    std::memcpy(&x, n.data + 4 * 5, 4);
    CHECK(x == 5.0f);
  }

  TEST_CASE("missing keys, wrong types and missing tensors are named in the error") {
    const auto bytes = sample_file();
    const GgufFile f = GgufFile::parse(bytes);
    CHECK_THROWS_WITH_AS(f.get_int("llama.context_length"),
                         doctest::Contains("'llama.context_length' is missing"), GgufError);
    CHECK_THROWS_WITH_AS(f.get_string("llama.block_count"),
                         doctest::Contains("is uint32, expected a string"), GgufError);
    CHECK(f.get_int_or("llama.context_length", 77) == 77);
    // get_real widens an integer (gguf.h says so): a float key written as an integer still reads.
    CHECK(f.get_real("llama.block_count") == 2.0);
    CHECK_THROWS_WITH_AS(f.get_real("general.architecture"), doctest::Contains("expected a number"),
                         GgufError);
    CHECK_THROWS_WITH_AS(f.get_int("llama.attention.layer_norm_rms_epsilon"),
                         doctest::Contains("expected an integer"), GgufError);
    CHECK_THROWS_WITH_AS(f.require_tensor("output.weight"),
                         doctest::Contains("tensor 'output.weight' is missing"), GgufError);
  }

  TEST_CASE("the *_or getters fall back only when the key is absent, arrays by element type") {
    const auto bytes = sample_file();
    const GgufFile f = GgufFile::parse(bytes);
    CHECK(f.find("no.such.key") == nullptr);
    CHECK(f.tensor("no.such.tensor") == nullptr);
    CHECK(f.get_real_or("no.such.key", 0.25) == 0.25);
    CHECK(f.get_string_or("no.such.key", "fallback") == "fallback");
    CHECK(f.get_string_or("general.architecture", "fallback") == "llama");
    // A key that is present with another type is an error, not a reason to fall back.
    CHECK_THROWS_WITH_AS(f.get_int_or("general.architecture", 7),
                         doctest::Contains("expected an integer"), GgufError);
    CHECK_THROWS_WITH_AS(f.get_real_or("tokenizer.ggml.tokens", 0.5),
                         doctest::Contains("expected a number"), GgufError);
    CHECK_THROWS_WITH_AS(f.get_string_or("llama.block_count", "x"),
                         doctest::Contains("expected a string"), GgufError);
    CHECK_THROWS_WITH_AS(f.get_strings("tokenizer.ggml.token_type"),
                         doctest::Contains("is array of int32, expected an array of strings"),
                         GgufError);
    CHECK_THROWS_WITH_AS(f.get_integers("tokenizer.ggml.tokens"),
                         doctest::Contains("is array of string, expected an array of integers"),
                         GgufError);
    CHECK_THROWS_WITH_AS(f.get_integers("llama.block_count"),
                         doctest::Contains("expected an array of integers"), GgufError);
    CHECK_THROWS_WITH_AS(f.get_strings("no.such.key"), doctest::Contains("is missing"), GgufError);
  }

  TEST_CASE("wrong magic, wrong version and an empty buffer are rejected") {
    auto bytes = sample_file();
    bytes[0] = 'X';
    CHECK_THROWS_WITH_AS(GgufFile::parse(bytes), doctest::Contains("wrong magic"), GgufError);
    bytes = sample_file();
    bytes[4] = 2;
    CHECK_THROWS_WITH_AS(GgufFile::parse(bytes), doctest::Contains("version 2"), GgufError);
    CHECK_THROWS_WITH_AS(GgufFile::parse(std::span<const std::uint8_t>()),
                         doctest::Contains("truncated while reading magic"), GgufError);
  }

  TEST_CASE("an unsupported tensor type is named") {
    GgufWriter w;
    w.tensor("x", 6 /* Q5_0 */, {32}, std::vector<std::uint8_t>(22));
    const auto bytes = w.build();
    CHECK_THROWS_WITH_AS(
        GgufFile::parse(bytes),
        doctest::Contains("tensor 'x' has ggml type id 6, which SpecLab does not support"),
        GgufError);
  }

  TEST_CASE("a NUL byte in a name from the file is shown, and does not cut the message short") {
    // what() is a C string: a key holding a NUL ended the message at it, byte offset and all.
    GgufWriter w;
    w.kv_u32(std::string("a\0b", 3), 1);
    w.kv_u32(std::string("a\0b", 3), 2);
    CHECK_THROWS_WITH_AS(GgufFile::parse(w.build()),
                         doctest::Contains("duplicate metadata key 'a\\x00b' (at byte offset"),
                         GgufError);
    GgufWriter t;
    t.tensor(std::string("x\0", 2), 6 /* Q5_0 */, {32}, std::vector<std::uint8_t>(22));
    CHECK_THROWS_WITH_AS(GgufFile::parse(t.build()),
                         doctest::Contains("tensor 'x\\x00' has ggml type id 6"), GgufError);
  }

  TEST_CASE("a name from the file that runs on for megabytes is cut short in the message") {
    // A corrupt length field makes a key or tensor name swallow the rest of the file: the
    // message quoted all of it, tens of MB of escaped binary on the terminal.
    const auto check_clipped = [](const std::vector<std::uint8_t>& file, const char* start,
                                  const char* end) {
      try {
        GgufFile::parse(file);
        FAIL("no GgufError");
      } catch (const GgufError& e) {
        const std::string what = e.what();
        INFO(what.substr(0, 300));
        CAPTURE(start);
        CAPTURE(end);
        CHECK(what.size() < 600);
        CHECK(what.find(start) != std::string::npos);
        CHECK(what.find(end) != std::string::npos);
      }
    };
    const std::string huge = "general.type" + std::string(1 << 20, '\x01');
    GgufWriter w;
    w.kv_u32(huge, 1);
    w.kv_u32(huge, 2);
    check_clipped(w.build(), "duplicate metadata key 'general.type\\x01",
                  "... (1048588 bytes in all)' (at byte offset");
    GgufWriter t;
    t.tensor("blk.0." + std::string(1 << 20, 'x'), 6 /* Q5_0 */, {32},
             std::vector<std::uint8_t>(22));
    check_clipped(t.build(), "tensor 'blk.0.xxx", "... (1048582 bytes in all)' has ggml type id 6");
  }

  TEST_CASE("a tensor whose extent runs past the end of the file is rejected") {
    auto bytes = sample_file();
    bytes.resize(bytes.size() - 10);
    CHECK_THROWS_WITH_AS(GgufFile::parse(bytes), doctest::Contains("runs past the end of the file"),
                         GgufError);
  }

  TEST_CASE("tensors whose data overlap are rejected, naming both") {
    GgufWriter w;
    w.tensor("a.weight", 0, {16}, std::vector<std::uint8_t>(64, 0));
    w.tensor("b.weight", 0, {16}, std::vector<std::uint8_t>(64, 0));
    w.data_offset["b.weight"] = 32;  // inside a.weight's 64 bytes
    CHECK_THROWS_WITH_AS(
        GgufFile::parse(w.build()),
        doctest::Contains("the data of tensors 'a.weight' (bytes 0..64 of the data section) and "
                          "'b.weight' (bytes 32..96) overlap"),
        GgufError);
    w.data_offset["b.weight"] = 64;  // right after it: fine
    CHECK_NOTHROW(GgufFile::parse(w.build()));
  }

  TEST_CASE("an absurd count or string length is rejected before anything is allocated") {
    auto bytes = sample_file();
    const std::uint64_t huge = 1ULL << 60;
    std::memcpy(bytes.data() + 16, &huge, 8);  // metadata key/value count
    CHECK_THROWS_WITH_AS(GgufFile::parse(bytes), doctest::Contains("metadata key/value count"),
                         GgufError);
    bytes = sample_file();
    std::memcpy(bytes.data() + 24, &huge, 8);  // length of the first key
    CHECK_THROWS_WITH_AS(GgufFile::parse(bytes), doctest::Contains("runs past the end"), GgufError);
  }

  TEST_CASE("a string of an array that runs past the end is named with its index") {
    // "element of array 'tokenizer.ggml.tokens' length ... runs past the end" did not say which
    // of 49152 strings it was.
    auto bytes = sample_file();
    const std::uint8_t ab[] = {2, 0, 0, 0, 0, 0, 0, 0, 'a', 'b'};  // the third token, "ab"
    const auto at = std::search(bytes.begin(), bytes.end(), std::begin(ab), std::end(ab));
    REQUIRE(at != bytes.end());
    const std::uint64_t huge = 1ULL << 40;
    std::memcpy(&*at, &huge, 8);
    CHECK_THROWS_WITH_AS(GgufFile::parse(bytes),
                         doctest::Contains("element 2 of array 'tokenizer.ggml.tokens' length "
                                           "1099511627776 runs past the end of the file"),
                         GgufError);
  }

  TEST_CASE("truncation at every offset gives a GgufError, never a crash") {
    const auto bytes = sample_file();
    int errors = 0;
    for (size_t len = 0; len < bytes.size(); ++len) {
      const std::span<const std::uint8_t> cut(bytes.data(), len);
      try {
        GgufFile::parse(cut);
      } catch (const GgufError&) {
        ++errors;
      }
    }
    // Every strict prefix is invalid: the last tensor's data always ends the file.
    CHECK(errors == static_cast<int>(bytes.size()));
  }

  TEST_CASE("random byte flips give a clean result or a GgufError, never a crash") {
    const auto original = sample_file();
    int parsed = 0, rejected = 0;
    for (std::uint64_t trial = 0; trial < 3000; ++trial) {
      auto bytes = original;
      const int flips = 1 + static_cast<int>(counter_hash(11, trial, 0) % 4);
      for (int j = 0; j < flips; ++j) {
        const auto h = counter_hash(12, trial, static_cast<std::uint64_t>(j));
        bytes[h % bytes.size()] ^= static_cast<std::uint8_t>(1u << ((h >> 32) % 8));
      }
      try {
        const GgufFile f = GgufFile::parse(bytes);
        for (const auto& t : f.tensors()) {
          CHECK(t.file_offset + t.n_bytes <= bytes.size());
        }
        ++parsed;
      } catch (const GgufError&) {
        ++rejected;
      }
    }
    CHECK(parsed + rejected == 3000);
    CHECK(rejected > 0);
  }

  TEST_CASE("files on disk: a missing path, a folder, an empty file and a real round trip") {
    CHECK_THROWS_WITH_AS(GgufFile::open("/nonexistent/model.gguf"),
                         doctest::Contains("cannot open"), std::runtime_error);
    CHECK_THROWS_WITH_AS(GgufFile::open("/tmp"), doctest::Contains("/tmp: not a regular file"),
                         GgufError);
    char path[] = "/tmp/speclab_gguf_XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    CHECK_THROWS_WITH_AS(GgufFile::open(path), doctest::Contains("the file is empty"), GgufError);
    const auto bytes = sample_file();
    FILE* fp = std::fopen(path, "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), fp);
    std::fclose(fp);
    const GgufFile f = GgufFile::open(path);
    CHECK(f.tensors().size() == 3);
    std::remove(path);
  }
}
