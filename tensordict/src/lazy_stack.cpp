// The lazy stack: reads stack members' entries on demand, writes split into the members.

#include <tensordict/lazy_stacked_tensordict.h>

#include <algorithm>

#include "detail/impl.h"

namespace tensordict::detail {

LazyStackImpl::LazyStackImpl(std::vector<TensorDict> tensordicts, int64_t stack_dim)
    : tensordicts_(std::move(tensordicts)), stack_dim_(stack_dim) {
  const auto& b0 = tensordicts_.front().batch_size();
  device_ = tensordicts_.front().device();
  for (size_t i = 1; i < tensordicts_.size(); ++i) {
    TDRL_CHECK(tensordicts_[i].batch_size() == b0, ShapeError, "tensordict::stack: TensorDict ",
               std::to_string(i), " has batch_size ", shape_str(tensordicts_[i].batch_size()),
               " but TensorDict 0 has ", shape_str(b0),
               "; stacked TensorDicts need equal batch sizes");
    if (tensordicts_[i].device() != device_) device_ = std::nullopt;
  }
  batch_size_ = b0;
  batch_size_.insert(batch_size_.begin() + stack_dim_, static_cast<int64_t>(tensordicts_.size()));
}

std::vector<std::string> LazyStackImpl::keys() const {
  std::vector<std::string> out;
  for (const auto& k : tensordicts_.front().impl()->keys()) {
    bool everywhere = std::all_of(tensordicts_.begin() + 1, tensordicts_.end(),
                                  [&](const TensorDict& td) { return td.impl()->contains(k); });
    if (everywhere) out.push_back(k);
  }
  return out;
}

bool LazyStackImpl::contains(const std::string& key) const {
  return std::all_of(tensordicts_.begin(), tensordicts_.end(),
                     [&](const TensorDict& td) { return td.impl()->contains(key); });
}

std::optional<Value> LazyStackImpl::find(const std::string& key) const {
  std::vector<Value> values;
  values.reserve(tensordicts_.size());
  for (const auto& td : tensordicts_) {
    auto v = td.impl()->find(key);
    if (!v) return std::nullopt;
    values.push_back(std::move(*v));
  }
  static constexpr const char* kOp = "LazyStackedTensorDict";
  if (std::holds_alternative<torch::Tensor>(values.front())) {
    auto tensors = values_as<torch::Tensor>(values, kOp, key);
    for (size_t i = 1; i < tensors.size(); ++i) {
      TDRL_CHECK(tensors[i].sizes() == tensors[0].sizes(), ShapeError,
                 "LazyStackedTensorDict: key '", key, "' has shape ", shape_str(tensors[0].sizes()),
                 " in member 0 but ", shape_str(tensors[i].sizes()), " in member ",
                 std::to_string(i), "; read it per member (tensordicts()[i].get)");
    }
    return Value(torch::stack(tensors, stack_dim_));
  }
  if (std::holds_alternative<TensorDict>(values.front()))
    return Value(TensorDict(
        std::make_shared<LazyStackImpl>(values_as<TensorDict>(values, kOp, key), stack_dim_)));
  return Value(stack_non_tensor(values_as<NonTensorData>(values, kOp, key), stack_dim_));
}

std::vector<Value> LazyStackImpl::split(const Value& value) const {
  std::vector<Value> out;
  if (auto* t = std::get_if<torch::Tensor>(&value)) {
    for (auto& piece : t->unbind(stack_dim_)) out.emplace_back(piece);
  } else if (auto* td = std::get_if<TensorDict>(&value)) {
    for (auto& piece : td->unbind(stack_dim_)) out.emplace_back(piece);
  } else {
    const auto& nt = std::get<NonTensorData>(value);
    for (size_t i = 0; i < tensordicts_.size(); ++i) {
      if (nt.is_uniform()) {
        auto b = nt.batch_size();
        b.erase(b.begin() + stack_dim_);
        out.emplace_back(nt.with_batch(b));
      } else {
        out.emplace_back(nt.map_positions(
            [&](const torch::Tensor& p) { return p.select(stack_dim_, static_cast<int64_t>(i)); }));
      }
    }
  }
  return out;
}

void LazyStackImpl::store(const std::string& key, Value value) {
  auto pieces = split(value);
  for (size_t i = 0; i < tensordicts_.size(); ++i) tensordicts_[i].set(key, pieces[i]);
}

void LazyStackImpl::store_inplace(const std::string& key, const Value& value) {
  auto pieces = split(value);
  for (size_t i = 0; i < tensordicts_.size(); ++i) {
    if (auto* t = std::get_if<torch::Tensor>(&pieces[i])) {
      tensordicts_[i].set_(key, *t);
    } else if (auto* td = std::get_if<TensorDict>(&pieces[i])) {
      tensordicts_[i].get_tensordict(key).update_(*td);
    } else {
      tensordicts_[i].set(key, pieces[i]);
    }
  }
}

void LazyStackImpl::erase(const std::string& key) {
  for (auto& td : tensordicts_) td.del_(key);
}

void LazyStackImpl::rename(const std::string& old_key, const std::string& new_key) {
  for (auto& td : tensordicts_) td.rename_key_(old_key, new_key);
}

void LazyStackImpl::set_batch_size(BatchSize) {
  throw ShapeError(
      "TensorDict::set_batch_size: a lazy stack's batch size follows its members; "
      "call contiguous() first");
}

void LazyStackImpl::set_device(std::optional<torch::Device> device) {
  for (auto& td : tensordicts_) {
    TDRL_CHECK(!device, DeviceError,
               "LazyStackedTensorDict: set the device of each member instead");
    td.clear_device_();
  }
  device_ = device;
}

}  // namespace tensordict::detail
