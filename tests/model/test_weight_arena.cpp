// WeightArena: the memory a model's packed weights share (weight_arena.h), and PackedMatrix in it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mini_engine/targets/cpu_kernels.h"
#include "mini_engine/targets/weight_arena.h"
#include "tiny_llama.h"

using namespace speclab;
using namespace speclab::cpu;
using speclab::testing::make_matrix;
using speclab::testing::random_matrix_bytes;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// The VmFlags line of the /proc/self/smaps mapping that holds `p` ("" when none does or there is
// no /proc).
std::string vm_flags_at(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= a && a < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool kernel_has_transparent_huge_pages() {
  return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
}

}  // namespace

TEST_SUITE("weight arena") {
  TEST_CASE("take() hands out consecutive 64-byte-aligned zeroed pieces of the block") {
    WeightArena arena(1000);
    REQUIRE(arena.capacity() == 1024);  // rounded up to 64
    std::uint8_t* a = arena.take(10);
    std::uint8_t* b = arena.take(64);
    std::uint8_t* c = arena.take(65);
    CHECK(reinterpret_cast<std::uintptr_t>(a) % 64 == 0);
    CHECK(b - a == 64);
    CHECK(c - b == 64);
    CHECK(arena.used() == 64 + 64 + 128);
    CHECK(arena.data() == a);
    const std::vector<std::uint8_t> zeros(1024, 0);
    CHECK(std::vector<std::uint8_t>(a, a + zeros.size()) == zeros);
    CHECK(WeightArena::aligned_size(0) == 0);
    CHECK(WeightArena::aligned_size(1) == 64);
    CHECK(WeightArena::aligned_size(128) == 128);
  }

  TEST_CASE("take() past the block throws length_error naming the sizes and takes nothing") {
    WeightArena arena(256);
    arena.take(128);
    try {
      arena.take(129);  // 192 bytes once aligned, 128 left
      FAIL("take() past the block did not throw");
    } catch (const std::length_error& e) {
      CHECK(std::string(e.what()) == "WeightArena::take: 129 bytes asked, 128 of 256 left");
    }
    CHECK(arena.used() == 128);
    CHECK(arena.take(128) == arena.data() + 128);  // what was left is still there
    CHECK_THROWS_AS(arena.take(1), std::length_error);
    WeightArena empty;
    CHECK(empty.take(0) == empty.data());
    CHECK_THROWS_AS(empty.take(1), std::length_error);
  }

  TEST_CASE("a block of 2 MiB or more starts on a 2 MiB boundary and is advised for huge pages") {
    WeightArena big(5 * kMiB + 100);
    CHECK(reinterpret_cast<std::uintptr_t>(big.data()) % (2 * kMiB) == 0);
    std::uint8_t* p = big.take(5 * kMiB + 100);
    p[0] = 1;
    p[5 * kMiB + 99] = 2;  // the whole block is usable
    const std::string flags = vm_flags_at(big.data());
    INFO("VmFlags of the block: '", flags, "'");
    if (const char* emulator = std::getenv("SPECLAB_EMULATOR")) {
      // tools/arm_check: QEMU's user mode answers madvise with success and does nothing.
      MESSAGE("under ", emulator, ": the huge-page advice is not checked");
    } else {
      // A kernel with transparent huge pages takes the advice; where /proc can be read, the
      // mapping's flags show it ("hg": MADV_HUGEPAGE) exactly when the arena says so.
      if (kernel_has_transparent_huge_pages()) CHECK(big.huge_pages_advised());
      if (!flags.empty()) {
        CHECK(big.huge_pages_advised() == (flags.find(" hg") != std::string::npos));
      }
    }
    // Whether the kernel found free 2 MiB pages is up to it; what it reports must be whole pages,
    // at most the block.
    const std::size_t huge = big.huge_page_bytes();
    INFO("huge_page_bytes: ", huge);
    CHECK(huge <= big.capacity());
    CHECK((huge == big.capacity() || huge % (2 * kMiB) == 0));
    WeightArena small(kMiB);  // under a huge page: no advice
    CHECK_FALSE(small.huge_pages_advised());
    CHECK(vm_flags_at(small.data()).find(" hg") == std::string::npos);
  }

  TEST_CASE("moving an arena moves its block and leaves the moved-from arena empty") {
    WeightArena a(4096);
    std::uint8_t* p = a.take(64);
    p[0] = 7;
    WeightArena b(std::move(a));
    CHECK(b.data() == p);
    CHECK(b.used() == 64);
    CHECK(a.capacity() == 0);
    CHECK_THROWS_AS(a.take(1), std::length_error);
    WeightArena c(128);
    c = std::move(b);
    CHECK(c.data() == p);
    CHECK(c.data()[0] == 7);
  }

  TEST_CASE("matrices packed side by side in one arena multiply as when each has its own memory") {
    // The model's layout: several matrices back to back, each starting where the last ended.
    std::vector<std::vector<std::uint8_t>> bytes;
    std::vector<QuantMatrix> ws;
    const std::uint32_t types[] = {2u, 3u, 8u};
    const int rows[] = {17, 40, 5};
    for (int i = 0; i < 3; ++i) {
      bytes.push_back(random_matrix_bytes(types[i], rows[i], 96, 40 + i, 1.0f));
    }
    for (int i = 0; i < 3; ++i) ws.push_back(make_matrix(types[i], rows[i], 96, bytes[i]));
    std::size_t total = 0;
    for (const QuantMatrix& w : ws)
      total += WeightArena::aligned_size(PackedMatrix::packed_bytes(w));
    WeightArena arena(total);
    std::vector<PackedMatrix> in_arena;
    for (const QuantMatrix& w : ws) in_arena.emplace_back(w, arena);
    CHECK(arena.used() == total);
    CHECK_THROWS_AS(PackedMatrix(ws[0], arena), std::length_error);  // full
    CHECK(arena.used() == total);
    const int tokens = 6;
    std::vector<float> xf(static_cast<size_t>(tokens) * 96);
    for (size_t i = 0; i < xf.size(); ++i) xf[i] = static_cast<float>((i * 37) % 19) - 9.0f;
    QuantizedActs x;
    x.quantize(xf.data(), tokens, 96, 96);
    for (int i = 0; i < 3; ++i) {
      const PackedMatrix own(ws[static_cast<size_t>(i)]);
      std::vector<float> y_own(static_cast<size_t>(tokens) * rows[i]);
      std::vector<float> y_arena(y_own.size());
      matmul(own, x, y_own.data(), rows[i], 0, rows[i]);
      matmul(in_arena[static_cast<size_t>(i)], x, y_arena.data(), rows[i], 0, rows[i]);
      INFO("matrix ", i);
      CHECK(y_arena == y_own);
      CHECK(std::any_of(y_own.begin(), y_own.end(), [](float v) { return v != 0.0f; }));
    }
    // packed_bytes: 16-row groups x 32-column blocks x the (group, block) size padded to 64:
    // Q4_0 256 code bytes + 32 of scales -> 320, Q4_1 + 64 of scales and offsets -> 320, Q8_0
    // 512 + 32 -> 576.
    CHECK(PackedMatrix::packed_bytes(ws[0]) == 2 * 3 * 320);
    CHECK(PackedMatrix::packed_bytes(ws[1]) == 3 * 3 * 320);
    CHECK(PackedMatrix::packed_bytes(ws[2]) == 1 * 3 * 576);
  }

  TEST_CASE("packed_bytes refuses what the packed kernel refuses") {
    const auto bytes = random_matrix_bytes(3, 2, 64, 1, 1.0f);
    QuantMatrix w = make_matrix(3, 2, 64, bytes);
    w.cols = 48;
    CHECK_THROWS_AS(PackedMatrix::packed_bytes(w), std::invalid_argument);
    WeightArena arena(1 << 16);
    CHECK_THROWS_AS(PackedMatrix(w, arena), std::invalid_argument);
    CHECK(arena.used() == 0);
  }
}
