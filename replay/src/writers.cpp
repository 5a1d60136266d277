// Writer (plan, write, commit), RoundRobinWriter and TensorDictMaxValueWriter.

#include <tdrl/replay/writers.h>

#include <limits>
#include <sstream>

#include "detail/checks.h"

namespace tdrl::replay {

using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::ValueError;

// ---- Writer -------------------------------------------------------------------------------------

WriteResult Writer::extend(const TensorDict& data, Storage& storage) {
  TDRL_CHECK(!(data.batch_dims() < 1), ShapeError, op("extend"),
             "data has batch_size [] but extend writes rows along dim 0; ",
             "use add for a single element");
  if (data.batch_size()[0] == 0) return {torch::empty({0}, torch::kLong), {}};
  WriteResult result = plan(data, storage);
  if (result.rows.numel() > 0)
    storage.set(result.rows, result.source.defined() ? data.index({result.source}) : data);
  commit(data, storage, result);
  return result;
}

// ---- RoundRobinWriter ---------------------------------------------------------------------------

std::string RoundRobinWriter::to_string() const {
  return "RoundRobinWriter(cursor=" + std::to_string(cursor_) + ")";
}

WriteResult RoundRobinWriter::plan(const TensorDict& data, const Storage& storage) const {
  const int64_t n = data.batch_size()[0];
  const int64_t max_rows = storage.max_rows_for(data);
  // A write longer than the storage keeps only its last max_rows rows.
  const int64_t m = std::min(n, max_rows);
  const int64_t skip = n - m;
  const int64_t start = (cursor_ + skip) % max_rows;
  WriteResult result;
  result.rows = start + m <= max_rows
                    ? torch::arange(start, start + m, torch::kLong)
                    : torch::arange(start, start + m, torch::kLong).remainder_(max_rows);
  if (skip > 0) result.source = torch::arange(skip, n, torch::kLong);
  return result;
}

void RoundRobinWriter::commit(const TensorDict& data, const Storage& storage,
                              const WriteResult& result) {
  cursor_ = (cursor_ + data.batch_size()[0]) % storage.max_rows();
}

void RoundRobinWriter::state_dict_impl(TensorDict& state) const {
  state.set_non_tensor("cursor", cursor_);
}

std::function<void()> RoundRobinWriter::prepare_load_impl(const TensorDict& state) {
  const std::string where = op("load_state_dict");
  const int64_t cursor = detail::read_int(state, "cursor", where);
  TDRL_CHECK(!(cursor < 0), ValueError, where, "cursor ", std::to_string(cursor), " is negative");
  return [this, cursor] { cursor_ = cursor; };
}

void RoundRobinWriter::check_against(const TensorDict& state, const StoredExtent& stored) const {
  const std::string where = op("load_state_dict");
  const int64_t cursor = detail::read_int(state, "cursor", where);
  const bool full = stored.rows >= stored.row_capacity;
  const bool ok = full ? cursor < std::max<int64_t>(stored.row_capacity, 1) : cursor == stored.rows;
  TDRL_CHECK(ok, ValueError, where, "the checkpoint's cursor ", std::to_string(cursor),
             " does not fit its storage of ", std::to_string(stored.rows), " rows written of ",
             std::to_string(stored.row_capacity),
             full ? " (a full storage's cursor is a row of it)"
                  : " (until the storage is full, the cursor is the row after the last written)",
             "; the checkpoint's parts come from different saves or were edited");
}

// ---- TensorDictMaxValueWriter -------------------------------------------------------------------

TensorDictMaxValueWriter::TensorDictMaxValueWriter(NestedKey rank_key)
    : rank_key_(std::move(rank_key)) {}

std::string TensorDictMaxValueWriter::to_string() const {
  return "TensorDictMaxValueWriter(rank_key=" + rank_key_.to_string() + ")";
}

void TensorDictMaxValueWriter::clear() { ranks_ = torch::Tensor(); }

torch::Tensor TensorDictMaxValueWriter::ranks() const {
  return ranks_.defined() ? ranks_.clone() : torch::empty({0}, torch::kDouble);
}

torch::Tensor TensorDictMaxValueWriter::row_ranks(const TensorDict& data) const {
  const std::string where = op("extend");
  auto value = data.find(rank_key_);
  TDRL_CHECK(value, KeyError, where, "data has no rank key ", rank_key_.to_string(),
             " (its keys: ", detail::keys_str(data), ")");
  const int64_t n = data.batch_size()[0];
  auto ranks = value->detach().to(torch::kCPU, torch::kDouble).reshape({n, -1}).sum(1);
  TDRL_CHECK(!(torch::isnan(ranks).any().item<bool>()), ValueError, where, "rank key ",
             rank_key_.to_string(), " holds NaN (shape ", detail::sizes_str(*value),
             "); ranks must be numbers");
  return ranks;
}

WriteResult TensorDictMaxValueWriter::plan(const TensorDict& data, const Storage& storage) const {
  const int64_t n = data.batch_size()[0];
  const int64_t max_rows = storage.max_rows_for(data);
  const int64_t filled = storage.num_rows();
  const auto ranks = row_ranks(data);
  const auto order = std::get<1>(ranks.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  // Free rows take the best incoming rows, in order.
  const int64_t fill = std::min(max_rows - filled, n);
  std::vector<torch::Tensor> rows = {torch::arange(filled, filled + fill, torch::kLong)};
  std::vector<torch::Tensor> source = {order.narrow(0, 0, fill)};
  // The rest compete with the stored rows: the i-th best incoming replaces the i-th worst
  // stored row while it ranks strictly higher, which keeps the best max_rows of both.
  const int64_t k = std::min(n - fill, filled);
  if (k > 0) {
    auto stored =
        ranks_.defined() && ranks_.numel() >= filled
            ? ranks_.narrow(0, 0, filled)
            : torch::full({filled}, -std::numeric_limits<double>::infinity(), torch::kDouble);
    auto worst = stored.topk(k, /*dim=*/0, /*largest=*/false, /*sorted=*/true);
    const auto candidates = order.narrow(0, fill, k);
    const auto better = ranks.index_select(0, candidates) > std::get<0>(worst);
    const int64_t w = better.sum().item<int64_t>();
    rows.push_back(std::get<1>(worst).narrow(0, 0, w));
    source.push_back(candidates.narrow(0, 0, w));
  }
  return {torch::cat(rows), torch::cat(source)};
}

void TensorDictMaxValueWriter::commit(const TensorDict& data, const Storage& storage,
                                      const WriteResult& result) {
  const int64_t max_rows = storage.max_rows();
  if (!ranks_.defined() || ranks_.numel() != max_rows) {
    auto fresh = torch::full({max_rows}, -std::numeric_limits<double>::infinity(), torch::kDouble);
    if (ranks_.defined()) {
      const int64_t keep = std::min(max_rows, ranks_.numel());
      fresh.narrow(0, 0, keep).copy_(ranks_.narrow(0, 0, keep));
    }
    ranks_ = fresh;
  }
  if (result.rows.numel() > 0)
    ranks_.index_put_({result.rows}, row_ranks(data).index_select(0, result.source));
}

void TensorDictMaxValueWriter::state_dict_impl(TensorDict& state) const {
  state.set("rank_key", rank_key_.join_parts("."));
  if (ranks_.defined()) state.set("ranks", ranks_);
}

void TensorDictMaxValueWriter::check_against(const TensorDict& state,
                                             const StoredExtent& stored) const {
  if (!state.contains("ranks")) return;
  const std::string where = op("load_state_dict");
  const auto ranks = detail::read_tensor(state, "ranks", where).to(torch::kDouble).reshape({-1});
  const bool size_ok = ranks.numel() == stored.row_capacity;
  const bool unwritten_ok =
      !size_ok || stored.rows >= ranks.numel() ||
      torch::isneginf(ranks.narrow(0, stored.rows, ranks.numel() - stored.rows)).all().item<bool>();
  TDRL_CHECK(size_ok && unwritten_ok, ValueError, where, "the checkpoint's ranks (",
             std::to_string(ranks.numel()), " values) do not fit its storage of ",
             std::to_string(stored.rows), " rows written of ", std::to_string(stored.row_capacity),
             " (one rank per row, -inf for rows never written); the checkpoint's parts come "
             "from different saves or were edited");
}

std::function<void()> TensorDictMaxValueWriter::prepare_load_impl(const TensorDict& state) {
  const std::string where = op("load_state_dict");
  torch::Tensor ranks;
  if (state.contains("ranks")) {
    ranks = detail::read_tensor(state, "ranks", where);
    TDRL_CHECK(ranks.dim() == 1, ValueError, where, "saved ranks must be 1-D, got shape ",
               detail::sizes_str(ranks));
    ranks = ranks.to(torch::kDouble).clone();
  }
  return [this, ranks] { ranks_ = ranks; };
}

}  // namespace tdrl::replay
