#pragma once

/// Writer: where new data goes in a storage (TorchRL's Writer), with RoundRobinWriter and
/// TensorDictMaxValueWriter.

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include <torch/types.h>

#include <tdrl/replay/component.h>
#include <tdrl/replay/storage.h>

namespace tdrl::replay {

/// Where a write went.
struct WriteResult {
  /// Storage rows written, int64 `[m]` (m <= n; may be empty).
  torch::Tensor rows;
  /// Rows of the data written there, int64 `[m]`; undefined when all n rows of the data
  /// were written, in order.
  torch::Tensor source;
};

/// Decides which storage rows new data overwrites, writes it there and keeps its cursor.
///
/// `extend` plans the write without changing anything, lets the storage check and copy the
/// data, and only then advances the writer: a write the storage rejects leaves both as they
/// were. Subclasses implement the protected hooks.
///
/// Thread safety: not synchronised. ReplayBuffer calls it under its exclusive lock.
class Writer : public ReplayComponent {
 public:
  /// Writes the rows of `data` (batch `[n, ...]`, `[n, T, ...]` for ndim-2 storages) into
  /// `storage` and returns where they went. Throws what the plan or Storage::set throws
  /// (ShapeError for data with too few batch dims, the storage's structure errors, ...);
  /// nothing is written or advanced then.
  WriteResult extend(const TensorDict& data, Storage& storage);

  /// Forgets the cursor and anything remembered about stored rows (ReplayBuffer::empty).
  virtual void clear() = 0;

 protected:
  /// Where `data` (at least one batch dim, n = data.size(0) >= 1) goes; must not change the
  /// writer.
  virtual WriteResult plan(const TensorDict& data, const Storage& storage) const = 0;
  /// Records a write the storage accepted; must not throw.
  virtual void commit(const TensorDict& data, const Storage& storage,
                      const WriteResult& result) = 0;
};

/// Writes at a cursor that wraps around (TorchRL's RoundRobinWriter): row `cursor`,
/// `cursor + 1`, ... modulo the storage's row count, so the oldest rows are overwritten
/// first. A write of more rows than the storage holds keeps only its last `max_rows` rows.
/// Example: `auto writer = std::make_shared<RoundRobinWriter>();`
class RoundRobinWriter final : public Writer {
 public:
  std::string name() const override { return "RoundRobinWriter"; }
  std::string to_string() const override;
  void clear() override { cursor_ = 0; }
  /// The next row to be written.
  int64_t cursor() const { return cursor_; }
  /// The cursor is the row after the stored ones until the storage is full, then any row.
  void check_against(const TensorDict& state, const StoredExtent& stored) const override;

 protected:
  WriteResult plan(const TensorDict& data, const Storage& storage) const override;
  void commit(const TensorDict& data, const Storage& storage, const WriteResult& result) override;
  void state_dict_impl(TensorDict& state) const override;
  std::function<void()> prepare_load_impl(const TensorDict& state) override;

 private:
  int64_t cursor_ = 0;
};

/// Keeps the rows of highest rank (TorchRL's TensorDictMaxValueWriter): the rank of a row is
/// its `rank_key` value, summed over the dims past the row dim. While the storage has free
/// rows they are filled in order (best incoming rows first); then an incoming row replaces
/// the lowest-ranked stored row when it ranks higher, so the storage always holds the
/// `max_rows` best rows seen (ties keep the stored row). Throws KeyError when the data lacks
/// `rank_key`, ValueError for NaN ranks.
///
/// Example: `std::make_shared<TensorDictMaxValueWriter>(NestedKey{"next", "reward"})`
class TensorDictMaxValueWriter final : public Writer {
 public:
  explicit TensorDictMaxValueWriter(NestedKey rank_key = "reward");
  std::string name() const override { return "TensorDictMaxValueWriter"; }
  std::string to_string() const override;
  void clear() override;
  const NestedKey& rank_key() const { return rank_key_; }
  /// The rank of every storage row, double `[max_rows]` (-inf for rows never written; a
  /// copy); empty before the first write.
  torch::Tensor ranks() const;
  /// One rank per storage row; rows never written rank -inf.
  void check_against(const TensorDict& state, const StoredExtent& stored) const override;

 protected:
  WriteResult plan(const TensorDict& data, const Storage& storage) const override;
  void commit(const TensorDict& data, const Storage& storage, const WriteResult& result) override;
  void state_dict_impl(TensorDict& state) const override;
  std::function<void()> prepare_load_impl(const TensorDict& state) override;

 private:
  torch::Tensor row_ranks(const TensorDict& data) const;

  NestedKey rank_key_;
  torch::Tensor ranks_;  // double [max_rows] (-inf for rows never written), once known
};

}  // namespace tdrl::replay
