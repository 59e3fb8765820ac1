#pragma once
// WeightArena: one block of memory for a model's repacked weights, asking the kernel for
// transparent huge pages.
//
// Why: a decode step streams every weight matrix once, 93.7 MiB for SmolLM2-135M. In 4 KiB pages
// that is some 24,000 pages per step, each a TLB miss and a page walk every step (in a virtual
// machine a two-level one). Debian and Ubuntu ship transparent huge pages in "madvise" mode, so a
// program gets 2 MiB pages only where it asks: the arena asks (madvise(MADV_HUGEPAGE)) for a
// 2 MiB-aligned block, and the matrices of a whole model share it, where one allocation per matrix
// (most are under 2 MiB) could not use a huge page at all. Measured on a 2-core Xeon VM
// (speclab_bench_model, 10 runs alternating with per-matrix allocations, 2026-11-28): a decode
// step 4.03 -> 3.53 ms, a 6-token verify pass 7.67 -> 7.28 ms (medians).
//
// Where the kernel has no transparent huge pages (or outside Linux) the arena is ordinary
// 64-byte-aligned memory: the same bytes, only the page size differs.
#include <cstddef>
#include <cstdint>

namespace speclab::cpu {

class WeightArena {
 public:
  WeightArena() = default;  // holds nothing: take() refuses any bytes
  // Reserves `bytes` zeroed bytes, rounded up to a multiple of 64 (capacity()). A block of 2 MiB or
  // more starts on a 2 MiB boundary and is advised for huge pages; a smaller one is only 64-byte
  // aligned (a huge page would be mostly waste). Throws std::bad_alloc when the memory cannot be
  // had.
  explicit WeightArena(std::size_t bytes);
  ~WeightArena();
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;
  WeightArena(WeightArena&& other) noexcept;
  WeightArena& operator=(WeightArena&& other) noexcept;

  // The next `bytes` bytes of the block, starting 64-byte aligned (each take() starts where the
  // previous one ended, rounded up to 64). Valid, and owned by the arena, until it is destroyed.
  // Throws std::length_error, changing nothing, when they do not fit in what is left.
  std::uint8_t* take(std::size_t bytes);

  std::size_t capacity() const { return capacity_; }
  std::size_t used() const { return used_; }
  const std::uint8_t* data() const { return data_; }
  // True when the kernel accepted the huge-page advice for the block (false for a small block,
  // outside Linux, or on a kernel built without transparent huge pages). Whether it then found
  // free 2 MiB pages is the kernel's business: /proc/self/smaps shows AnonHugePages.
  bool huge_pages_advised() const { return advised_; }
  // How many of the block's bytes sit in huge pages now: the AnonHugePages of the mappings that
  // overlap it in /proc/self/smaps, at most capacity() (0 where there is no such file to read).
  // Reads a file; for reports.
  std::size_t huge_page_bytes() const;

  // The rounding take() applies: the bytes a run of takes of these sizes needs in all is the sum
  // of aligned_size() over them.
  static std::size_t aligned_size(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

 private:
  void release() noexcept;

  std::uint8_t* data_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
  void* mapping_ = nullptr;  // what to give back: an mmap'd region, or an operator new block
  std::size_t mapping_bytes_ = 0;
  bool advised_ = false;
};

}  // namespace speclab::cpu
