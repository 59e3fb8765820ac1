#include "mini_engine/targets/cpu_llama_batch.h"

#include <algorithm>
#include <stdexcept>

namespace speclab {
namespace {
// Rows per forward pass; a longer call runs in chunks (as CpuLlama's own extend does), which
// bounds the scratch memory and changes nothing else: a chunk only attends to cached positions.
constexpr int kMaxChunk = 512;
}  // namespace

std::unique_ptr<CpuLlamaBatch> CpuLlamaBatch::open(const std::string& path,
                                                   CpuLlamaOptions options) {
  return std::make_unique<CpuLlamaBatch>(GgufFile::open(path), options);
}

CpuLlamaBatch::CpuLlamaBatch(GgufFile file, CpuLlamaOptions options)
    : model_(std::make_unique<CpuLlama>(std::move(file), options)) {}

CpuLlamaBatch::~CpuLlamaBatch() = default;

std::string CpuLlamaBatch::name() const { return "batch/" + model_->name(); }

int CpuLlamaBatch::add_sequence() {
  const int id = next_id_++;
  seqs_.emplace(id, std::make_unique<Sequence>());
  return id;
}

CpuLlamaBatch::Sequence& CpuLlamaBatch::at(int seq, const char* who) const {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    throw std::out_of_range(std::string("CpuLlamaBatch::") + who + ": no live sequence " +
                            std::to_string(seq));
  }
  return *it->second;
}

void CpuLlamaBatch::remove_sequence(int seq) {
  at(seq, "remove_sequence");
  seqs_.erase(seq);
}

std::vector<int> CpuLlamaBatch::sequences() const {
  std::vector<int> ids;
  for (const auto& [id, _] : seqs_) ids.push_back(id);
  return ids;
}

std::span<const Token> CpuLlamaBatch::tokens(int seq) const { return at(seq, "tokens").tokens; }

void CpuLlamaBatch::truncate(int seq, int new_len) {
  Sequence& s = at(seq, "truncate");
  if (new_len < 0 || new_len > static_cast<int>(s.tokens.size())) {
    throw std::out_of_range("CpuLlamaBatch::truncate(" + std::to_string(seq) + ", " +
                            std::to_string(new_len) + "): the sequence holds " +
                            std::to_string(s.tokens.size()) + " tokens");
  }
  s.tokens.resize(static_cast<size_t>(new_len));  // later KV entries are overwritten next time
}

std::vector<Logits> CpuLlamaBatch::extend_batch(std::span<const BatchItem> items) {
  return run(items, true, "extend_batch");
}

void CpuLlamaBatch::append_batch(std::span<const BatchItem> items) {
  run(items, false, "append_batch");
}

std::vector<Logits> CpuLlamaBatch::run(std::span<const BatchItem> items, bool want_logits,
                                       const char* who) {
  const std::string w = std::string("CpuLlamaBatch::") + who;
  check_batch_items(*this, items, who);
  const int vocab = vocab_size();
  int total = 0;
  for (size_t j = 0; j < items.size(); ++j) {
    const Sequence& s = at(items[j].seq, who);
    for (size_t i = 0; i < items[j].tokens.size(); ++i) {
      const Token t = items[j].tokens[i];
      if (t < 0 || t >= vocab) {
        throw std::invalid_argument(w + ": item " + std::to_string(j) + " has token id " +
                                    std::to_string(t) + " at index " + std::to_string(i) +
                                    ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
      }
    }
    const long long want =
        static_cast<long long>(s.tokens.size()) + static_cast<long long>(items[j].tokens.size());
    if (want > max_length()) {
      throw ContextOverflow(w + ": item " + std::to_string(j) + " appends " +
                            std::to_string(items[j].tokens.size()) + " tokens to sequence " +
                            std::to_string(items[j].seq) + " (" + std::to_string(s.tokens.size()) +
                            " tokens), past the maximum of " + std::to_string(max_length()));
    }
    total += static_cast<int>(items[j].tokens.size());
  }

  // Every token of every item, in item order, with the cache and position it goes to.
  std::vector<Token> flat;
  std::vector<CpuLlama::RowSlot> rows;
  flat.reserve(static_cast<size_t>(total));
  rows.reserve(static_cast<size_t>(total));
  for (const BatchItem& item : items) {
    Sequence& s = at(item.seq, who);
    const int len = static_cast<int>(s.tokens.size());
    model_->reserve_kv(s.kv, len + static_cast<int>(item.tokens.size()), len);
    for (size_t i = 0; i < item.tokens.size(); ++i) {
      flat.push_back(item.tokens[i]);
      rows.push_back({&s.kv, len + static_cast<int>(i)});
    }
  }
  Logits all(want_logits ? total : 0, vocab);
  for (int c = 0; c < total; c += kMaxChunk) {
    const int m = std::min(kMaxChunk, total - c);
    model_->forward_rows(
        flat.data() + c, rows.data() + c, m,
        want_logits ? all.data() + static_cast<size_t>(c) * static_cast<size_t>(vocab) : nullptr);
  }

  std::vector<Logits> out;
  out.reserve(want_logits ? items.size() : 0);
  size_t offset = 0;
  for (const BatchItem& item : items) {
    const int n = static_cast<int>(item.tokens.size());
    if (want_logits) {
      Logits l(n, vocab);
      std::copy_n(all.data() + offset * static_cast<size_t>(vocab),
                  static_cast<size_t>(n) * static_cast<size_t>(vocab), l.data());
      out.push_back(std::move(l));
    }
    offset += static_cast<size_t>(n);
    Sequence& s = at(item.seq, who);
    s.tokens.insert(s.tokens.end(), item.tokens.begin(), item.tokens.end());
  }
  return out;
}

}  // namespace speclab
