#pragma once

/// The storages: ListStorage, TensorStorage, LazyTensorStorage, LazyMemmapStorage.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include <tdrl/replay/storage.h>

namespace tdrl::replay {

/// One TensorDict per slot, of any structure (TorchRL's ListStorage): entries may differ in
/// keys and shapes. `set` stores deep copies of the rows of `data` (`data.unbind(0)`);
/// `get` returns a lazy stack (tensordict::stack) of shallow copies of the chosen entries,
/// so keys added to a sample never reach the storage; the chosen entries must share their
/// batch size (ShapeError otherwise). `column(key)` stacks the key of every entry. Always
/// ndim 1.
///
/// Example:
/// ```
/// auto storage = std::make_shared<ListStorage>(100);
/// ReplayBuffer rb(storage);
/// rb.add(TensorDict({{"obs", torch::zeros({3})}}));
/// rb.add(TensorDict({{"obs", torch::zeros({5})}, {"extra", torch::ones({1})}}));
/// ```
class ListStorage final : public Storage {
 public:
  /// Throws ValueError when max_size < 1.
  explicit ListStorage(int64_t max_size);

  std::string name() const override { return "ListStorage"; }
  bool is_initialized() const override { return true; }
  /// The entry in slot `row` (aliased). Throws IndexError when `row` is not below num_rows().
  TensorDict at(int64_t row) const;

 protected:
  void check_set_impl(const TensorDict& data) const override;
  void set_impl(const torch::Tensor& rows, int64_t contiguous_from,
                const TensorDict& data) override;
  TensorDict get_impl(const torch::Tensor& index) const override;
  torch::Tensor column_impl(const NestedKey& key) const override;
  void clear_impl() override;
  void state_dict_impl(TensorDict& state) const override;
  std::function<void()> prepare_load_impl(const TensorDict& state, int64_t num_rows,
                                          int64_t row_numel) override;

 private:
  std::vector<TensorDict> entries_;
};

/// A storage over a TensorDict of batch `[max_rows, *element_batch]` (or `[max_rows, T, ...]`
/// with ndim 2): every element has the same keys, feature shapes and dtypes (TorchRL's
/// TensorStorage). Writes copy rows into the stored tensors (`index_copy_`, or a slice copy
/// when the rows are consecutive); reads gather rows with `index_select`, so samples are
/// copies. Only tensor leaves are stored (TypeError for non-tensor data: use ListStorage).
///
/// Built over a given TensorDict, the storage writes into it (it is aliased, e.g. your own
/// memory-mapped files) and starts empty: its contents count as stored only once written.
///
/// Example:
/// ```
/// TensorDict space({{"obs", torch::zeros({1000, 4})}}, {1000});
/// auto storage = std::make_shared<TensorStorage>(space);  // max_size 1000
/// ```
class TensorStorage : public Storage {
 public:
  /// A storage writing into `storage` (aliased), whose first `ndim` batch dims are the
  /// element grid: max_size is their product. Throws ValueError for ndim outside {1, 2} or a
  /// TensorDict with fewer batch dims, no tensor leaf or non-tensor entries.
  explicit TensorStorage(TensorDict storage, int64_t ndim = 1);

  std::string name() const override { return "TensorStorage"; }
  bool is_initialized() const override { return initialized_; }
  /// The whole stored TensorDict, batch `[max_rows, ...]` (aliased; rows past num_rows()
  /// hold no data). Empty with batch `[]` before the first write of a lazy storage.
  const TensorDict& data() const { return storage_; }
  torch::Device device() const { return device_; }
  std::string to_string() const override;

 protected:
  /// An uninitialised storage for the lazy subclasses.
  TensorStorage(int64_t max_size, const StorageOptions& options, const char* kind);

  /// A zero-filled TensorDict of batch `rows_shape + data.batch_size()[ndim:]` with `data`'s
  /// keys, nested TensorDicts and feature shapes, on device(): the lazy allocation. Override
  /// to allocate elsewhere (LazyMemmapStorage maps files).
  virtual TensorDict allocate(const TensorDict& data, const BatchSize& rows_shape) const;

  void check_set_impl(const TensorDict& data) const override;
  void set_impl(const torch::Tensor& rows, int64_t contiguous_from,
                const TensorDict& data) override;
  TensorDict get_impl(const torch::Tensor& index) const override;
  torch::Tensor column_impl(const NestedKey& key) const override;
  void state_dict_impl(TensorDict& state) const override;
  std::function<void()> prepare_load_impl(const TensorDict& state, int64_t num_rows,
                                          int64_t row_numel) override;

  /// Installs `storage` (batch `[max_rows(, T)]`, already allocated): caches its leaves.
  void adopt(TensorDict storage);
  /// Whether the structure may change on load (lazy storages re-allocate; a storage over a
  /// given TensorDict keeps it).
  virtual bool is_lazy() const { return false; }

 private:
  /// One stored leaf: its key, the stored tensor and a view with the element dims merged
  /// into one (`[max_size, *features]`), which gathers and row writes use.
  struct Leaf {
    NestedKey key;
    torch::Tensor tensor;
    torch::Tensor flat;
  };
  /// A nested TensorDict of the storage and its batch dims past the element dims.
  struct Container {
    NestedKey key;
    BatchSize extra_batch;
  };

  void check_matches(const TensorDict& data, const char* method) const;

  TensorDict storage_;
  torch::Device device_;
  bool initialized_ = false;
  BatchSize element_batch_;  // batch dims past the element dims
  std::vector<Leaf> leaves_;
  std::vector<Container> containers_;
};

/// A TensorStorage allocated in memory on its first write, from the structure of that
/// write's data (TorchRL's LazyTensorStorage): `max_size` rows of zeros (ndim 1), or
/// `max_size / T` rows of `T` steps (ndim 2, T the size of the first write's dim 1).
///
/// Example: `auto storage = std::make_shared<LazyTensorStorage>(1000000);`
class LazyTensorStorage : public TensorStorage {
 public:
  /// Throws ValueError when max_size < 1 or ndim is not 1 or 2.
  explicit LazyTensorStorage(int64_t max_size, StorageOptions options = {});
  std::string name() const override { return "LazyTensorStorage"; }

 protected:
  bool is_lazy() const override { return true; }
};

/// A TensorStorage in memory-mapped files under `scratch_dir`, created on the first write
/// (TorchRL's LazyMemmapStorage): the files are made at full size without writing data
/// (`memmap_like`, sparse), so the storage can exceed RAM, and every write goes to the files.
/// The folder uses tensordict's memmap layout (docs/memmap.md): `load_memmap(scratch_dir)`
/// reads it back. An existing folder at `scratch_dir` is replaced by the first write.
///
/// Checkpoints do not copy the data: state_dict records `scratch_dir` (after flushing the
/// files) and loading maps that folder again, adopting it as this storage's folder. Writes
/// after a checkpoint therefore change what the checkpoint refers to; copy the folder for an
/// independent snapshot.
///
/// Example: `auto storage = std::make_shared<LazyMemmapStorage>(10000000, "/data/rb");`
class LazyMemmapStorage : public TensorStorage {
 public:
  /// Throws ValueError when max_size < 1, ndim is not 1 or 2, `scratch_dir` is empty or the
  /// device is not the CPU.
  LazyMemmapStorage(int64_t max_size, std::string scratch_dir, StorageOptions options = {});
  std::string name() const override { return "LazyMemmapStorage"; }
  /// The folder of the files (after a load: the folder the checkpoint named).
  const std::string& scratch_dir() const { return scratch_dir_; }
  std::string to_string() const override;

 protected:
  bool is_lazy() const override { return true; }
  TensorDict allocate(const TensorDict& data, const BatchSize& rows_shape) const override;
  void state_dict_impl(TensorDict& state) const override;
  std::function<void()> prepare_load_impl(const TensorDict& state, int64_t num_rows,
                                          int64_t row_numel) override;

 private:
  std::string scratch_dir_;
};

}  // namespace tdrl::replay
