// Lab 04 -- your file. Implement the functions marked "(lab 04)" in ngram_pool.h; their
// contracts are there. Run the tests:
//   LAB_IMPL=starter ctest --test-dir build -L lab04 --output-on-failure
#include "ngram_pool.h"

namespace speclab {

// --8<-- [start:NGramPool]
NGramPool::NGramPool(const NGramPoolConfig& config) : config_(config) {
  // TODO(lab04): reject a config with v or k outside [1, 64] or a negative max_values_per_key
  // (std::invalid_argument whose message names the field, e.g. "max_draft_len").
  todo("lab04", "NGramPool::NGramPool", "book/lab04_ngram_pool.md, section 'The options'");
}
// --8<-- [end:NGramPool]

// --8<-- [start:insert_pair]
void NGramPool::insert_pair(std::span<const Token> key, std::span<const Token> value) {
  // TODO(lab04): check the sizes and the ids (a negative id throws std::invalid_argument naming
  // it), count the update, then apply the keep rule: a new key (evict the least recently used
  // key first when the pool is full), the longest value when !is_keep_all, and the prefix-free
  // list of values when is_keep_all. Call touch() on every known key you update; a new key is
  // not in lru_ yet, so push it to the front yourself (see touch() in ngram_pool.h). An evicted
  // key leaves both map_ and lru_.
  (void)key, (void)value;
  todo("lab04", "NGramPool::insert_pair",
       "book/lab04_ngram_pool.md, section 'Keeping values: the keep rule'");
}
// --8<-- [end:insert_pair]

// --8<-- [start:scan]
void NGramPool::scan(std::span<const Token> tokens) {
  // TODO(lab04): first check every id (std::invalid_argument naming a negative one): left to
  // insert_pair, the check comes after the pairs before the bad id went in. Then for each key
  // length n in 1..k and each start i with i + n < tokens.size(), insert key tokens[i, i+n) with
  // the up to v tokens that follow it.
  (void)tokens;
  todo("lab04", "NGramPool::scan", "book/lab04_ngram_pool.md, section 'The initial scan'");
}
// --8<-- [end:scan]

// --8<-- [start:update]
void NGramPool::update(std::span<const Token> tokens) {
  // TODO(lab04): tokens.back() is new. First check the ids of the tokens you read (the last
  // k + v, and only those) for a negative one, as scan does. Then, for each n, insert only the
  // pairs whose value ends at tokens.back(): at most v per key length, however long `tokens` is.
  (void)tokens;
  todo("lab04", "NGramPool::update", "book/lab04_ngram_pool.md, section 'The per-token update'");
}
// --8<-- [end:update]

// --8<-- [start:lookup]
std::vector<Token> NGramPool::lookup(std::span<const Token> context, int max_tokens) {
  // TODO(lab04): longest key first; on the first hit, touch the key and propose its oldest or
  // newest value (is_use_oldest), cut to max_tokens.
  (void)context, (void)max_tokens;
  todo("lab04", "NGramPool::lookup", "book/lab04_ngram_pool.md, section 'Lookup'");
}
// --8<-- [end:lookup]

// --8<-- [start:NGramPoolManager]
NGramPoolManager::NGramPoolManager(const NGramPoolConfig& config) : config_(config) {
  // TODO(lab04): check the config (an NGramPool constructor does) and create the public pool.
  todo("lab04", "NGramPoolManager::NGramPoolManager",
       "book/lab04_ngram_pool.md, section 'Public and private pools'");
}

RequestId NGramPoolManager::add_request(std::span<const Token> prompt) {
  // TODO(lab04): public pool or a fresh private pool; scan the prompt; remember what was seen.
  // A prompt the scan refuses adds no request.
  (void)prompt;
  todo("lab04", "NGramPoolManager::add_request",
       "book/lab04_ngram_pool.md, section 'Public and private pools'");
}

void NGramPoolManager::update(RequestId id, std::span<const Token> context) {
  // TODO(lab04): check the ids of all the unseen tokens of `context` first, then feed them, one
  // NGramPool::update per token.
  (void)id, (void)context;
  todo("lab04", "NGramPoolManager::update",
       "book/lab04_ngram_pool.md, section 'Public and private pools'");
}

std::vector<Token> NGramPoolManager::propose(RequestId id, std::span<const Token> context, int k) {
  // TODO(lab04): refuse k < 0 first (nothing fed), then update, then look up.
  (void)id, (void)context, (void)k;
  todo("lab04", "NGramPoolManager::propose",
       "book/lab04_ngram_pool.md, section 'Public and private pools'");
}

void NGramPoolManager::remove_request(RequestId id) {
  // TODO(lab04): forget the request (and its private pool).
  (void)id;
  todo("lab04", "NGramPoolManager::remove_request",
       "book/lab04_ngram_pool.md, section 'Public and private pools'");
}

NGramPool& NGramPoolManager::pool(RequestId id) {
  // TODO(lab04): the request's pool; std::invalid_argument for an unknown id.
  (void)id;
  todo("lab04", "NGramPoolManager::pool",
       "book/lab04_ngram_pool.md, section 'Public and private pools'");
}
// --8<-- [end:NGramPoolManager]

}  // namespace speclab
