#include <tensordict/non_tensor_data.h>

#include <numeric>

namespace tensordict {

bool AnyValue::operator==(const AnyValue& other) const {
  if (holder_ == other.holder_) return true;
  return type() == other.type() && holder_->equals(*other.holder_);
}

NonTensorData::NonTensorData(AnyValue value, std::vector<int64_t> batch_size)
    : pool_{std::move(value)}, batch_size_(std::move(batch_size)) {}

NonTensorData NonTensorData::per_element(std::vector<AnyValue> pool, torch::Tensor positions) {
  TDRL_CHECK(positions.scalar_type() == torch::kLong, TypeError,
             "NonTensorData::per_element: positions must be int64, got ",
             std::string(c10::toString(positions.scalar_type())));
  if (positions.numel() > 0) {
    const int64_t lo = positions.min().item<int64_t>();
    const int64_t hi = positions.max().item<int64_t>();
    TDRL_CHECK(!(lo < 0 || hi >= static_cast<int64_t>(pool.size())), ValueError,
               "NonTensorData::per_element: positions span [", std::to_string(lo), ", ",
               std::to_string(hi), "] but the pool holds ", std::to_string(pool.size()), " values");
  }
  NonTensorData out;
  out.pool_ = std::move(pool);
  out.batch_size_ = positions.sizes().vec();
  out.positions_ = std::move(positions);
  return out;
}

const AnyValue& NonTensorData::value() const {
  if (is_uniform()) return pool_.front();
  auto flat = positions_.reshape({-1}).contiguous();
  const int64_t* p = flat.data_ptr<int64_t>();
  TDRL_CHECK(flat.numel() != 0, TypeError, "NonTensorData::value: the entry has no element");
  const AnyValue& first = pool_[p[0]];
  for (int64_t i = 1; i < flat.numel(); ++i) {
    TDRL_CHECK(pool_[p[i]] == first, TypeError,
               "NonTensorData::value: elements hold different values (", first.to_string(), " and ",
               pool_[p[i]].to_string(), "); read them with tolist()");
  }
  return first;
}

std::vector<AnyValue> NonTensorData::tolist() const {
  if (is_uniform()) {
    const int64_t n = std::accumulate(batch_size_.begin(), batch_size_.end(), int64_t{1},
                                      std::multiplies<int64_t>());
    return std::vector<AnyValue>(static_cast<size_t>(n), pool_.front());
  }
  auto flat = positions_.reshape({-1}).contiguous();
  const int64_t* p = flat.data_ptr<int64_t>();
  std::vector<AnyValue> out;
  out.reserve(static_cast<size_t>(flat.numel()));
  for (int64_t i = 0; i < flat.numel(); ++i) out.push_back(pool_[p[i]]);
  return out;
}

NonTensorData NonTensorData::with_batch(std::vector<int64_t> batch_size) const {
  NonTensorData out = *this;
  out.batch_size_ = std::move(batch_size);
  return out;
}

NonTensorData NonTensorData::map_positions(
    const std::function<torch::Tensor(const torch::Tensor&)>& fn) const {
  NonTensorData out = as_per_element();
  out.positions_ = fn(out.positions_);
  out.batch_size_ = out.positions_.sizes().vec();
  return out;
}

NonTensorData NonTensorData::as_per_element() const {
  if (!is_uniform()) return *this;
  NonTensorData out = *this;
  out.positions_ = torch::zeros(batch_size_, torch::kLong);
  return out;
}

bool NonTensorData::operator==(const NonTensorData& other) const {
  if (batch_size_ != other.batch_size_) return false;
  if (is_uniform() && other.is_uniform()) return pool_.front() == other.pool_.front();
  auto a = tolist();
  auto b = other.tolist();
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

namespace {
bool all_uniform_equal(const std::vector<NonTensorData>& items) {
  for (const auto& item : items)
    if (!item.is_uniform() || !(item.pool().front() == items.front().pool().front())) return false;
  return true;
}

// Pools concatenated, each item's positions shifted past the pools before it.
std::pair<std::vector<AnyValue>, std::vector<torch::Tensor>> merged_positions(
    const std::vector<NonTensorData>& items) {
  std::vector<AnyValue> pool;
  std::vector<torch::Tensor> positions;
  for (const auto& item : items) {
    auto per = item.as_per_element();
    positions.push_back(per.positions() + static_cast<int64_t>(pool.size()));
    pool.insert(pool.end(), per.pool().begin(), per.pool().end());
  }
  return {std::move(pool), std::move(positions)};
}
}  // namespace

NonTensorData stack_non_tensor(const std::vector<NonTensorData>& items, int64_t dim) {
  TDRL_CHECK(!items.empty(), ValueError, "stack_non_tensor: nothing to stack");
  if (all_uniform_equal(items)) {
    auto batch = items.front().batch_size();
    batch.insert(batch.begin() + dim, static_cast<int64_t>(items.size()));
    return items.front().with_batch(batch);
  }
  auto [pool, positions] = merged_positions(items);
  return NonTensorData::per_element(std::move(pool), torch::stack(positions, dim));
}

NonTensorData cat_non_tensor(const std::vector<NonTensorData>& items, int64_t dim) {
  TDRL_CHECK(!items.empty(), ValueError, "cat_non_tensor: nothing to concatenate");
  if (all_uniform_equal(items)) {
    auto batch = items.front().batch_size();
    int64_t total = 0;
    for (const auto& item : items) total += item.batch_size()[dim];
    batch[dim] = total;
    return items.front().with_batch(batch);
  }
  auto [pool, positions] = merged_positions(items);
  return NonTensorData::per_element(std::move(pool), torch::cat(positions, dim));
}

}  // namespace tensordict
