#pragma once
// A reader for GGUF version 3 model files (the llama.cpp format), memory-mapped.
//
// Every count, length, offset and tensor extent is checked against the file size before it is
// used, so a malformed file raises GgufError naming the field and its byte offset; nothing reads
// out of bounds.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini_engine/core/printable.h"
#include "mini_engine/model/quant.h"

namespace speclab {

class GgufError : public std::runtime_error {
 public:
  // The message is kept printable(): it quotes names from the file, which may hold any byte.
  explicit GgufError(const std::string& message) : std::runtime_error(printable(message)) {}
};

// GGUF metadata value types (as stored in the file).
enum class GgufType : std::uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

// One metadata value. Scalars are widened: integers and bools to `integer`, floats to `real`.
// Arrays keep their element type in `array_type` and their elements in `strings`, `integers`
// or `reals`, whichever fits.
struct GgufValue {
  GgufType type = GgufType::UINT32;
  GgufType array_type = GgufType::UINT32;
  std::int64_t integer = 0;
  double real = 0.0;
  std::string string;
  std::vector<std::string> strings;
  std::vector<std::int64_t> integers;
  std::vector<double> reals;
};

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<std::int64_t> shape;  // ggml order: shape[0] is the contiguous (row) dimension
  std::int64_t n_elements = 0;
  std::uint64_t n_bytes = 0;
  std::uint64_t file_offset = 0;       // absolute byte offset of the data in the file
  const std::uint8_t* data = nullptr;  // into the mapping; valid while the GgufFile lives

  std::int64_t rows() const;  // product of shape[1..]
  std::int64_t row_length() const { return shape.empty() ? 0 : shape[0]; }
};

class GgufFile {
 public:
  // Maps and parses `path`. Throws std::runtime_error when it cannot be opened, stat'ed or
  // mapped, and GgufError for what it holds (an empty file and a path that is not a regular file
  // included).
  static GgufFile open(const std::string& path);
  // Parses bytes already in memory; `bytes` must outlive the GgufFile. For tests and fuzzing.
  // Throws GgufError; `name` stands for the path in its messages.
  static GgufFile parse(std::span<const std::uint8_t> bytes, std::string name = "<memory>");

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile() = default;

  const std::string& path() const { return path_; }
  std::uint32_t version() const { return version_; }
  std::uint32_t alignment() const { return alignment_; }

  // Metadata lookups. find() returns nullptr when the key is absent. The typed getters throw
  // GgufError naming the key when it is absent or has another type (get_real also takes any
  // integer or bool type and widens it; get_int takes no float; get_strings wants an array of
  // strings, get_integers an array of any integer or bool type); the *_or forms return the
  // default when absent and throw as the plain getters when the key has another type.
  // Pointers and references returned here, and the tensors' data, stay valid while this
  // GgufFile (or the one it is moved into) lives.
  const GgufValue* find(const std::string& key) const;
  std::int64_t get_int(const std::string& key) const;
  std::int64_t get_int_or(const std::string& key, std::int64_t fallback) const;
  double get_real(const std::string& key) const;
  double get_real_or(const std::string& key, double fallback) const;
  const std::string& get_string(const std::string& key) const;
  std::string get_string_or(const std::string& key, const std::string& fallback) const;
  const std::vector<std::string>& get_strings(const std::string& key) const;
  const std::vector<std::int64_t>& get_integers(const std::string& key) const;
  const std::map<std::string, GgufValue>& metadata() const { return kv_; }

  // Tensors in file order; tensor() returns nullptr when absent, require_tensor() throws.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* tensor(const std::string& name) const;
  const GgufTensor& require_tensor(const std::string& name) const;

 private:
  GgufFile() = default;
  void parse_all(std::span<const std::uint8_t> bytes);

  std::string path_;
  std::shared_ptr<void> mapping_;  // keeps the mmap alive (null for parse())
  std::uint32_t version_ = 0;
  std::uint32_t alignment_ = 32;
  std::map<std::string, GgufValue> kv_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace speclab
