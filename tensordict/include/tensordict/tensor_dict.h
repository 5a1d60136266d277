#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <torch/types.h>

#include <tensordict/errors.h>
#include <tensordict/memmap_tensor.h>
#include <tensordict/nested_key.h>
#include <tensordict/non_tensor_data.h>

namespace tensordict {

using BatchSize = std::vector<int64_t>;
using at::indexing::TensorIndex;

class TensorDict;
class LazyStackedTensorDict;
namespace detail {
class TensorDictImpl;
}

/// What a TensorDict entry holds: a tensor, a nested TensorDict, or non-tensor data.
using Value = std::variant<torch::Tensor, TensorDict, NonTensorData>;

/// Options of TensorDict::update.
struct UpdateOptions {
  /// Write into existing tensors (`set_`) instead of replacing them; keys missing in the
  /// destination are still added.
  bool inplace = false;
  /// Only these keys (and keys nested under them) are taken from the source; empty = all.
  std::vector<NestedKey> keys_to_update = {};
};

/// Options of TensorDict::map.
struct MapOptions {
  /// Threads running `fn` (the caller's thread is one of them).
  int num_workers = 1;
  /// Rows of dim 0 per call of `fn`; 0 splits dim 0 into `num_workers` equal chunks.
  int64_t chunk_size = 0;
  /// Called after each chunk with (chunks done, chunks in all), from the worker that finished
  /// it; calls never overlap.
  std::function<void(int64_t, int64_t)> progress = nullptr;
};

/// A dictionary of tensors that share leading batch dimensions, with nested keys, that
/// behaves like a tensor under indexing and shape operations.
///
/// Handle semantics, like `torch::Tensor`: copying a TensorDict aliases the same entries
/// (a write through one copy shows in all), `clone()` copies the tensors, assignment rebinds
/// the handle. Methods are `const` for the same reason `torch::Tensor`'s in-place methods are:
/// they do not rebind the handle; methods whose names end in `_` (and `set`, `del_`, `pop`,
/// `update`) write into the shared entries. A default-constructed TensorDict is empty with
/// batch size `[]`; a handle is never null.
///
/// Invariants, checked on every write: every tensor leaf's shape, every nested TensorDict's
/// batch size and every per-element non-tensor entry's shape starts with `batch_size()`;
/// when `device()` is set, every tensor lives there (writes are moved). Insertion order of
/// keys is kept.
///
/// Errors: misuse throws a tensordict::Error subclass whose message names the operation, the
/// key path and the shapes involved; a failed operation leaves the TensorDict unchanged.
///
/// Thread safety: concurrent reads are safe; concurrent writes to one TensorDict are not.
///
/// Example:
/// ```
/// TensorDict td({{"obs", torch::zeros({4, 3})}, {"next", {{"reward", torch::zeros({4, 1})}}}},
///               {4});
/// td.set({"next", "done"}, torch::zeros({4, 1}, torch::kBool));
/// TensorDict first = td.index({0});  // batch_size [], obs [3]
/// ```
class TensorDict {
 public:
  /// One `{key, value}` pair of a constructor list (defined below the class).
  struct Item;

  /// An empty TensorDict with batch size `[]` and no device.
  TensorDict();
  /// Entries from `{key, value}` pairs, validated against `batch_size`; tensors are moved to
  /// `device` when it is given. Throws as `set` does.
  TensorDict(std::initializer_list<Item> items, BatchSize batch_size = {},
             std::optional<torch::Device> device = std::nullopt);
  /// Entries from a list of pairs (e.g. the result of `items()`).
  TensorDict(const std::vector<std::pair<NestedKey, Value>>& items, BatchSize batch_size,
             std::optional<torch::Device> device = std::nullopt);
  /// An empty TensorDict of the given batch size: the start of lazy preallocation.
  static TensorDict empty(BatchSize batch_size, std::optional<torch::Device> device = std::nullopt);

  // ---- Shape and device -------------------------------------------------------------------

  /// The leading dims shared by every entry.
  const BatchSize& batch_size() const;
  /// Same as batch_size() (Python's `shape`).
  const BatchSize& shape() const { return batch_size(); }
  /// Number of batch dims.
  int64_t batch_dims() const { return static_cast<int64_t>(batch_size().size()); }
  int64_t ndim() const { return batch_dims(); }
  /// Product of the batch dims (1 for batch size `[]`).
  int64_t numel() const;
  /// Replaces the batch size; every entry must start with the new one (ShapeError naming the
  /// first entry that does not). Nested TensorDicts keep their own longer batch sizes only
  /// when those still start with the new one.
  const TensorDict& set_batch_size(BatchSize batch_size) const;
  /// Sets the batch size to the longest leading shape every entry shares.
  const TensorDict& auto_batch_size_() const;
  /// The device every tensor lives on, when one is required.
  std::optional<torch::Device> device() const;
  /// Drops the device requirement (tensors stay where they are).
  const TensorDict& clear_device_() const;

  // ---- Keys and reading -------------------------------------------------------------------

  /// True when `key` names an entry (any kind).
  bool contains(const NestedKey& key) const;
  /// Top-level keys in insertion order; with `include_nested`, nested paths too (depth
  /// first, a nested TensorDict's key before its children); `leaves_only` drops keys of
  /// nested TensorDicts.
  std::vector<NestedKey> keys(bool include_nested = false, bool leaves_only = false) const;
  /// Values in the order of `keys(include_nested, leaves_only)`.
  std::vector<Value> values(bool include_nested = false, bool leaves_only = false) const;
  /// Key/value pairs in the order of `keys(include_nested, leaves_only)`.
  std::vector<std::pair<NestedKey, Value>> items(bool include_nested = false,
                                                 bool leaves_only = false) const;

  /// The tensor at `key` (aliased, not copied). Throws KeyError listing the available keys
  /// (closest first) when missing, TypeError when the entry is not a tensor.
  torch::Tensor get(const NestedKey& key) const;
  /// The tensor at `key`, or nothing when missing; TypeError when it is not a tensor.
  std::optional<torch::Tensor> find(const NestedKey& key) const;
  /// The tensor at `key`, or `default_value` when missing.
  torch::Tensor get_or(const NestedKey& key, torch::Tensor default_value) const;
  /// The nested TensorDict at `key` (aliased). Throws KeyError / TypeError as `get`.
  TensorDict get_tensordict(const NestedKey& key) const;
  /// The non-tensor entry at `key`. Throws KeyError / TypeError as `get`.
  NonTensorData get_non_tensor(const NestedKey& key) const;
  /// The shared non-tensor value at `key` as `T` (see AnyValue::get).
  template <class T>
  T get_non_tensor(const NestedKey& key) const {
    return get_non_tensor(key).value<T>();
  }
  /// The entry at `key`, whatever it holds. Throws KeyError when missing.
  Value get_value(const NestedKey& key) const;
  /// The entry at `key`, or nothing when missing.
  std::optional<Value> find_value(const NestedKey& key) const;

  // ---- Writing ----------------------------------------------------------------------------

  /// Adds or replaces the entry at `key`. Missing intermediate TensorDicts are created with
  /// this TensorDict's batch size and device. Throws ShapeError when the value's leading
  /// dims differ from the batch size of the TensorDict it lands in, KeyError when the path
  /// runs through a non-TensorDict entry. The tensor is stored as given (aliased), moved to
  /// `device()` when one is set.
  const TensorDict& set(const NestedKey& key, const torch::Tensor& value) const;
  const TensorDict& set(const NestedKey& key, const TensorDict& value) const;
  const TensorDict& set(const NestedKey& key, const NonTensorData& value) const;
  const TensorDict& set(const NestedKey& key, const Value& value) const;
  /// Stores a string as uniform non-tensor data.
  const TensorDict& set(const NestedKey& key, const char* value) const;
  const TensorDict& set(const NestedKey& key, const std::string& value) const;
  /// Stores any copyable value as uniform non-tensor data (see AnyValue).
  template <class T>
  const TensorDict& set_non_tensor(const NestedKey& key, T value) const {
    return set(key, NonTensorData(AnyValue(std::move(value))));
  }
  /// Copies `value` into the existing tensor at `key` (every alias sees it). The key must
  /// exist and hold a tensor (KeyError/TypeError), `value` must broadcast to its shape
  /// (ShapeError) and have its dtype (TypeError).
  const TensorDict& set_(const NestedKey& key, const torch::Tensor& value) const;
  /// Copies `value` into the region `index` of the existing tensor at `key`; checks as
  /// `set_`, plus IndexError when the index does not fit the batch dims.
  const TensorDict& set_at_(const NestedKey& key, const torch::Tensor& value,
                            at::ArrayRef<TensorIndex> index) const;
  /// Removes the entry at `key`; KeyError when missing.
  const TensorDict& del_(const NestedKey& key) const;
  /// Removes the entry at `key` and returns it; KeyError when missing.
  Value pop(const NestedKey& key) const;
  /// Moves the entry at `old_key` to `new_key` (which may be nested elsewhere). KeyError
  /// when `old_key` is missing or `new_key` exists.
  const TensorDict& rename_key_(const NestedKey& old_key, const NestedKey& new_key) const;

  // ---- Indexing along batch dims -----------------------------------------------------------

  /// Indexes every entry along the batch dims with exactly what `Tensor::index` takes: ints,
  /// `Slice`, `Ellipsis` (standing for batch dims only), `None`, bool masks (a k-dim mask
  /// consumes and flattens k batch dims) and integer index tensors. Basic indexing returns
  /// views that alias this TensorDict's storage; masks and index tensors gather copies
  /// (use get_sub_tensordict for write-through). Throws IndexError when the index does not
  /// fit the batch dims.
  TensorDict index(at::ArrayRef<TensorIndex> index) const;
  TensorDict index(std::initializer_list<TensorIndex> index) const;
  /// Writes `value` into the region `index` of every entry. Keys of `value` missing here are
  /// allocated at full batch size first (zero-filled; "lazy preallocation"), nested keys
  /// included. Values must broadcast to the region (ShapeError) and share dtypes
  /// (TypeError); nothing is written unless every entry fits.
  const TensorDict& index_put_(at::ArrayRef<TensorIndex> index, const TensorDict& value) const;
  const TensorDict& index_put_(std::initializer_list<TensorIndex> index,
                               const TensorDict& value) const;
  /// Fills the region `index` of every tensor with `value`.
  const TensorDict& index_put_(at::ArrayRef<TensorIndex> index, const c10::Scalar& value) const;
  const TensorDict& index_put_(std::initializer_list<TensorIndex> index,
                               const c10::Scalar& value) const;
  /// A view of the region `index`: reads gather from this TensorDict on every access and
  /// writes (`set`, `set_`, `update`, `apply_`, ...) land in it, for index tensors and masks
  /// too. Keys it sets that do not exist here are allocated here at full batch size.
  TensorDict get_sub_tensordict(at::ArrayRef<TensorIndex> index) const;
  TensorDict get_sub_tensordict(std::initializer_list<TensorIndex> index) const;

  // ---- Shape operations on batch dims (dims count batch dims only) ------------------------

  /// Entries reshaped to `batch_size` + their feature dims (views when possible).
  TensorDict reshape(BatchSize batch_size) const;
  /// Entries viewed as `batch_size` + their feature dims; throws when a leaf cannot be viewed.
  TensorDict view(BatchSize batch_size) const;
  /// Merges batch dims `start_dim..end_dim` into one.
  TensorDict flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  /// Splits batch dim `dim` into `sizes`.
  TensorDict unflatten(int64_t dim, BatchSize sizes) const;
  /// Permutes the batch dims (a permutation of `0..batch_dims()-1`).
  TensorDict permute(std::vector<int64_t> dims) const;
  TensorDict transpose(int64_t dim0, int64_t dim1) const;
  /// Removes batch dim `dim` when it has size 1 (all size-1 batch dims without `dim`).
  TensorDict squeeze(std::optional<int64_t> dim = std::nullopt) const;
  /// Inserts a batch dim of size 1 at `dim` (in `[-batch_dims()-1, batch_dims()]`).
  TensorDict unsqueeze(int64_t dim) const;
  /// Broadcasts to `batch_size` (which may add leading dims), without copying.
  TensorDict expand(BatchSize batch_size) const;
  /// One TensorDict per slice along `dim` (views).
  std::vector<TensorDict> unbind(int64_t dim = 0) const;
  /// Pieces of `split_size` along `dim` (the last may be smaller).
  std::vector<TensorDict> split(int64_t split_size, int64_t dim = 0) const;
  /// Pieces of the given sizes along `dim`; they must add up to the dim's size.
  std::vector<TensorDict> split(std::vector<int64_t> split_sizes, int64_t dim = 0) const;
  /// `chunks` pieces of (nearly) equal size along `dim`.
  std::vector<TensorDict> chunk(int64_t chunks, int64_t dim = 0) const;
  /// A dense TensorDict whose leaves are contiguous; densifies lazy stacks and views.
  TensorDict contiguous() const;
  /// A dense TensorDict holding copies of the values (Python's `to_tensordict`).
  TensorDict to_tensordict() const;

  // ---- Whole-TensorDict operations ---------------------------------------------------------

  /// A copy; with `recurse = false` only the structure is new and tensors are aliased.
  TensorDict clone(bool recurse = true) const;
  /// Tensors detached from the autograd graph (aliasing storage).
  TensorDict detach() const;
  /// Tensors moved to `device`; the result requires that device. With `non_blocking`, a copy
  /// from pinned host memory to a GPU (or back) is queued on the current CUDA stream and this
  /// call returns before it is done (Python's `to(device, non_blocking=True)`); work queued on
  /// the same stream sees the data, the host must synchronize before it reads what came back.
  TensorDict to(torch::Device device, bool non_blocking = false) const;
  /// A copy whose CPU tensors are in page-locked (pinned) memory, which a GPU copies from
  /// asynchronously and faster (Python's `pin_memory()`); leaves already pinned are aliased.
  /// Needs a LibTorch with CUDA and a GPU: DeviceError otherwise, naming what is missing.
  /// Tensors on a GPU are refused (DeviceError naming the key), as in Python; nothing is copied
  /// then.
  TensorDict pin_memory() const;
  /// Whether every tensor leaf is in pinned host memory (false for an empty TensorDict).
  bool is_pinned() const;
  /// Every tensor cast to `dtype`.
  TensorDict to(torch::Dtype dtype) const;
  /// `fn` applied to every tensor leaf (nested too) into a new TensorDict of the same batch
  /// size and device. When `fn` returns an undefined tensor the key is dropped. Non-tensor
  /// entries are kept. ShapeError when a result no longer starts with the batch size.
  TensorDict apply(const std::function<torch::Tensor(const torch::Tensor&)>& fn) const;
  /// `fn(x, y)` over the leaves of this and `other` matched by key; KeyError when `other`
  /// misses a key of this TensorDict.
  TensorDict apply(
      const TensorDict& other,
      const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>& fn) const;
  /// `fn` applied to every tensor leaf, written back in place (dtype and shape must not
  /// change). Every result is computed before anything is written.
  const TensorDict& apply_(const std::function<torch::Tensor(const torch::Tensor&)>& fn) const;
  /// As `apply`, with the leaf's full key path given to `fn`.
  TensorDict named_apply(
      const std::function<torch::Tensor(const NestedKey&, const torch::Tensor&)>& fn) const;
  /// A new TensorDict with only `keys` (nested paths keep their parents). With `strict`,
  /// KeyError for a missing key; otherwise missing keys are skipped. Values are aliased.
  TensorDict select(const std::vector<NestedKey>& keys, bool strict = true) const;
  /// A new TensorDict without `keys` (missing keys are ignored). Values are aliased.
  TensorDict exclude(const std::vector<NestedKey>& keys) const;
  /// Writes every leaf of `other` here (nested TensorDicts merge, not replace); see
  /// UpdateOptions. Everything is validated before anything is written.
  const TensorDict& update(const TensorDict& other, const UpdateOptions& options = {}) const;
  /// Same, from a list of `{key, value}` pairs.
  const TensorDict& update(const std::vector<std::pair<NestedKey, Value>>& entries,
                           const UpdateOptions& options = {}) const;
  /// Copies every leaf of `other` into the existing tensors here (KeyError when missing).
  const TensorDict& update_(const TensorDict& other) const;
  /// Fills the tensor at `key` with `value`.
  const TensorDict& fill_(const NestedKey& key, const c10::Scalar& value) const;
  /// Fills every tensor with `value`.
  const TensorDict& fill_(const c10::Scalar& value) const;
  const TensorDict& zero_() const;
  /// Copies `other` (same keys, broadcastable shapes, same dtypes) into this TensorDict.
  const TensorDict& copy_(const TensorDict& other) const;
  /// Entries with `value` where `mask` (bool, shape = a prefix of the batch size) is true.
  TensorDict masked_fill(const torch::Tensor& mask, const c10::Scalar& value) const;
  const TensorDict& masked_fill_(const torch::Tensor& mask, const c10::Scalar& value) const;
  /// Entries of this where `condition` (bool, a prefix of the batch size) is true, else of
  /// `other` (same keys).
  TensorDict where(const torch::Tensor& condition, const TensorDict& other) const;
  TensorDict where(const torch::Tensor& condition, const c10::Scalar& other) const;
  /// One level of keys `"a<sep>b"` instead of nesting. ValueError when a flattened key
  /// collides with an existing one.
  TensorDict flatten_keys(const std::string& separator = ".") const;
  /// The inverse of flatten_keys: `"a.b"` becomes nested `("a", "b")`.
  TensorDict unflatten_keys(const std::string& separator = ".") const;
  /// The same nested structure (batch sizes, device), with no tensor or non-tensor leaves.
  TensorDict empty_like() const;
  /// True when there is no leaf anywhere (nested empty TensorDicts count as empty).
  bool is_empty() const;
  /// Sets `requires_grad` on every floating tensor.
  const TensorDict& requires_grad_(bool requires_grad = true) const;

  // ---- Comparison, arithmetic and reductions ----------------------------------------------

  /// Leaf-wise `==`: a TensorDict of bool tensors. Use `.all()` for one answer.
  TensorDict operator==(const TensorDict& other) const;
  TensorDict operator==(const c10::Scalar& other) const;
  TensorDict operator!=(const TensorDict& other) const;
  TensorDict operator!=(const c10::Scalar& other) const;
  /// True when every element of every leaf is true (non-zero).
  bool all() const;
  /// True when any element of any leaf is true (non-zero).
  bool any() const;
  /// Same keys, and every pair of leaves `allclose`.
  bool allclose(const TensorDict& other, double rtol = 1e-5, double atol = 1e-8) const;
  TensorDict operator+(const TensorDict& other) const;
  TensorDict operator-(const TensorDict& other) const;
  TensorDict operator*(const TensorDict& other) const;
  TensorDict operator/(const TensorDict& other) const;
  TensorDict operator+(const c10::Scalar& other) const;
  TensorDict operator-(const c10::Scalar& other) const;
  TensorDict operator*(const c10::Scalar& other) const;
  TensorDict operator/(const c10::Scalar& other) const;
  const TensorDict& add_(const TensorDict& other) const;
  const TensorDict& sub_(const TensorDict& other) const;
  const TensorDict& mul_(const TensorDict& other) const;
  const TensorDict& div_(const TensorDict& other) const;
  const TensorDict& add_(const c10::Scalar& other) const;
  const TensorDict& mul_(const c10::Scalar& other) const;
  /// Reductions over batch dims, per leaf: over every batch dim without `dim` (result batch
  /// size `[]`), else over batch dim `dim`.
  TensorDict sum(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  TensorDict mean(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  TensorDict max(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  TensorDict min(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;

  // ---- Persistence (format: docs/memmap.md) -------------------------------------------------

  /// Writes every tensor to `<prefix>/<key>.memmap` in Python tensordict 0.15's layout (keys
  /// with characters a file name cannot hold percent-encoded as Python does; nested
  /// TensorDicts, lazy stacks' members and non-tensor values in subfolders; a `meta.json` in
  /// every folder), then replaces this TensorDict's tensors by memory-mapped tensors over those
  /// files, so later in-place writes reach the files. Files are written into a temporary folder
  /// renamed to `prefix` only when complete; an existing `prefix` folder is replaced.
  /// `num_threads` files are written at once. Throws Error naming the path when a folder or file
  /// cannot be written, ValueError for the keys the layout reserves (`_type`, `_tdrl`, `shape`,
  /// `device`) or non-tensor values that are not string, integer, floating or bool, Error on a
  /// sub-tensordict view (memmap its parent).
  const TensorDict& memmap_(const std::string& prefix, int num_threads = 1) const;
  /// As memmap_, into a new memory-mapped TensorDict; this one is unchanged.
  TensorDict memmap(const std::string& prefix, int num_threads = 1) const;
  /// Files shaped like every tensor of this TensorDict (zero-filled, nothing copied) and a
  /// new TensorDict mapping them: the way to build a dataset larger than memory
  /// (`row.expand({n}).memmap_like(prefix)`, then fill it in chunks).
  TensorDict memmap_like(const std::string& prefix, int num_threads = 1) const;
  /// Maps a folder written by memmap_/memmap/memmap_like/save. Nothing is read but the
  /// meta.json files: pages load on first touch. A subfolder loads on its own. Throws Error
  /// naming the file when a meta.json is missing or malformed, a leaf file is missing or of
  /// the wrong size, or a dtype is unknown.
  static TensorDict load_memmap(const std::string& prefix,
                                MemmapMode mode = MemmapMode::kReadWrite);
  /// Python's `save`: the same as `memmap(prefix)`, discarding the result.
  void save(const std::string& prefix, int num_threads = 1) const;
  /// Python's `load`: the same as `load_memmap(prefix)`.
  static TensorDict load(const std::string& prefix, MemmapMode mode = MemmapMode::kReadWrite);
  /// True when every tensor (nested ones too) is memory-mapped (see MemoryMappedTensor).
  bool is_memmap() const;
  /// Moves every CPU tensor's storage into shared memory, in place (see
  /// tensordict::share_memory_): processes forked afterwards see each other's writes.
  const TensorDict& share_memory_() const;
  /// True when there is a tensor and every tensor's storage is shared across processes
  /// (shared memory, a read-write memory mapping, or CUDA memory).
  bool is_shared() const;

  // ---- Parallel map ---------------------------------------------------------------------------

  /// Splits dim 0 into chunks (views of this TensorDict), runs `fn` on each in a pool of
  /// `options.num_workers` threads and gathers the results along dim 0. When this TensorDict
  /// is memory-mapped the results are written into it chunk by chunk (memory stays bounded)
  /// and it is returned; when `fn` returns an empty TensorDict for every chunk (it wrote
  /// through its argument) this TensorDict is returned; otherwise the concatenated results.
  /// The first exception thrown by `fn` stops the remaining chunks and is rethrown here.
  /// Throws ValueError on batch size `[]`, num_workers < 1 or a negative chunk size.
  TensorDict map(const std::function<TensorDict(const TensorDict&)>& fn,
                 const MapOptions& options = {}) const;

  // ---- Identity and printing ---------------------------------------------------------------

  /// True when both handles share the same entries.
  bool is_same(const TensorDict& other) const { return impl_ == other.impl_; }
  /// True for a lazy stack (see LazyStackedTensorDict).
  bool is_lazy_stack() const;
  /// True for a view made by get_sub_tensordict.
  bool is_sub_tensordict() const;
  /// Python tensordict's repr: sorted fields, then batch_size, device, is_shared.
  std::string to_string() const;

  /// Internal: the shared state behind the handle.
  const std::shared_ptr<detail::TensorDictImpl>& impl() const { return impl_; }
  explicit TensorDict(std::shared_ptr<detail::TensorDictImpl> impl);

 private:
  std::shared_ptr<detail::TensorDictImpl> impl_;
};

/// One `{key, value}` pair of a constructor list. A value is a tensor, a TensorDict,
/// non-tensor data, a string, or a braced list of pairs that becomes a nested TensorDict
/// with the parent's batch size and device.
struct TensorDict::Item {
  Item(NestedKey key, torch::Tensor value);
  Item(NestedKey key, TensorDict value);
  Item(NestedKey key, NonTensorData value);
  Item(NestedKey key, const char* value);
  Item(NestedKey key, std::string value);
  Item(NestedKey key, std::initializer_list<Item> nested);

  NestedKey key;
  std::variant<torch::Tensor, TensorDict, NonTensorData, std::vector<Item>> value;
};

std::ostream& operator<<(std::ostream& os, const TensorDict& td);

/// Stacks TensorDicts of equal batch size along a new batch dim `dim`, lazily: no tensor is
/// copied until a key is read (see LazyStackedTensorDict). Leaves may have different
/// shapes past the batch dims. Throws ShapeError on unequal batch sizes, ValueError on an
/// empty list or a dim out of range.
LazyStackedTensorDict stack(const std::vector<TensorDict>& tensordicts, int64_t dim = 0);
/// Concatenates TensorDicts with the same keys along batch dim `dim` into a dense
/// TensorDict. Throws KeyError when key sets differ, ShapeError when other dims differ.
TensorDict cat(const std::vector<TensorDict>& tensordicts, int64_t dim = 0);

}  // namespace tensordict
