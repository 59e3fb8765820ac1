#pragma once
// Lab 04 -- the n-gram pool, after TensorRT-LLM's NGramDecodingConfig.
// The chapter: book/lab04_ngram_pool.md
//
// You implement the member functions marked "(lab 04)" below, in starter.cpp. The inline
// functions in this file (inspection helpers, the hash, the drafter at the end) are glue: they
// read the data structure declared here, so you do not need to change them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "mini_engine/core/token.h"
#include "mini_engine/spec/drafter.h"

namespace speclab {

// The pool's knobs. The first five are TensorRT-LLM's; the last two are ours: they bound memory.
struct NGramPoolConfig {
  int max_draft_len = 5;            // v: the longest value stored (and proposed); 1..64
  int max_matching_ngram_size = 3;  // k: the longest key; 1..64
  bool is_keep_all = true;          // keep several values per key; false: only the longest one
  bool is_use_oldest = true;        // with is_keep_all: propose the oldest value; false: the newest
  bool is_public_pool = true;       // NGramPoolManager: one pool for every request; false: one each
  // The most keys one pool holds; 0 = no limit. Inserting a new key into a full pool first
  // evicts the least recently used key (with all its values).
  std::size_t capacity = std::size_t{1} << 18;
  // With is_keep_all: the most values one key holds; a new value for a full key drops that key's
  // oldest value. 0 = no limit.
  int max_values_per_key = 8;
};

// Work and eviction counters. Every NGramPool member that changes the pool keeps them current.
struct NGramPoolStats {
  std::int64_t pair_updates = 0;    // calls of insert_pair: the pool's unit of work
  std::int64_t evicted_keys = 0;    // keys removed by the capacity rule
  std::int64_t dropped_values = 0;  // values removed by the max_values_per_key rule
};

// An n-gram of tokens as a map key. The hash and equality accept any span of tokens, so a lookup
// never has to copy the context into a vector first.
using NGram = std::vector<Token>;
struct NGramHash {
  using is_transparent = void;
  std::size_t operator()(std::span<const Token> key) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ key.size();
    for (Token t : key) {
      h ^= static_cast<std::uint32_t>(t);
      h *= 0xff51afd7ed558ccdULL;
      h ^= h >> 32;
    }
    return static_cast<std::size_t>(h);
  }
};
struct NGramEqual {
  using is_transparent = void;
  bool operator()(std::span<const Token> a, std::span<const Token> b) const {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
};

// A pool of (key, value) pairs: a key is an n-gram of 1..k tokens, a value is 1..v tokens that
// followed it. Not thread-safe. Not copyable (drafters share a pool through NGramPoolManager).
class NGramPool {
 public:
  // --8<-- [start:NGramPool]
  // (lab 04) Stores the config. Throws std::invalid_argument naming the first field out of range,
  // in the order NGramPoolConfig declares them (max_draft_len before max_matching_ngram_size).
  explicit NGramPool(const NGramPoolConfig& config);
  // --8<-- [end:NGramPool]
  NGramPool(const NGramPool&) = delete;
  NGramPool& operator=(const NGramPool&) = delete;

  // --8<-- [start:insert_pair]
  // (lab 04) Adds one pair and counts it in stats().pair_updates. Every insert_pair marks `key`
  // as the most recently used key. The keep rule:
  //  - a new key: stored with `value` as its only value; if the pool already holds `capacity`
  //    keys, the least recently used key is evicted first.
  //  - is_keep_all == false: the key keeps one value, the longest seen; `value` replaces it
  //    only if strictly longer.
  //  - is_keep_all == true: the key's values stay prefix-free, oldest first. If `value` is a
  //    prefix of (or equal to) a stored value, nothing changes. Else, if a stored value is a
  //    proper prefix of `value`, that value grows into `value` in place (it keeps its age).
  //    Else `value` is appended as the newest; if the key then holds more than
  //    max_values_per_key values, its oldest is dropped.
  // Requires 1 <= key.size() <= k, 1 <= value.size() <= v and no negative token id in either;
  // otherwise throws std::invalid_argument (naming a negative id) and changes nothing (the pair is
  // not counted either).
  void insert_pair(std::span<const Token> key, std::span<const Token> value);
  // --8<-- [end:insert_pair]

  // --8<-- [start:scan]
  // (lab 04) The initial scan of a new request's tokens. For every key length n in 1..k and every
  // start i with i + n < tokens.size(): key = tokens[i, i+n), value = the up to v tokens that
  // follow it. That is sum over n of max(0, tokens.size() - n) insert_pair calls: 18 for
  // k = 3 and 8 tokens. Scanning fewer than 2 tokens adds nothing. Throws std::invalid_argument
  // naming a negative id in `tokens`, however few they are, before it adds any pair.
  void scan(std::span<const Token> tokens);
  // --8<-- [end:scan]

  // --8<-- [start:update]
  // (lab 04) The per-token update: tokens.back() has just arrived, tokens is the request so far.
  // For every key length n in 1..k, inserts each pair whose value now ends at tokens.back():
  // the values that grow by this token (those that had fewer than v tokens) and the new key
  // tokens[size-1-n, size-1), whose value is this token alone. At most k * v insert_pair calls,
  // whatever the length of `tokens`. Afterwards the pool holds the same values per key as
  // scan(tokens) would have added (possibly in a different age order). Throws
  // std::invalid_argument on empty `tokens`, and naming a negative id among the tokens it reads
  // (the last k + v), before it inserts any pair. The tokens before those are not read, nor
  // checked.
  void update(std::span<const Token> tokens);
  // --8<-- [end:update]

  // --8<-- [start:lookup]
  // (lab 04) Proposes up to `max_tokens` tokens for what follows `context`. Tries the longest key
  // first: the last min(k, context.size()) tokens, then one token shorter, down to 1. The first key
  // found wins: it becomes the most recently used key, and its value is proposed (is_keep_all:
  // the oldest or, with !is_use_oldest, the newest; otherwise its only value), cut to max_tokens.
  // Returns an empty vector when no key matches, and at once when max_tokens == 0 (no key is
  // looked up, so none becomes more recent). Throws std::invalid_argument when max_tokens < 0.
  // A negative id in `context` is no error: no key holds one, so a key with one never matches.
  std::vector<Token> lookup(std::span<const Token> context, int max_tokens);
  // --8<-- [end:lookup]

  // ---- glue: inspection (none of these counts as a use of a key) ----

  const NGramPoolConfig& config() const { return config_; }
  const NGramPoolStats& stats() const { return stats_; }
  std::size_t num_keys() const { return map_.size(); }
  // The values stored under `key`, oldest first; empty when the key is absent.
  std::vector<NGram> values(std::span<const Token> key) const {
    const auto it = map_.find(key);
    return it == map_.end() ? std::vector<NGram>{} : it->second.values;
  }
  // Every key, most recently used first.
  std::vector<NGram> keys_by_recency() const {
    std::vector<NGram> out;
    for (const NGram* k : lru_) out.push_back(*k);
    return out;
  }
  // Values stored, over all keys.
  std::size_t num_values() const {
    std::size_t n = 0;
    for (const auto& [key, e] : map_) n += e.values.size();
    return n;
  }
  // Tokens stored, keys and values together: the pool's memory, in tokens. Under the limits it
  // is at most capacity * (k + v * max_values_per_key) (keep_all) or capacity * (k + v).
  std::size_t stored_tokens() const {
    std::size_t n = 0;
    for (const auto& [key, e] : map_) {
      n += key.size();
      for (const NGram& v : e.values) n += v.size();
    }
    return n;
  }

 private:
  struct Entry {
    std::vector<NGram> values;                  // oldest first; see insert_pair for the rules
    std::list<const NGram*>::iterator recency;  // this key's place in lru_
  };
  // Moves `e`'s key to the front of lru_ (most recently used). O(1). Only for a key already in
  // lru_: a new key is not in it yet, so push a pointer to the map's own key to the front of
  // lru_ and keep that iterator in the Entry's `recency`. An evicted key leaves both lru_ and map_.
  void touch(Entry& e) { lru_.splice(lru_.begin(), lru_, e.recency); }

  NGramPoolConfig config_;
  NGramPoolStats stats_;
  std::unordered_map<NGram, Entry, NGramHash, NGramEqual> map_;
  std::list<const NGram*> lru_;  // every key in map_ (pointing at the map's own key, which never
                                 // moves), most recently used first
};

using RequestId = std::int64_t;

// Decides which pool each request drafts from: with is_public_pool, one pool shared by every
// request (what one request learns, the next one can propose); otherwise a private pool per
// request, created empty when the request starts and dropped when it ends.
class NGramPoolManager {
 public:
  // --8<-- [start:NGramPoolManager]
  // (lab 04) Throws std::invalid_argument on a bad config (as NGramPool does), public pool or not.
  explicit NGramPoolManager(const NGramPoolConfig& config);
  NGramPoolManager(const NGramPoolManager&) = delete;
  NGramPoolManager& operator=(const NGramPoolManager&) = delete;

  // (lab 04) Starts a request: picks its pool (the public one, or a new private one), scans the
  // prompt into it and remembers how many tokens the request has seen. Returns a new id; ids are
  // never reused. A negative id in the prompt throws std::invalid_argument (from the scan), and
  // then no pool changes and no request is added.
  RequestId add_request(std::span<const Token> prompt);

  // (lab 04) Feeds the tokens of `context` that the request has not seen yet to its pool, one
  // NGramPool::update per token. `context` must extend what the request has seen: throws
  // std::invalid_argument for an unknown id or a context shorter than that, and naming a negative
  // id among the new tokens before it feeds any of them (the request has then seen what it had).
  void update(RequestId id, std::span<const Token> context);

  // (lab 04) update(id, context), then the pool's lookup for up to `k` tokens. This `k` is the
  // engine's draft budget for the round (Drafter::propose's k), not max_matching_ngram_size.
  // Throws std::invalid_argument naming k and its value when k < 0, before anything is fed;
  // otherwise as update() and lookup() do.
  std::vector<Token> propose(RequestId id, std::span<const Token> context, int k);

  // (lab 04) Ends a request; a private pool goes with it. An unknown id is ignored.
  void remove_request(RequestId id);

  // (lab 04) The pool request `id` drafts from. Throws std::invalid_argument for an unknown id.
  NGramPool& pool(RequestId id);
  // --8<-- [end:NGramPoolManager]

  // ---- glue ----
  const NGramPoolConfig& config() const { return config_; }
  std::size_t num_requests() const { return requests_.size(); }

 private:
  struct Request {
    NGramPool* pool = nullptr;       // the public pool or `own`
    std::unique_ptr<NGramPool> own;  // the private pool, when there is one
    std::size_t seen = 0;            // tokens of the request already in the pool
  };
  NGramPoolConfig config_;
  std::unique_ptr<NGramPool> public_pool_;  // used only with is_public_pool
  std::map<RequestId, Request> requests_;
  RequestId next_id_ = 1;
};

// ---- glue: the engine-facing drafter (not part of the exercise) ----

// Each generation (begin() .. the next begin()) is one request of `manager`. Drafters, or
// successive turns of one drafter, that share a manager share its public pool.
// propose() and observe() feed the request the context's tokens it has not seen yet
// (NGramPoolManager::update); a negative id among them throws std::invalid_argument naming it
// before any is fed, and the pool and the request are then as they were.
class NGramPoolDrafter final : public Drafter {
 public:
  explicit NGramPoolDrafter(std::shared_ptr<NGramPoolManager> manager)
      : manager_(std::move(manager)) {
    if (!manager_) throw std::invalid_argument("NGramPoolDrafter: no pool manager given");
  }
  explicit NGramPoolDrafter(const NGramPoolConfig& config)
      : NGramPoolDrafter(std::make_shared<NGramPoolManager>(config)) {}
  ~NGramPoolDrafter() override {
    try {
      end_request();
    } catch (...) {  // a destructor must not throw (an unfinished starter may)
    }
  }

  std::string name() const override {
    const NGramPoolConfig& c = manager_->config();
    return "ngram-pool(k=" + std::to_string(c.max_matching_ngram_size) +
           ", v=" + std::to_string(c.max_draft_len) +
           (c.is_public_pool ? ", public" : ", private") + ")";
  }
  // A prompt the manager refuses (a negative id) throws and leaves the running generation as it
  // was.
  void begin(std::span<const Token> prompt) override {
    const RequestId next = manager_->add_request(prompt);
    end_request();
    request_ = next;
  }
  std::vector<Token> propose(std::span<const Token> context, int k) override {
    if (!request_) throw std::logic_error(name() + ": propose() before begin()");
    return manager_->propose(*request_, context, k);
  }
  void observe(std::span<const Token> context, const RoundRecord& /*round*/) override {
    if (request_) manager_->update(*request_, context);
  }
  NGramPoolManager& manager() { return *manager_; }
  std::optional<RequestId> request() const { return request_; }

 private:
  void end_request() {
    if (request_) manager_->remove_request(*request_);
    request_.reset();
  }
  std::shared_ptr<NGramPoolManager> manager_;
  std::optional<RequestId> request_;
};

}  // namespace speclab
