#include "mini_engine/targets/weight_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace speclab::cpu {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

WeightArena::WeightArena(std::size_t bytes) : capacity_(aligned_size(bytes)) {
  if (capacity_ < bytes) throw std::bad_alloc();  // the rounding wrapped around
  bytes = capacity_;
  if (bytes == 0) return;
  const bool huge = bytes >= kHugePage;
  // Anonymous memory comes zeroed. For a huge block, map 2 MiB more than needed and use the first
  // 2 MiB boundary inside; the rest is unmapped again.
  const std::size_t want = huge ? (bytes + kHugePage - 1) / kHugePage * kHugePage : bytes;
  const std::size_t map_bytes = huge ? want + kHugePage : want;
  void* m = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  auto* base = static_cast<std::uint8_t*>(m);
  if (huge) {
    const auto addr = reinterpret_cast<std::uintptr_t>(base);
    const std::size_t head = (kHugePage - addr % kHugePage) % kHugePage;
    const std::size_t tail = map_bytes - head - want;
    if (head > 0) ::munmap(base, head);
    if (tail > 0) ::munmap(base + head + want, tail);
    base += head;
#ifdef MADV_HUGEPAGE
    advised_ = ::madvise(base, want, MADV_HUGEPAGE) == 0;
#endif
  }
  data_ = base;
  mapping_ = base;
  mapping_bytes_ = want;
}

WeightArena::~WeightArena() { release(); }

WeightArena::WeightArena(WeightArena&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      used_(std::exchange(other.used_, 0)),
      mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(std::exchange(other.mapping_bytes_, 0)),
      advised_(std::exchange(other.advised_, false)) {}

WeightArena& WeightArena::operator=(WeightArena&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    used_ = std::exchange(other.used_, 0);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    advised_ = std::exchange(other.advised_, false);
  }
  return *this;
}

void WeightArena::release() noexcept {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
}

std::uint8_t* WeightArena::take(std::size_t bytes) {
  const std::size_t need = aligned_size(bytes);
  if (need < bytes || need > capacity_ - used_) {
    throw std::length_error("WeightArena::take: " + std::to_string(bytes) + " bytes asked, " +
                            std::to_string(capacity_ - used_) + " of " + std::to_string(capacity_) +
                            " left");
  }
  std::uint8_t* p = data_ + used_;
  used_ += need;
  return p;
}

std::size_t WeightArena::huge_page_bytes() const {
  if (capacity_ == 0) return 0;
  const auto lo = reinterpret_cast<std::uintptr_t>(data_), hi = lo + capacity_;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool overlaps = false;
  std::size_t total = 0;
  while (std::getline(smaps, line)) {
    // A mapping starts with "lo-hi perms ..."; its fields follow as "Name:   N kB".
    std::uintptr_t m_lo = 0, m_hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> m_lo >> dash >> m_hi && dash == '-') {
      overlaps = m_lo < hi && lo < m_hi;
    } else if (overlaps && line.rfind("AnonHugePages:", 0) == 0) {
      std::istringstream field(line.substr(14));
      std::size_t kib = 0;
      if (field >> kib) total += kib * 1024;
    }
  }
  return std::min(total, capacity_);  // the mapping runs on to the end of its last huge page
}

}  // namespace speclab::cpu
