#pragma once
// Builds small GGUF v3 files in memory, for reader tests and fuzzing.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace speclab::testing {

class GgufWriter {
 public:
  void kv_u32(const std::string& key, std::uint32_t v) {
    key_(key, 4);
    put(v);
  }
  void kv_f32(const std::string& key, float v) {
    key_(key, 6);
    put(v);
  }
  void kv_string(const std::string& key, const std::string& v) {
    key_(key, 8);
    str(v);
  }
  void kv_strings(const std::string& key, const std::vector<std::string>& v) {
    key_(key, 9);
    put(std::uint32_t{8});
    put(static_cast<std::uint64_t>(v.size()));
    for (const auto& s : v) str(s);
  }
  void kv_i32s(const std::string& key, const std::vector<std::int32_t>& v) {
    key_(key, 9);
    put(std::uint32_t{5});
    put(static_cast<std::uint64_t>(v.size()));
    for (auto x : v) put(x);
  }
  // A tensor with the given ggml type id, shape (ggml order) and raw data bytes.
  void tensor(const std::string& name, std::uint32_t type, std::vector<std::uint64_t> shape,
              std::vector<std::uint8_t> data) {
    tensors_.push_back({name, type, std::move(shape), std::move(data)});
  }

  // Tensor name -> the data offset to write for it instead of its own place (a malformed file
  // when it overlaps another tensor's data).
  std::map<std::string, std::uint64_t> data_offset;

  std::vector<std::uint8_t> build(std::uint32_t alignment = 32) const {
    std::vector<std::uint8_t> out;
    auto w = [&](const void* p, size_t n) { append(out, p, n); };
    const std::uint32_t magic = 0x46554747, version = 3;
    const std::uint64_t nt = tensors_.size(), nkv = n_kv_;
    w(&magic, 4);
    w(&version, 4);
    w(&nt, 8);
    w(&nkv, 8);
    w(kv_.data(), kv_.size());
    std::uint64_t offset = 0;
    std::vector<std::uint64_t> offsets;
    for (const auto& t : tensors_) {
      const std::uint64_t len = t.name.size();
      w(&len, 8);
      w(t.name.data(), len);
      const auto nd = static_cast<std::uint32_t>(t.shape.size());
      w(&nd, 4);
      for (auto d : t.shape) w(&d, 8);
      w(&t.type, 4);
      const auto forced = data_offset.find(t.name);
      const std::uint64_t at = forced == data_offset.end() ? offset : forced->second;
      w(&at, 8);
      offsets.push_back(at);
      offset += (t.data.size() + alignment - 1) / alignment * alignment;
    }
    out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
    const size_t start = out.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {  // each at its offset, over what is there
      const auto& data = tensors_[i].data;
      out.resize(std::max(out.size(), start + offsets[i] + data.size()), 0);
      if (!data.empty()) std::memcpy(out.data() + start + offsets[i], data.data(), data.size());
    }
    return out;
  }

 private:
  struct T {
    std::string name;
    std::uint32_t type;
    std::vector<std::uint64_t> shape;
    std::vector<std::uint8_t> data;
  };
  // resize + memcpy rather than insert(): GCC 12 warns falsely on vector::insert of raw bytes.
  static void append(std::vector<std::uint8_t>& out, const void* p, size_t n) {
    if (n == 0) return;
    const size_t old = out.size();
    out.resize(old + n);
    std::memcpy(out.data() + old, p, n);
  }
  template <typename X>
  void put(X v) {
    append(kv_, &v, sizeof v);
  }
  void str(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    append(kv_, s.data(), s.size());
  }
  void key_(const std::string& key, std::uint32_t type) {
    str(key);
    put(type);
    ++n_kv_;
  }
  std::vector<std::uint8_t> kv_;
  std::uint64_t n_kv_ = 0;
  std::vector<T> tensors_;
};

}  // namespace speclab::testing
