// SliceSampler: contiguous slices of stored trajectories.

#include <tdrl/replay/slice_sampler.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "detail/checks.h"

namespace tdrl::replay {

using tensordict::ValueError;

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
  TDRL_CHECK(!(options_.burn_in() < 0) && !(by_len && options_.burn_in() >= value), ValueError,
             "SliceSampler: burn_in must be in [0, slice_len), got ",
             std::to_string(options_.burn_in()), by_len ? " with slice_len " : "",
             by_len ? std::to_string(value) : "");
  if (options_.traj_key()) {
    key_ = *options_.traj_key();
    by_traj_ids_ = true;
  } else if (options_.end_key()) {
    key_ = *options_.end_key();
  }
}

std::string SliceSampler::to_string() const {
  std::ostringstream os;
  os << "SliceSampler(";
  if (options_.slice_len())
    os << "slice_len=" << *options_.slice_len();
  else
    os << "num_slices=" << *options_.num_slices();
  os << ", " << (by_traj_ids_ ? "traj_key=" : "end_key=") << key_.to_string()
     << ", strict_length=" << (options_.strict_length() ? "True" : "False");
  if (options_.is_init_key()) os << ", is_init_key=" << options_.is_init_key()->to_string();
  if (options_.burn_in() > 0) os << ", burn_in=" << options_.burn_in();
  os << ")";
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
    return {(begin.unsqueeze(1) + torch::arange(slice_len, torch::kLong)).reshape({-1}),
            {},
            flags(std::vector<int64_t>(static_cast<size_t>(num_slices), slice_len), where)};
  }
  // Without strict_length a short trajectory gives a slice of its whole length.
  const auto pick = torch::randint(lengths_.numel(), {num_slices}, torch::kLong);
  const auto u = torch::rand({num_slices}, torch::kDouble);
  const int64_t* pk = pick.data_ptr<int64_t>();
  const double* pu = u.data_ptr<double>();
  const int64_t* st = starts_.data_ptr<int64_t>();
  const int64_t* len = lengths_.data_ptr<int64_t>();
  std::vector<int64_t> index, lengths;
  index.reserve(static_cast<size_t>(batch_size));
  for (int64_t s = 0; s < num_slices; ++s) {
    const int64_t t = pk[s];
    const int64_t take = std::min(slice_len, len[t]);
    const int64_t span = len[t] - take + 1;
    const int64_t offset =
        std::min(static_cast<int64_t>(pu[s] * static_cast<double>(span)), span - 1);
    for (int64_t k = 0; k < take; ++k) index.push_back(st[t] + offset + k);
    lengths.push_back(take);
  }
  return {torch::tensor(index, torch::kLong), {}, flags(lengths, where)};
}

std::vector<std::pair<NestedKey, torch::Tensor>> SliceSampler::flags(
    const std::vector<int64_t>& lengths, const std::string& where) const {
  std::vector<std::pair<NestedKey, torch::Tensor>> out;
  const int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  const int64_t burn_in = options_.burn_in();
  auto first = torch::zeros({total}, torch::kBool);
  auto warm = torch::zeros({total}, torch::kBool);
  bool* f = first.data_ptr<bool>();
  bool* w = warm.data_ptr<bool>();
  int64_t at = 0;
  for (const int64_t length : lengths) {
    // A slice made only of burn-in would train on nothing.
    TDRL_CHECK(!(burn_in > 0 && length <= burn_in), ValueError, where, "a slice of ",
               std::to_string(length), " steps is not longer than burn_in ",
               std::to_string(burn_in), "; sample longer slices or lower burn_in");
    if (length > 0) f[at] = true;
    for (int64_t k = 0; k < std::min(burn_in, length); ++k) w[at + k] = true;
    at += length;
  }
  if (options_.is_init_key()) out.emplace_back(*options_.is_init_key(), first);
  if (burn_in > 0) out.emplace_back(options_.burn_in_key(), warm);
  return out;
}

}  // namespace tdrl::replay
