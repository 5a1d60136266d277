// Sampler (checks), RandomSampler and SamplerWithoutReplacement.

#include <tdrl/replay/samplers.h>

#include <cmath>
#include <sstream>

#include "detail/checks.h"

namespace tdrl::replay {

using tensordict::Error;
using tensordict::ShapeError;
using tensordict::ValueError;

// ---- Sampler ------------------------------------------------------------------------------------

SampleInfo Sampler::sample(const Storage& storage, int64_t batch_size) {
  TDRL_CHECK(!(batch_size < 1), ValueError, op("sample"), "batch_size must be at least 1, got ",
             std::to_string(batch_size));
  TDRL_CHECK(storage.size() != 0, Error, op("sample"),
             "the storage is empty; write data before sampling");
  return sample_impl(storage, batch_size);
}

void Sampler::extend(const torch::Tensor& index) {
  const std::string where = op("extend");
  const auto idx = detail::as_index(index, where, "index");
  detail::check_index_range(idx, capacity(), where, "index", "capacity");
  if (idx.numel() > 0) extend_impl(idx);
}

void Sampler::update_priority(const torch::Tensor& index, const torch::Tensor& priority,
                              int64_t storage_size) {
  const std::string where = op("update_priority");
  const auto idx = detail::as_index(index, where, "index");
  TDRL_CHECK(priority.defined(), ValueError, where, "priority is an undefined tensor");
  const int64_t n = idx.numel();
  auto values = priority.detach().to(torch::kCPU, torch::kDouble).reshape({-1});
  if (values.numel() == 1 && n != 1) values = values.expand({n});
  values = values.contiguous();
  TDRL_CHECK(values.numel() == n, ShapeError, where, "priority has shape ",
             detail::sizes_str(priority), " (", std::to_string(priority.numel()),
             " values) but index has ", std::to_string(n), " entries; give one priority per index");
  detail::check_index_range(idx, std::min(storage_size, capacity()), where, "index", "size");
  const double* v = values.data_ptr<double>();
  const int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i]) || v[i] < 0) {
      std::ostringstream os;
      os << where << "priority " << v[i] << " at position " << i << " (index " << p[i] << ") is "
         << (std::isfinite(v[i]) ? "negative" : "not finite")
         << "; priorities must be finite and >= 0 (e.g. the absolute TD error)";
      throw ValueError(os.str());
    }
  }
  if (n > 0 && has_priorities()) update_priority_impl(idx, values);
}

// ---- RandomSampler ----------------------------------------------------------------------------

SampleInfo RandomSampler::sample_impl(const Storage& storage, int64_t batch_size) {
  return {torch::randint(storage.size(), {batch_size}, torch::kLong), {}};
}

// ---- SamplerWithoutReplacement ------------------------------------------------------------------

SamplerWithoutReplacement::SamplerWithoutReplacement(SamplerWithoutReplacementOptions options)
    : options_(options) {}

std::string SamplerWithoutReplacement::to_string() const {
  std::ostringstream os;
  os << "SamplerWithoutReplacement(drop_last=" << (options_.drop_last() ? "True" : "False")
     << ", shuffle=" << (options_.shuffle() ? "True" : "False") << ")";
  return os.str();
}

void SamplerWithoutReplacement::clear() {
  permutation_ = torch::Tensor();
  cursor_ = 0;
  ran_out_ = false;
}

SampleInfo SamplerWithoutReplacement::sample_impl(const Storage& storage, int64_t batch_size) {
  const int64_t n = storage.size();
  const bool drop_last = options_.drop_last();
  TDRL_CHECK(!(drop_last && n < batch_size), ValueError, op("sample"), "the storage holds ",
             std::to_string(n), " elements, fewer than batch_size ", std::to_string(batch_size),
             ", and drop_last leaves no full batch; sample fewer or set drop_last(false)");
  int64_t remaining = permutation_.defined() ? permutation_.numel() - cursor_ : 0;
  if (remaining == 0 || (drop_last && remaining < batch_size)) {
    permutation_ =
        options_.shuffle() ? torch::randperm(n, torch::kLong) : torch::arange(n, torch::kLong);
    cursor_ = 0;
    remaining = n;
  }
  const int64_t k = std::min(batch_size, remaining);
  auto index = permutation_.narrow(0, cursor_, k).clone();  // callers may write to it
  cursor_ += k;
  remaining -= k;
  ran_out_ = remaining == 0 || (drop_last && remaining < batch_size);
  return {index, {}};
}

void SamplerWithoutReplacement::state_dict_impl(TensorDict& state) const {
  if (permutation_.defined()) state.set("permutation", permutation_);
  state.set_non_tensor("cursor", cursor_);
  state.set_non_tensor("ran_out", ran_out_);
}

void SamplerWithoutReplacement::check_against(const TensorDict& state,
                                              const StoredExtent& stored) const {
  if (!state.contains("permutation")) return;
  const std::string where = op("load_state_dict");
  const auto permutation = detail::read_tensor(state, "permutation", where);
  if (permutation.numel() == 0) return;
  const int64_t lo = permutation.min().item<int64_t>();
  const int64_t hi = permutation.max().item<int64_t>();
  TDRL_CHECK(lo >= 0 && hi < stored.size, ValueError, where, "the checkpoint's epoch holds ",
             "element ", std::to_string(lo < 0 ? lo : hi), " but its storage holds ",
             std::to_string(stored.size), " elements; the checkpoint's parts come from different ",
             "saves or were edited");
}

std::function<void()> SamplerWithoutReplacement::prepare_load_impl(const TensorDict& state) {
  const std::string where = op("load_state_dict");
  torch::Tensor permutation;
  if (state.contains("permutation"))
    permutation =
        detail::as_index(detail::read_tensor(state, "permutation", where), where, "permutation")
            .clone();
  const int64_t cursor = detail::read_int(state, "cursor", where);
  const int64_t length = permutation.defined() ? permutation.numel() : 0;
  TDRL_CHECK(!(cursor < 0 || cursor > length), ValueError, where, "cursor ", std::to_string(cursor),
             " is outside the saved epoch of ", std::to_string(length), " elements");
  auto ran_out = state.get_non_tensor("ran_out").value<bool>();
  return [this, permutation, cursor, ran_out] {
    permutation_ = permutation;
    cursor_ = cursor;
    ran_out_ = ran_out;
  };
}

}  // namespace tdrl::replay
