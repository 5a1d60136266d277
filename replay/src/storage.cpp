// Storage: the checks and bookkeeping every storage shares (rows, bounds, state).

#include <tdrl/replay/storage.h>

#include <algorithm>
#include <sstream>
#include <utility>

#include "detail/checks.h"

namespace tdrl::replay {

using tensordict::Error;
using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::ValueError;

// ---- Storage ---------------------------------------------------------------------------------

Storage::Storage(int64_t max_size, int64_t ndim, const char* kind)
    : max_size_(max_size), ndim_(ndim), row_numel_(ndim == 1 ? 1 : 0) {
  TDRL_CHECK(!(max_size < 1), ValueError, std::string(kind), ": max_size must be at least 1, got ",
             std::to_string(max_size));
  TDRL_CHECK(!(ndim != 1 && ndim != 2), ValueError, std::string(kind),
             ": ndim must be 1 (rows) or 2 ([rows, steps]), got ", std::to_string(ndim));
}

int64_t Storage::max_rows_for(const TensorDict& data) const {
  TDRL_CHECK(!(data.batch_dims() < ndim_), ShapeError, op("set"), "data has batch_size ",
             shape_str(data.batch_size()), " but this storage has ndim ", std::to_string(ndim_),
             ": data needs at least ", std::to_string(ndim_), " batch dims ([rows",
             (ndim_ == 2 ? ", steps" : ""), ", ...])");
  if (row_numel_ > 0) return max_rows();
  const int64_t steps = data.batch_size()[1];
  TDRL_CHECK(!(steps < 1 || steps > max_size_), ValueError, op("set"), "data has batch_size ",
             shape_str(data.batch_size()), ": a row of ", std::to_string(steps),
             " steps must hold between 1 and max_size ", std::to_string(max_size_), " elements");
  return max_size_ / steps;
}

void Storage::set(const torch::Tensor& rows, const TensorDict& data) {
  const std::string where = op("set");
  TDRL_CHECK(!(data.batch_dims() < 1), ShapeError, where,
             "data has batch_size [] but writes need a leading row dim; ",
             "unsqueeze(0) a single element (or use ReplayBuffer::add)");
  const auto r = detail::as_index(rows, where, "rows");
  const int64_t n = data.batch_size()[0];
  TDRL_CHECK(r.numel() == n, ShapeError, where, "rows has ", std::to_string(r.numel()),
             " entries but data has ", std::to_string(n), " rows (batch_size ",
             shape_str(data.batch_size()), ")");
  const int64_t limit = max_rows_for(data);
  detail::check_index_range(r, limit, where, "row", "max_rows");
  if (n == 0) return;
  const int64_t* p = r.data_ptr<int64_t>();
  bool consecutive = true;
  for (int64_t i = 1; i < n && consecutive; ++i) consecutive = p[i] == p[0] + i;
  if (!consecutive) {
    // Repeated rows would make the result depend on the copy order.
    std::vector<int64_t> sorted(p, p + n);
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    TDRL_CHECK(dup == sorted.end(), ValueError, where, "row ", std::to_string(*dup),
               " appears more than once in one write; write each row once");
  }
  check_set_impl(data);
  const bool first_write = row_numel_ == 0;
  const int64_t steps = first_write ? data.batch_size()[1] : row_numel_;
  set_impl(r, consecutive ? p[0] : -1, data);
  if (first_write) row_numel_ = steps;
  num_rows_ = std::max(num_rows_, *std::max_element(p, p + n) + 1);
  last_row_ = p[n - 1];
  ++version_;
}

TensorDict Storage::get(const torch::Tensor& index) const {
  const std::string where = op("get");
  const auto idx = detail::as_index(index, where, "index");
  detail::check_index_range(idx, size(), where, "index", "size");
  return get_impl(idx);
}

torch::Tensor Storage::column(const NestedKey& key) const {
  TDRL_CHECK(size() != 0, Error, op("column"), "the storage is empty; there is no ",
             key.to_string(), " to read");
  return column_impl(key);
}

void Storage::clear() {
  clear_impl();
  num_rows_ = 0;
  last_row_ = -1;
  ++version_;
}

TensorDict Storage::state_dict() const {
  TensorDict state;
  state.set("kind", name());
  state.set_non_tensor("max_size", max_size_);
  state.set_non_tensor("ndim", ndim_);
  state.set_non_tensor("row_numel", row_numel_);
  state.set_non_tensor("num_rows", num_rows_);
  state.set_non_tensor("last_row", last_row_);
  state_dict_impl(state);
  return state;
}

std::function<void()> Storage::prepare_load_state_dict(const TensorDict& state) {
  const std::string where = op("load_state_dict");
  detail::check_type(state, name(), where);
  const int64_t max_size = detail::read_int(state, "max_size", where);
  const int64_t ndim = detail::read_int(state, "ndim", where);
  TDRL_CHECK(!(max_size != max_size_ || ndim != ndim_), ValueError, where,
             "the checkpoint is of a storage with max_size ", std::to_string(max_size),
             " and ndim ", std::to_string(ndim), " but this one has max_size ",
             std::to_string(max_size_), " and ndim ", std::to_string(ndim_),
             "; build the storage as it was when saved");
  const int64_t row_numel = detail::read_int(state, "row_numel", where);
  const int64_t num_rows = detail::read_int(state, "num_rows", where);
  const int64_t last_row = detail::read_int(state, "last_row", where);
  const bool row_numel_ok = ndim == 1 ? row_numel == 1 : row_numel >= 0 && row_numel <= max_size;
  const int64_t rows_cap = row_numel > 0 ? max_size / row_numel : 0;
  const bool last_row_ok = num_rows == 0 ? last_row == -1 : last_row >= 0 && last_row < num_rows;
  TDRL_CHECK(row_numel_ok && num_rows >= 0 && num_rows <= rows_cap && last_row_ok, ValueError,
             where, "inconsistent sizes in the checkpoint (row_numel ", std::to_string(row_numel),
             ", num_rows ", std::to_string(num_rows), ", last_row ", std::to_string(last_row),
             " for max_size ", std::to_string(max_size), ")");
  auto install = prepare_load_impl(state, num_rows, row_numel);
  return [this, install, num_rows, row_numel, last_row] {
    install();
    if (ndim_ == 2 && row_numel > 0) row_numel_ = row_numel;
    num_rows_ = num_rows;
    last_row_ = last_row;
    ++version_;
  };
}

StoredExtent Storage::extent_of(const TensorDict& state) {
  const std::string where = "Storage::extent_of: ";
  const int64_t max_size = detail::read_int(state, "max_size", where);
  const int64_t row_numel = detail::read_int(state, "row_numel", where);
  const int64_t rows = detail::read_int(state, "num_rows", where);
  return {rows, row_numel > 0 ? max_size / row_numel : 0, rows * row_numel};
}

std::string Storage::to_string() const {
  std::ostringstream os;
  os << name() << "(max_size=" << max_size_ << ", size=" << size() << ", ndim=" << ndim_ << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Storage& storage) {
  return os << storage.to_string();
}

}  // namespace tdrl::replay
