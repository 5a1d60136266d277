// Sampler (checks), RandomSampler, SamplerWithoutReplacement and SliceSampler.

#include <tdrl/replay/samplers.h>
#include <tdrl/replay/slice_sampler.h>

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

TensorDict Sampler::state_dict() const {
  TensorDict state;
  state.set("kind", name());
  state_dict_impl(state);
  return state;
}

std::function<void()> Sampler::prepare_load_state_dict(const TensorDict& state) {
  detail::check_type(state, name(), op("load_state_dict"));
  return prepare_load_impl(state);
}

std::ostream& operator<<(std::ostream& os, const Sampler& sampler) { return os << sampler.repr(); }

// ---- RandomSampler ----------------------------------------------------------------------------

SampleInfo RandomSampler::sample_impl(const Storage& storage, int64_t batch_size) {
  return {torch::randint(storage.size(), {batch_size}, torch::kLong), {}};
}

// ---- SamplerWithoutReplacement ------------------------------------------------------------------

SamplerWithoutReplacement::SamplerWithoutReplacement(SamplerWithoutReplacementOptions options)
    : options_(options) {}

std::string SamplerWithoutReplacement::repr() const {
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

// ---- SliceSampler -------------------------------------------------------------------------------

SliceSampler::SliceSampler(SliceSamplerOptions options)
    : options_(std::move(options)), key_({"next", "done"}), by_traj_ids_(false) {
  const bool by_len = options_.slice_len().has_value();
  const bool by_num = options_.num_slices().has_value();
  TDRL_CHECK(by_len != by_num, ValueError,
             std::string("SliceSampler: set exactly one of slice_len and num_slices, got "),
             (by_len ? "both" : "neither"));
  const int64_t value = by_len ? *options_.slice_len() : *options_.num_slices();
  TDRL_CHECK(!(value < 1), ValueError, std::string("SliceSampler: "),
             (by_len ? "slice_len" : "num_slices"), " must be at least 1, got ",
             std::to_string(value));
  TDRL_CHECK(!(options_.end_key() && options_.traj_key()), ValueError,
             "SliceSampler: set end_key or traj_key, not both");
  if (options_.traj_key()) {
    key_ = *options_.traj_key();
    by_traj_ids_ = true;
  } else if (options_.end_key()) {
    key_ = *options_.end_key();
  }
}

std::string SliceSampler::repr() const {
  std::ostringstream os;
  os << "SliceSampler(";
  if (options_.slice_len())
    os << "slice_len=" << *options_.slice_len();
  else
    os << "num_slices=" << *options_.num_slices();
  os << ", " << (by_traj_ids_ ? "traj_key=" : "end_key=") << key_.repr()
     << ", strict_length=" << (options_.strict_length() ? "True" : "False") << ")";
  return os.str();
}

void SliceSampler::clear() {
  cached_storage_ = nullptr;
  starts_ = lengths_ = torch::Tensor();
}

void SliceSampler::refresh(const Storage& storage) {
  const int64_t n = storage.size();
  if (cached_storage_ == &storage && cached_version_ == storage.version() && cached_size_ == n)
    return;
  const auto column = storage.column(key_).to(torch::kCPU).reshape({n, -1});
  torch::Tensor ends;
  if (by_traj_ids_) {
    const auto ids = column.select(1, 0);
    ends = torch::zeros({n}, torch::kBool);
    if (n > 1) ends.narrow(0, 0, n - 1).copy_(ids.narrow(0, 1, n - 1).ne(ids.narrow(0, 0, n - 1)));
  } else {
    ends = column.ne(0).any(1);
  }
  ends = ends.contiguous();
  bool* e = ends.data_ptr<bool>();
  e[n - 1] = true;
  const int64_t steps = storage.row_numel();
  if (storage.ndim() == 2) {
    for (int64_t i = steps - 1; i < n; i += steps) e[i] = true;
  } else if (storage.last_row() >= 0) {
    // In a full circular storage the newest row is followed by the oldest data.
    e[storage.last_row()] = true;
  }
  const auto last = torch::nonzero(ends).reshape({-1});
  auto starts = torch::zeros_like(last);
  if (last.numel() > 1)
    starts.narrow(0, 1, last.numel() - 1).copy_(last.narrow(0, 0, last.numel() - 1) + 1);
  starts_ = starts;
  lengths_ = last - starts + 1;
  cached_storage_ = &storage;
  cached_version_ = storage.version();
  cached_size_ = n;
}

SampleInfo SliceSampler::sample_impl(const Storage& storage, int64_t batch_size) {
  const std::string where = op("sample");
  int64_t slice_len = 0;
  int64_t num_slices = 0;
  if (options_.slice_len()) {
    slice_len = *options_.slice_len();
    TDRL_CHECK(batch_size % slice_len == 0, ValueError, where, "batch_size ",
               std::to_string(batch_size), " is not a multiple of slice_len ",
               std::to_string(slice_len));
    num_slices = batch_size / slice_len;
  } else {
    num_slices = *options_.num_slices();
    TDRL_CHECK(batch_size % num_slices == 0, ValueError, where, "batch_size ",
               std::to_string(batch_size), " is not a multiple of num_slices ",
               std::to_string(num_slices));
    slice_len = batch_size / num_slices;
  }
  refresh(storage);
  if (options_.strict_length()) {
    const auto eligible = torch::nonzero(lengths_ >= slice_len).reshape({-1});
    TDRL_CHECK(eligible.numel() != 0, ValueError, where,
               "no stored trajectory has slice_len=", std::to_string(slice_len),
               " steps (the longest of ", std::to_string(lengths_.numel()), " has ",
               std::to_string(lengths_.max().item<int64_t>()),
               "); sample shorter slices, store longer trajectories or set "
               "strict_length(false)");
    const auto pick =
        eligible.index_select(0, torch::randint(eligible.numel(), {num_slices}, torch::kLong));
    const auto span = lengths_.index_select(0, pick) - slice_len + 1;
    auto offset = (torch::rand({num_slices}, torch::kDouble) * span).floor().to(torch::kLong);
    offset = torch::minimum(offset, span - 1);
    const auto begin = starts_.index_select(0, pick) + offset;
    return {(begin.unsqueeze(1) + torch::arange(slice_len, torch::kLong)).reshape({-1}), {}};
  }
  // Without strict_length a short trajectory gives a slice of its whole length.
  const auto pick = torch::randint(lengths_.numel(), {num_slices}, torch::kLong);
  const auto u = torch::rand({num_slices}, torch::kDouble);
  const int64_t* pk = pick.data_ptr<int64_t>();
  const double* pu = u.data_ptr<double>();
  const int64_t* st = starts_.data_ptr<int64_t>();
  const int64_t* len = lengths_.data_ptr<int64_t>();
  std::vector<int64_t> index;
  index.reserve(static_cast<size_t>(batch_size));
  for (int64_t s = 0; s < num_slices; ++s) {
    const int64_t t = pk[s];
    const int64_t take = std::min(slice_len, len[t]);
    const int64_t span = len[t] - take + 1;
    const int64_t offset =
        std::min(static_cast<int64_t>(pu[s] * static_cast<double>(span)), span - 1);
    for (int64_t k = 0; k < take; ++k) index.push_back(st[t] + offset + k);
  }
  return {torch::tensor(index, torch::kLong), {}};
}

}  // namespace tdrl::replay
