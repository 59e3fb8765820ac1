// Lab 04 reference solution: the n-gram pool and its public/private manager.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "ngram_pool.h"

namespace speclab {
namespace {

void check_config(const NGramPoolConfig& c) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("NGramPoolConfig: " + what);
  };
  if (c.max_draft_len < 1 || c.max_draft_len > 64) {
    fail("max_draft_len (v) must be in [1, 64], got " + std::to_string(c.max_draft_len));
  }
  if (c.max_matching_ngram_size < 1 || c.max_matching_ngram_size > 64) {
    fail("max_matching_ngram_size (k) must be in [1, 64], got " +
         std::to_string(c.max_matching_ngram_size));
  }
  if (c.max_values_per_key < 0) {
    fail("max_values_per_key must be >= 0 (0 = no limit), got " +
         std::to_string(c.max_values_per_key));
  }
}

// Throws std::invalid_argument naming the first negative id in tokens[from, end) and its position
// in `tokens`. Callers check before they change anything: a check made pair by pair would leave
// the pairs before the bad id in the pool.
void check_ids(std::span<const Token> tokens, std::size_t from, const std::string& who) {
  for (std::size_t i = from; i < tokens.size(); ++i) {
    if (tokens[i] < 0) {
      throw std::invalid_argument(who + ": token id " + std::to_string(tokens[i]) +
                                  " at position " + std::to_string(i) + " is negative");
    }
  }
}

// How many leading tokens a and b share.
std::size_t common_prefix(std::span<const Token> a, std::span<const Token> b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

NGramPool::NGramPool(const NGramPoolConfig& config) : config_(config) { check_config(config_); }

void NGramPool::insert_pair(std::span<const Token> key, std::span<const Token> value) {
  const auto k = static_cast<std::size_t>(config_.max_matching_ngram_size);
  const auto v = static_cast<std::size_t>(config_.max_draft_len);
  if (key.empty() || key.size() > k) {
    throw std::invalid_argument("insert_pair: key must hold 1.." + std::to_string(k) +
                                " tokens, got " + std::to_string(key.size()));
  }
  if (value.empty() || value.size() > v) {
    throw std::invalid_argument("insert_pair: value must hold 1.." + std::to_string(v) +
                                " tokens, got " + std::to_string(value.size()));
  }
  check_ids(key, 0, "insert_pair (key)");
  check_ids(value, 0, "insert_pair (value)");
  ++stats_.pair_updates;

  auto it = map_.find(key);
  if (it == map_.end()) {
    if (config_.capacity > 0 && map_.size() >= config_.capacity) {
      const NGram* victim = lru_.back();  // the least recently used key
      lru_.pop_back();
      map_.erase(map_.find(*victim));
      ++stats_.evicted_keys;
    }
    it = map_.emplace(NGram(key.begin(), key.end()), Entry{}).first;
    it->second.values.emplace_back(value.begin(), value.end());
    lru_.push_front(&it->first);
    it->second.recency = lru_.begin();
    return;
  }
  Entry& entry = it->second;
  touch(entry);
  std::vector<NGram>& values = entry.values;

  if (!config_.is_keep_all) {
    if (value.size() > values.front().size()) values.front().assign(value.begin(), value.end());
    return;
  }
  for (NGram& stored : values) {
    const std::size_t common = common_prefix(stored, value);
    if (common == value.size()) return;  // value is a prefix of (or equal to) a stored value
    if (common == stored.size()) {       // a stored value grows into `value`, keeping its age
      stored.assign(value.begin(), value.end());
      return;
    }
  }
  values.emplace_back(value.begin(), value.end());
  if (config_.max_values_per_key > 0 &&
      values.size() > static_cast<std::size_t>(config_.max_values_per_key)) {
    values.erase(values.begin());
    ++stats_.dropped_values;
  }
}

void NGramPool::scan(std::span<const Token> tokens) {
  const auto k = static_cast<std::size_t>(config_.max_matching_ngram_size);
  const auto v = static_cast<std::size_t>(config_.max_draft_len);
  check_ids(tokens, 0, "NGramPool::scan");
  for (std::size_t n = 1; n <= k; ++n) {
    // A key needs at least one token after it: i + n < size.
    for (std::size_t i = 0; i + n < tokens.size(); ++i) {
      const std::size_t to = std::min(tokens.size(), i + n + v);
      insert_pair(tokens.subspan(i, n), tokens.subspan(i + n, to - (i + n)));
    }
  }
}

void NGramPool::update(std::span<const Token> tokens) {
  if (tokens.empty()) throw std::invalid_argument("NGramPool::update: no tokens");
  const std::size_t end = tokens.size();  // the new token is tokens[end - 1]
  const auto k = static_cast<std::size_t>(config_.max_matching_ngram_size);
  const auto v = static_cast<std::size_t>(config_.max_draft_len);
  // The pairs below read tokens[end - k - v, end) at most: check those, and only those (the
  // update's cost stays independent of the context's length).
  check_ids(tokens, end > k + v ? end - k - v : 0, "NGramPool::update");
  for (std::size_t n = 1; n <= k && n < end; ++n) {
    // Keys start at i and end at i + n <= end - 1; their value tokens[i+n, end) is 1..v long.
    const std::size_t last_start = end - 1 - n;
    const std::size_t first_start = end - n > v ? end - n - v : 0;
    for (std::size_t i = first_start; i <= last_start; ++i) {
      insert_pair(tokens.subspan(i, n), tokens.subspan(i + n, end - (i + n)));
    }
  }
}

std::vector<Token> NGramPool::lookup(std::span<const Token> context, int max_tokens) {
  if (max_tokens < 0) {
    throw std::invalid_argument("lookup: max_tokens must be >= 0, got " +
                                std::to_string(max_tokens));
  }
  if (max_tokens == 0) return {};
  const std::size_t longest =
      std::min(context.size(), static_cast<std::size_t>(config_.max_matching_ngram_size));
  for (std::size_t n = longest; n >= 1; --n) {
    const auto it = map_.find(context.last(n));
    if (it == map_.end()) continue;
    Entry& entry = it->second;
    touch(entry);  // a hit is a use
    const NGram& chosen = config_.is_use_oldest ? entry.values.front() : entry.values.back();
    const std::size_t take = std::min(chosen.size(), static_cast<std::size_t>(max_tokens));
    return {chosen.begin(), chosen.begin() + static_cast<std::ptrdiff_t>(take)};
  }
  return {};
}

NGramPoolManager::NGramPoolManager(const NGramPoolConfig& config)
    : config_(config), public_pool_(std::make_unique<NGramPool>(config)) {}

RequestId NGramPoolManager::add_request(std::span<const Token> prompt) {
  Request request;
  if (config_.is_public_pool) {
    request.pool = public_pool_.get();
  } else {
    request.own = std::make_unique<NGramPool>(config_);  // a fresh pool: nothing leaks in
    request.pool = request.own.get();
  }
  request.pool->scan(prompt);
  request.seen = prompt.size();
  const RequestId id = next_id_++;
  requests_.emplace(id, std::move(request));
  return id;
}

void NGramPoolManager::update(RequestId id, std::span<const Token> context) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) {
    throw std::invalid_argument("NGramPoolManager: unknown request " + std::to_string(id));
  }
  Request& r = it->second;
  if (context.size() < r.seen) {
    throw std::invalid_argument("NGramPoolManager::update: request " + std::to_string(id) +
                                " has seen " + std::to_string(r.seen) +
                                " tokens but the context holds only " +
                                std::to_string(context.size()));
  }
  check_ids(context, r.seen, "NGramPoolManager::update");  // all new tokens, before the first
  for (std::size_t i = r.seen; i < context.size(); ++i) r.pool->update(context.first(i + 1));
  r.seen = context.size();
}

std::vector<Token> NGramPoolManager::propose(RequestId id, std::span<const Token> context, int k) {
  if (k < 0) {
    throw std::invalid_argument("NGramPoolManager::propose: k must be >= 0, got " +
                                std::to_string(k));
  }
  update(id, context);
  return pool(id).lookup(context, k);
}

void NGramPoolManager::remove_request(RequestId id) { requests_.erase(id); }

NGramPool& NGramPoolManager::pool(RequestId id) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) {
    throw std::invalid_argument("NGramPoolManager: unknown request " + std::to_string(id));
  }
  return *it->second.pool;
}

}  // namespace speclab
