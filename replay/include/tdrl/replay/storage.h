#pragma once

/// Storage: where a replay buffer keeps its data (TorchRL's Storage), and StorageOptions.

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include <torch/arg.h>
#include <torch/types.h>

#include <tensordict/nested_key.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::replay {

/// What a storage checkpoint holds, for checking a ReplayBuffer checkpoint's other parts
/// against it: `rows` of `row_capacity` rows written (the writer's units) and `size` elements
/// (`rows * row_numel`, the sampler's units).
struct StoredExtent {
  int64_t rows = 0;
  int64_t row_capacity = 0;
  int64_t size = 0;
};

using tensordict::BatchSize;
using tensordict::NestedKey;
using tensordict::TensorDict;

/// Options shared by the tensor storages.
/// Example: `StorageOptions().ndim(2)` for data laid out as [env, time].
struct StorageOptions {
  /// How many leading batch dims count as elements: 1 (rows of transitions), or 2 for
  /// [row, time] layouts where each write adds whole rows of `T` steps (T fixed by the first
  /// write) and samplers draw single steps. Default 1.
  TORCH_ARG(int64_t, ndim) = 1;
  /// Where the data lives; writes are moved there and samples come back there. Default CPU.
  TORCH_ARG(torch::Device, device) = torch::kCPU;
};

/// Where a replay buffer keeps its data: up to `max_rows()` rows along dim 0, written and
/// read by index.
///
/// Units: a *row* is one entry along dim 0; an *element* is what samplers draw and what the
/// `index` of a sample counts. With ndim 1 they are the same. With ndim 2 a row holds
/// `row_numel()` elements (the size of dim 1) and element `i` is row `i / row_numel()`, step
/// `i % row_numel()` (row-major flat index).
///
/// Public methods check their arguments and throw tensordict errors (IndexError, ShapeError,
/// KeyError, TypeError, ValueError) naming the operation, key and shapes; a failed call
/// changes nothing. Subclasses implement the protected hooks.
///
/// Thread safety: not synchronised. ReplayBuffer calls writers (`set`, `clear`, loading) under
/// its exclusive lock and readers (`get`, `column`, `state_dict`) under its shared lock, so
/// readers must not modify the storage (all storages here only read).
class Storage {
 public:
  virtual ~Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// The class name ("LazyTensorStorage", ...), used in messages and checkpoints.
  virtual std::string name() const = 0;

  /// Elements the storage holds when full, as given at construction.
  int64_t max_size() const { return max_size_; }
  /// Leading batch dims that count as elements (1 or 2).
  int64_t ndim() const { return ndim_; }
  /// Elements per row: 1 with ndim 1; with ndim 2 the size of dim 1, fixed by the first
  /// write (0 before it).
  int64_t row_numel() const { return row_numel_; }
  /// Rows along dim 0 when full: `max_size() / row_numel()` (0 before the first write of an
  /// ndim-2 storage).
  int64_t max_rows() const { return row_numel_ > 0 ? max_size_ / row_numel_ : 0; }
  /// Rows written so far: one past the highest row ever written.
  int64_t num_rows() const { return num_rows_; }
  /// Elements stored: `num_rows() * row_numel()`.
  int64_t size() const { return num_rows_ * row_numel_; }
  /// True when the storage knows the structure of its data (after the first write, or from
  /// construction for TensorStorage).
  virtual bool is_initialized() const = 0;
  /// The row written last by the latest `set` (the newest data), -1 before any write.
  int64_t last_row() const { return last_row_; }
  /// Changes on every `set`, `clear` and load: lets samplers cache what they derive from the
  /// data (SliceSampler's trajectory bounds).
  uint64_t version() const { return version_; }

  /// Rows a write of `data` may address: `max_rows()`, or for an ndim-2 storage before its
  /// first write `max_size() / data.size(1)`. Throws ShapeError when `data` has fewer than
  /// `ndim()` batch dims, ValueError when one row of `data` holds more than `max_size()`
  /// elements.
  int64_t max_rows_for(const TensorDict& data) const;

  /// Copies `data` (batch `[n, *element_batch]`, or `[n, T, ...]` with ndim 2) into rows
  /// `rows` (int64 `[n]`, each in `[0, max_rows_for(data))`, no repeats). A lazy storage
  /// allocates on its first write from `data`'s structure. Throws IndexError for rows out of
  /// range, ValueError for a row given twice, ShapeError when `rows` and `data` disagree in
  /// length, and (tensor storages) KeyError/ShapeError/TypeError when `data`'s keys, feature
  /// shapes or dtypes differ from the stored ones, naming the key and both shapes; nothing is
  /// written then.
  void set(const torch::Tensor& rows, const TensorDict& data);

  /// The elements at flat `index` (int64 `[B]`, each in `[0, size())`), gathered into a new
  /// TensorDict of batch `[B, *element_batch]` on the storage's device (tensor storages
  /// copy; ListStorage returns a lazy stack of its entries). Throws IndexError naming the
  /// first index out of range.
  TensorDict get(const torch::Tensor& index) const;

  /// The tensor at `key` over every stored element, `[size(), *feature dims]` (tensor
  /// storages return a view of the storage: do not write through it). Throws KeyError
  /// listing the stored keys when `key` is missing, Error when the storage is empty.
  torch::Tensor column(const NestedKey& key) const;

  /// Forgets every element (size 0). Allocations are kept for reuse.
  void clear();

  /// The storage's checkpoint: a TensorDict of batch `[]` holding `kind`, the sizes and,
  /// for in-memory storages, the stored rows under "data" (aliased, not copied; saving
  /// copies). LazyMemmapStorage stores only the folder of its files.
  TensorDict state_dict() const;
  /// Checks `state` (from state_dict, typically loaded from disk) against this storage and
  /// prepares everything that can fail (allocation, copies, mapping files); returns the
  /// action that installs it. Throws ValueError (wrong `kind`, sizes) or the errors of
  /// `set` (structure) and changes nothing.
  std::function<void()> prepare_load_state_dict(const TensorDict& state);
  /// prepare_load_state_dict(state), then the returned action.
  void load_state_dict(const TensorDict& state) { prepare_load_state_dict(state)(); }
  /// The extent of a checkpoint `state` that prepare_load_state_dict accepted.
  static StoredExtent extent_of(const TensorDict& state);

  /// One line: `LazyTensorStorage(max_size=1000, size=10, ndim=1, device=cpu)`.
  virtual std::string to_string() const;

 protected:
  /// Checks max_size >= 1 and ndim in {1, 2}; `row_numel` is 1 for ndim 1, else 0 until the
  /// first write (or given by a storage built over existing data).
  Storage(int64_t max_size, int64_t ndim, const char* kind);

  /// Checks that `data` fits (structure, shapes, dtypes); throws as `set` does.
  virtual void check_set_impl(const TensorDict& data) const = 0;
  /// Writes the already checked `data` at `rows` (valid, distinct). `contiguous_from` is the
  /// first row when `rows` is `first, first + 1, ...`, else -1 (writes may use a slice).
  virtual void set_impl(const torch::Tensor& rows, int64_t contiguous_from,
                        const TensorDict& data) = 0;
  /// Gathers valid flat element indices.
  virtual TensorDict get_impl(const torch::Tensor& index) const = 0;
  /// The column of a stored key over `size()` elements.
  virtual torch::Tensor column_impl(const NestedKey& key) const = 0;
  /// Drops stored data that clear() forgets (ListStorage drops its entries).
  virtual void clear_impl() {}
  /// Adds the subclass's entries (data, paths) to `state`.
  virtual void state_dict_impl(TensorDict& state) const = 0;
  /// Prepares installing `state`'s data for `num_rows` rows of `row_numel` elements; the
  /// returned action must not throw.
  virtual std::function<void()> prepare_load_impl(const TensorDict& state, int64_t num_rows,
                                                  int64_t row_numel) = 0;

  /// Sets row_numel (ndim 2, when the structure becomes known).
  void set_row_numel(int64_t row_numel) { row_numel_ = row_numel; }
  /// The message prefix "<name>::<op>: ".
  std::string op(const char* method) const { return name() + "::" + method + ": "; }

 private:
  int64_t max_size_;
  int64_t ndim_;
  int64_t row_numel_;
  int64_t num_rows_ = 0;
  int64_t last_row_ = -1;
  uint64_t version_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Storage& storage);

}  // namespace tdrl::replay
