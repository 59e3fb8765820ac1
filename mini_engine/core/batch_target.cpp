#include "mini_engine/core/batch_target.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace speclab {

void check_batch_items(const BatchTarget& target, std::span<const BatchItem> items,
                       const char* who) {
  if (items.empty()) throw std::invalid_argument(target.name() + ": " + who + " with no items");
  const std::vector<int> live = target.sequences();
  std::vector<int> seen;
  seen.reserve(items.size());
  for (size_t j = 0; j < items.size(); ++j) {
    const int seq = items[j].seq;
    const std::string where = target.name() + ": " + who + " item " + std::to_string(j) +
                              " (sequence " + std::to_string(seq) + ")";
    if (!std::binary_search(live.begin(), live.end(), seq)) {
      throw std::invalid_argument(where + " names no live sequence");
    }
    if (std::find(seen.begin(), seen.end(), seq) != seen.end()) {
      throw std::invalid_argument(where + " names a sequence that an earlier item already names");
    }
    if (items[j].tokens.empty()) throw std::invalid_argument(where + " has no tokens");
    seen.push_back(seq);
  }
}

SequenceView::SequenceView(BatchTarget& target, int seq) : target_(target), seq_(seq) {
  const std::vector<int> live = target_.sequences();
  if (!std::binary_search(live.begin(), live.end(), seq)) {
    throw std::out_of_range("SequenceView: " + target_.name() + " has no live sequence " +
                            std::to_string(seq));
  }
}

std::string SequenceView::name() const {
  return target_.name() + "[seq " + std::to_string(seq_) + "]";
}

Logits SequenceView::extend(std::span<const Token> tokens) {
  if (tokens.empty()) throw std::invalid_argument(name() + "::extend: no tokens to append");
  const BatchItem item{seq_, tokens};
  std::vector<Logits> out = target_.extend_batch(std::span<const BatchItem>(&item, 1));
  return std::move(out.front());
}

void SequenceView::append(std::span<const Token> tokens) {
  if (tokens.empty()) throw std::invalid_argument(name() + "::append: no tokens to append");
  const BatchItem item{seq_, tokens};
  target_.append_batch(std::span<const BatchItem>(&item, 1));
}

}  // namespace speclab
