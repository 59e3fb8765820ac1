#include "mini_engine/model/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace speclab {
namespace {

constexpr std::uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr std::uint32_t kMaxDims = 4;

// A bounds-checked cursor over the file. Every read names the field it reads.
class Cursor {
 public:
  Cursor(std::span<const std::uint8_t> bytes, const std::string& file)
      : bytes_(bytes), file_(file) {}

  [[noreturn]] void fail(const std::string& what, std::uint64_t at) const {
    throw GgufError(file_ + ": " + what + " (at byte offset " + std::to_string(at) +
                    ", file size " + std::to_string(bytes_.size()) + ")");
  }
  std::uint64_t pos() const { return pos_; }
  std::uint64_t remaining() const { return bytes_.size() - pos_; }

  void need(std::uint64_t n, const std::string& field) const {
    if (n > remaining()) {
      fail("truncated while reading " + field + ": need " + std::to_string(n) + " bytes, " +
               std::to_string(remaining()) + " left",
           pos_);
    }
  }
  template <typename T>
  T read(const std::string& field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const std::string& field) {
    return read_string([&] { return field; });
  }
  // The same, with the field's name made by name() only for a message.
  template <class Name>
  std::string read_string(const Name& name) {
    const std::uint64_t at = pos_;
    if (remaining() < sizeof(std::uint64_t)) need(sizeof(std::uint64_t), name() + " length");
    const auto len = read<std::uint64_t>("");
    if (len > remaining()) {
      fail(name() + " length " + std::to_string(len) + " runs past the end of the file", at);
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
    pos_ += len;
    return s;
  }
  // A count of items that each take at least `min_item_bytes`: must fit in what is left.
  std::uint64_t read_count(const std::string& field, std::uint64_t min_item_bytes) {
    const std::uint64_t at = pos_;
    const auto n = read<std::uint64_t>(field);
    if (min_item_bytes > 0 && n > remaining() / min_item_bytes) {
      fail(field + " " + std::to_string(n) + " is impossible: the rest of the file holds at most " +
               std::to_string(remaining() / min_item_bytes),
           at);
    }
    return n;
  }
  void seek(std::uint64_t p, const std::string& field) {
    if (p > bytes_.size())
      fail(field + " " + std::to_string(p) + " is past the end of the file", pos_);
    pos_ = p;
  }
  const std::uint8_t* at(std::uint64_t p) const { return bytes_.data() + p; }
  std::uint64_t size() const { return bytes_.size(); }

 private:
  std::span<const std::uint8_t> bytes_;
  const std::string& file_;
  std::uint64_t pos_ = 0;
};

std::uint64_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::BOOL: return 1;
    case GgufType::UINT16:
    case GgufType::INT16: return 2;
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::FLOAT32: return 4;
    case GgufType::UINT64:
    case GgufType::INT64:
    case GgufType::FLOAT64: return 8;
    case GgufType::STRING: return 8;  // at least its length field
    case GgufType::ARRAY: return 12;  // at least element type + count
  }
  return 0;
}

bool valid_type(std::uint32_t t) { return t <= static_cast<std::uint32_t>(GgufType::FLOAT64); }

// Reads one scalar of type t into v (integer, real or string).
void read_scalar(Cursor& c, GgufType t, GgufValue& v, const std::string& field) {
  switch (t) {
    case GgufType::UINT8: v.integer = c.read<std::uint8_t>(field); break;
    case GgufType::INT8: v.integer = c.read<std::int8_t>(field); break;
    case GgufType::UINT16: v.integer = c.read<std::uint16_t>(field); break;
    case GgufType::INT16: v.integer = c.read<std::int16_t>(field); break;
    case GgufType::UINT32: v.integer = c.read<std::uint32_t>(field); break;
    case GgufType::INT32: v.integer = c.read<std::int32_t>(field); break;
    case GgufType::BOOL: {
      const auto at = c.pos();
      const auto b = c.read<std::uint8_t>(field);
      if (b > 1) c.fail(field + ": bool value " + std::to_string(b) + " is not 0 or 1", at);
      v.integer = b;
      break;
    }
    case GgufType::FLOAT32: v.real = c.read<float>(field); break;
    case GgufType::FLOAT64: v.real = c.read<double>(field); break;
    case GgufType::UINT64: {
      const auto at = c.pos();
      const auto u = c.read<std::uint64_t>(field);
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        c.fail(field + ": uint64 value too large", at);
      }
      v.integer = static_cast<std::int64_t>(u);
      break;
    }
    case GgufType::INT64: v.integer = c.read<std::int64_t>(field); break;
    case GgufType::STRING: v.string = c.read_string(field); break;
    case GgufType::ARRAY: c.fail(field + ": nested arrays are not supported", c.pos());
  }
}

GgufValue read_value(Cursor& c, const std::string& key) {
  const std::string shown = clipped(key);  // the key as the messages quote it
  GgufValue v;
  const auto at = c.pos();
  const auto type = c.read<std::uint32_t>("value type of '" + shown + "'");
  if (!valid_type(type))
    c.fail("value type " + std::to_string(type) + " of '" + shown + "' is unknown", at);
  v.type = static_cast<GgufType>(type);
  if (v.type != GgufType::ARRAY) {
    read_scalar(c, v.type, v, "value of '" + shown + "'");
    return v;
  }
  const auto et_at = c.pos();
  const auto et = c.read<std::uint32_t>("array element type of '" + shown + "'");
  if (!valid_type(et) || static_cast<GgufType>(et) == GgufType::ARRAY) {
    c.fail("array element type " + std::to_string(et) + " of '" + shown + "' is not supported",
           et_at);
  }
  v.array_type = static_cast<GgufType>(et);
  const std::uint64_t n =
      c.read_count("array length of '" + shown + "'", scalar_size(v.array_type));
  const std::string field = "element of array '" + shown + "'";
  GgufValue item;
  if (v.array_type == GgufType::STRING) {
    // Only a string can run past the end once the count has passed read_count: the message names
    // which one (the field text is built only then).
    v.strings.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      v.strings.push_back(c.read_string(
          [&] { return "element " + std::to_string(i) + " of array '" + shown + "'"; }));
    }
  } else if (v.array_type == GgufType::FLOAT32 || v.array_type == GgufType::FLOAT64) {
    v.reals.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      read_scalar(c, v.array_type, item, field);
      v.reals.push_back(item.real);
    }
  } else {
    v.integers.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      read_scalar(c, v.array_type, item, field);
      v.integers.push_back(item.integer);
    }
  }
  return v;
}

const char* type_name(GgufType t) {
  static const char* names[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                "int32",  "float32", "bool",   "string", "array",
                                "uint64", "int64",   "float64"};
  const auto i = static_cast<std::uint32_t>(t);
  return i < 13 ? names[i] : "?";
}

}  // namespace

std::int64_t GgufTensor::rows() const {
  std::int64_t r = 1;
  for (size_t i = 1; i < shape.size(); ++i) r *= shape[i];
  return r;
}

GgufFile GgufFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw GgufError(path + ": not a regular file");
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    throw GgufError(path + ": the file is empty (0 bytes), not a GGUF model");
  }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (addr == MAP_FAILED) throw std::runtime_error(path + ": mmap failed: " + std::strerror(errno));
  GgufFile f;
  f.path_ = path;
  f.mapping_ = std::shared_ptr<void>(addr, [size](void* p) { ::munmap(p, size); });
  f.parse_all({static_cast<const std::uint8_t*>(addr), size});
  return f;
}

GgufFile GgufFile::parse(std::span<const std::uint8_t> bytes, std::string name) {
  GgufFile f;
  f.path_ = std::move(name);
  f.parse_all(bytes);
  return f;
}

void GgufFile::parse_all(std::span<const std::uint8_t> bytes) {
  Cursor c(bytes, path_);
  const auto magic = c.read<std::uint32_t>("magic");
  if (magic != kMagic) c.fail("wrong magic: this is not a GGUF file", 0);
  version_ = c.read<std::uint32_t>("version");
  if (version_ != 3)
    c.fail("GGUF version " + std::to_string(version_) + " is not supported (need 3)", 4);
  // Each tensor info takes at least 8+4+8+4+8 bytes; each key/value at least 8+4+1.
  const std::uint64_t n_tensors = c.read_count("tensor count", 32);
  const std::uint64_t n_kv = c.read_count("metadata key/value count", 13);

  for (std::uint64_t i = 0; i < n_kv; ++i) {
    const auto at = c.pos();
    std::string key = c.read_string("metadata key #" + std::to_string(i));
    GgufValue v = read_value(c, key);
    if (!kv_.emplace(key, std::move(v)).second) {
      c.fail("duplicate metadata key '" + clipped(key) + "'", at);
    }
  }
  if (const GgufValue* a = find("general.alignment")) {
    if (a->type != GgufType::UINT32 || a->integer == 0 || (a->integer & (a->integer - 1)) != 0) {
      c.fail("general.alignment must be a power-of-two uint32", 0);
    }
    alignment_ = static_cast<std::uint32_t>(a->integer);
  }

  struct Pending {
    GgufTensor t;
    std::uint64_t rel_offset;
    std::uint64_t info_at;
  };
  std::vector<Pending> pending;
  pending.reserve(n_tensors);
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    Pending p;
    p.info_at = c.pos();
    p.t.name = c.read_string("name of tensor #" + std::to_string(i));
    const std::string what = "tensor '" + clipped(p.t.name) + "'";
    const auto dims_at = c.pos();
    const auto n_dims = c.read<std::uint32_t>("dimension count of " + what);
    if (n_dims == 0 || n_dims > kMaxDims) {
      c.fail(what + " has " + std::to_string(n_dims) + " dimensions (allowed 1 to 4)", dims_at);
    }
    std::int64_t elems = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto dim_at = c.pos();
      const auto dim = c.read<std::uint64_t>("dimension of " + what);
      if (dim == 0 || dim > (1ULL << 40) ||
          static_cast<std::uint64_t>(elems) > (1ULL << 50) / dim) {
        c.fail(what + " has an invalid dimension " + std::to_string(dim), dim_at);
      }
      elems *= static_cast<std::int64_t>(dim);
      p.t.shape.push_back(static_cast<std::int64_t>(dim));
    }
    p.t.n_elements = elems;
    const auto type_at = c.pos();
    const auto type = c.read<std::uint32_t>("type of " + what);
    const GgmlTypeInfo* info = ggml_type_info(type);
    if (!info) {
      c.fail(what + " has ggml type id " + std::to_string(type) +
                 ", which SpecLab does not support (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1)",
             type_at);
    }
    p.t.type = info->type;
    if (p.t.shape[0] % info->block_size != 0) {
      c.fail(what + ": row length " + std::to_string(p.t.shape[0]) + " is not a multiple of the " +
                 info->name + " block size",
             type_at);
    }
    p.t.n_bytes = static_cast<std::uint64_t>(elems / info->block_size) * info->type_size;
    const auto off_at = c.pos();
    p.rel_offset = c.read<std::uint64_t>("data offset of " + what);
    if (p.rel_offset % alignment_ != 0) {
      c.fail(what + ": data offset " + std::to_string(p.rel_offset) + " is not aligned to " +
                 std::to_string(alignment_),
             off_at);
    }
    if (tensor_index_.count(p.t.name))
      c.fail("duplicate tensor name '" + clipped(p.t.name) + "'", p.info_at);
    tensor_index_[p.t.name] = pending.size();
    pending.push_back(std::move(p));
  }

  const std::uint64_t data_start = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  for (Pending& p : pending) {
    const std::uint64_t start = data_start + p.rel_offset;
    if (start < data_start || start > c.size() || p.t.n_bytes > c.size() - start) {
      c.fail("data of tensor '" + clipped(p.t.name) + "' (" + std::to_string(p.t.n_bytes) +
                 " bytes at offset " + std::to_string(start) + ") runs past the end of the file",
             p.info_at);
    }
    p.t.file_offset = start;
    p.t.data = c.at(start);
  }
  // No two tensors may share bytes: a writer never aliases them, so an overlap means a corrupt
  // offset, and two weights would silently read each other's data.
  std::vector<const Pending*> by_offset;
  for (const Pending& p : pending) by_offset.push_back(&p);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Pending* a, const Pending* b) { return a->rel_offset < b->rel_offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const Pending& a = *by_offset[i - 1];
    const Pending& b = *by_offset[i];
    if (a.rel_offset + a.t.n_bytes > b.rel_offset && b.t.n_bytes > 0) {
      c.fail("the data of tensors '" + clipped(a.t.name) + "' (bytes " +
                 std::to_string(a.rel_offset) + ".." + std::to_string(a.rel_offset + a.t.n_bytes) +
                 " of the data section) and '" + clipped(b.t.name) + "' (bytes " +
                 std::to_string(b.rel_offset) + ".." + std::to_string(b.rel_offset + b.t.n_bytes) +
                 ") overlap",
             b.info_at);
    }
  }
  for (Pending& p : pending) tensors_.push_back(std::move(p.t));
}

const GgufValue* GgufFile::find(const std::string& key) const {
  const auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

namespace {
const GgufValue& need(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  if (!v) throw GgufError(f.path() + ": metadata key '" + key + "' is missing");
  return *v;
}
[[noreturn]] void wrong_type(const GgufFile& f, const std::string& key, const GgufValue& v,
                             const char* want) {
  throw GgufError(f.path() + ": metadata key '" + key + "' is " + type_name(v.type) +
                  (v.type == GgufType::ARRAY ? std::string(" of ") + type_name(v.array_type) : "") +
                  ", expected " + want);
}
bool is_int(GgufType t) {
  return t != GgufType::FLOAT32 && t != GgufType::FLOAT64 && t != GgufType::STRING &&
         t != GgufType::ARRAY;
}
}  // namespace

std::int64_t GgufFile::get_int(const std::string& key) const {
  const GgufValue& v = need(*this, key);
  if (!is_int(v.type)) wrong_type(*this, key, v, "an integer");
  return v.integer;
}
std::int64_t GgufFile::get_int_or(const std::string& key, std::int64_t fallback) const {
  return find(key) ? get_int(key) : fallback;
}
double GgufFile::get_real(const std::string& key) const {
  const GgufValue& v = need(*this, key);
  if (v.type == GgufType::FLOAT32 || v.type == GgufType::FLOAT64) return v.real;
  if (is_int(v.type)) return static_cast<double>(v.integer);
  wrong_type(*this, key, v, "a number");
}
double GgufFile::get_real_or(const std::string& key, double fallback) const {
  return find(key) ? get_real(key) : fallback;
}
const std::string& GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = need(*this, key);
  if (v.type != GgufType::STRING) wrong_type(*this, key, v, "a string");
  return v.string;
}
std::string GgufFile::get_string_or(const std::string& key, const std::string& fallback) const {
  return find(key) ? get_string(key) : fallback;
}
const std::vector<std::string>& GgufFile::get_strings(const std::string& key) const {
  const GgufValue& v = need(*this, key);
  if (v.type != GgufType::ARRAY || v.array_type != GgufType::STRING) {
    wrong_type(*this, key, v, "an array of strings");
  }
  return v.strings;
}
const std::vector<std::int64_t>& GgufFile::get_integers(const std::string& key) const {
  const GgufValue& v = need(*this, key);
  if (v.type != GgufType::ARRAY || !is_int(v.array_type)) {
    wrong_type(*this, key, v, "an array of integers");
  }
  return v.integers;
}

const GgufTensor* GgufFile::tensor(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::require_tensor(const std::string& name) const {
  const GgufTensor* t = tensor(name);
  if (!t) throw GgufError(path_ + ": tensor '" + name + "' is missing");
  return *t;
}

}  // namespace speclab
