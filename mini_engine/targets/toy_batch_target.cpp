#include "mini_engine/targets/toy_batch_target.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace speclab {

double ToyCostModel::seconds(int tokens) const {
  if (knee_tokens < 0) {  // tokens - knee_tokens could overflow
    throw std::invalid_argument("ToyCostModel::seconds: knee_tokens must be >= 0, got " +
                                std::to_string(knee_tokens));
  }
  if (tokens < 1) {
    throw std::invalid_argument("ToyCostModel::seconds: a call feeds at least 1 token, got " +
                                std::to_string(tokens));
  }
  const double past = static_cast<double>(std::max(0, tokens - knee_tokens));
  return fixed_seconds + per_token_seconds * tokens + past_knee_seconds * past;
}

void ToyCostModel::validate() const {
  auto check = [](double v, const char* field) {
    if (!(v >= 0.0) || !std::isfinite(v)) {
      throw std::invalid_argument(std::string("ToyCostModel: ") + field +
                                  " must be finite and >= 0, got " + std::to_string(v));
    }
  };
  check(fixed_seconds, "fixed_seconds");
  check(per_token_seconds, "per_token_seconds");
  check(past_knee_seconds, "past_knee_seconds");
  if (knee_tokens < 0) {
    throw std::invalid_argument("ToyCostModel: knee_tokens must be >= 0, got " +
                                std::to_string(knee_tokens));
  }
  if (fixed_seconds + per_token_seconds <= 0.0 && past_knee_seconds <= 0.0) {
    throw std::invalid_argument("ToyCostModel: every call would cost 0 seconds");
  }
}

ToyBatchTarget::ToyBatchTarget(ToyTargetConfig config, ToyCostModel cost)
    : config_(config), cost_(cost) {
  cost_.validate();
  config_ = ToyTarget(config_).config();  // validates, and resolves the default noise
}

std::string ToyBatchTarget::name() const {
  return "toy-batch/" + to_string(config_.regime) + "(vocab=" + std::to_string(config_.vocab_size) +
         ", seed=" + std::to_string(config_.seed) + ")";
}

int ToyBatchTarget::add_sequence() {
  const int id = next_id_++;
  seqs_.emplace(id, std::make_unique<ToyTarget>(config_));
  return id;
}

ToyTarget& ToyBatchTarget::at(int seq, const char* who) const {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    throw std::out_of_range(std::string("ToyBatchTarget::") + who + ": no live sequence " +
                            std::to_string(seq));
  }
  return *it->second;
}

void ToyBatchTarget::remove_sequence(int seq) {
  at(seq, "remove_sequence");
  seqs_.erase(seq);
}

std::vector<int> ToyBatchTarget::sequences() const {
  std::vector<int> ids;
  ids.reserve(seqs_.size());
  for (const auto& [id, _] : seqs_) ids.push_back(id);
  return ids;
}

std::span<const Token> ToyBatchTarget::tokens(int seq) const { return at(seq, "tokens").tokens(); }

std::vector<Logits> ToyBatchTarget::extend_batch(std::span<const BatchItem> items) {
  return run(items, "extend_batch");
}

void ToyBatchTarget::append_batch(std::span<const BatchItem> items) { run(items, "append_batch"); }

std::vector<Logits> ToyBatchTarget::run(std::span<const BatchItem> items, const char* who) {
  check_batch_items(*this, items, who);
  // Validate everything first, so a bad item leaves every sequence unchanged.
  int total = 0;
  for (size_t j = 0; j < items.size(); ++j) {
    const ToyTarget& t = at(items[j].seq, who);
    for (Token tok : items[j].tokens) {
      if (tok < 0 || tok >= config_.vocab_size) {
        throw std::invalid_argument(std::string("ToyBatchTarget::") + who + ": item " +
                                    std::to_string(j) + " has token id " + std::to_string(tok) +
                                    ", outside the vocabulary [0, " +
                                    std::to_string(config_.vocab_size) + ")");
      }
    }
    if (t.tokens().size() + items[j].tokens.size() > static_cast<size_t>(config_.max_length)) {
      throw ContextOverflow("ToyBatchTarget: appending " + std::to_string(items[j].tokens.size()) +
                            " tokens to sequence " + std::to_string(items[j].seq) + " (" +
                            std::to_string(t.tokens().size()) +
                            " tokens) would exceed max_length " +
                            std::to_string(config_.max_length));
    }
    total += static_cast<int>(items[j].tokens.size());
  }
  // The call's time is checked before any sequence changes (finite fields can add up to inf).
  const double seconds = cost_.seconds(total);
  clock_.check_advance(seconds);
  std::vector<Logits> out;
  out.reserve(items.size());
  for (const BatchItem& item : items) out.push_back(at(item.seq, who).extend(item.tokens));
  clock_.advance(seconds);
  ++calls_;
  fed_tokens_ += total;
  return out;
}

void ToyBatchTarget::truncate(int seq, int new_len) { at(seq, "truncate").truncate(new_len); }

std::vector<Token> ToyBatchTarget::make_prompt(int length) const {
  return ToyTarget(config_).make_prompt(length);
}

}  // namespace speclab
