#include "detail/impl.h"

#include <algorithm>

namespace tensordict::detail {

const Value* DenseImpl::lookup(const std::string& key) const {
  if (entries_.size() > kLinearMax) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
  }
  for (const auto& entry : entries_)
    if (entry.first == key) return &entry.second;
  return nullptr;
}

std::vector<std::string> DenseImpl::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& entry : entries_) out.push_back(entry.first);
  return out;
}

std::optional<Value> DenseImpl::find(const std::string& key) const {
  if (const Value* v = lookup(key)) return *v;
  return std::nullopt;
}

void DenseImpl::append(std::string key, Value value) {
  entries_.emplace_back(std::move(key), std::move(value));
  if (entries_.size() > kLinearMax) {
    if (index_.size() + 1 == entries_.size())
      index_.emplace(entries_.back().first, entries_.size() - 1);
    else
      rebuild_index();
  }
}

void DenseImpl::store(const std::string& key, Value value) {
  if (Value* existing = lookup(key)) {
    *existing = std::move(value);
    return;
  }
  append(key, std::move(value));
}

void DenseImpl::store_inplace(const std::string& key, const Value& value) {
  Value* existing = lookup(key);
  TORCH_INTERNAL_ASSERT(existing, "store_inplace on a missing key ", key);
  if (auto* dst = std::get_if<torch::Tensor>(existing)) {
    dst->copy_(std::get<torch::Tensor>(value));
  } else if (auto* dst_td = std::get_if<TensorDict>(existing)) {
    dst_td->update_(std::get<TensorDict>(value));
  } else {
    *existing = value;
  }
}

void DenseImpl::erase(const std::string& key) {
  auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == key; });
  TORCH_INTERNAL_ASSERT(it != entries_.end(), "erase of a missing key ", key);
  entries_.erase(it);
  rebuild_index();
}

void DenseImpl::rename(const std::string& old_key, const std::string& new_key) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& e) { return e.first == old_key; });
  TORCH_INTERNAL_ASSERT(it != entries_.end(), "rename of a missing key ", old_key);
  Value value = std::move(it->second);
  entries_.erase(it);
  rebuild_index();
  append(new_key, std::move(value));
}

void DenseImpl::rebuild_index() {
  index_.clear();
  if (entries_.size() <= kLinearMax) return;
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
}

}  // namespace tensordict::detail
