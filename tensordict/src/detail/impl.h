#pragma once

// The shared state behind a TensorDict handle. Three kinds: a dense dictionary, a lazy
// stack of TensorDicts, and a view of a region of another TensorDict. The handle implements
// every operation on top of these single-level primitives; values reaching `store` have
// already been validated by the handle (shape against batch size, device).

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <tensordict/tensor_dict.h>

namespace tensordict::detail {

enum class Kind { kDense, kLazyStack, kSub };

class TensorDictImpl {
 public:
  virtual ~TensorDictImpl() = default;
  virtual Kind kind() const = 0;
  virtual const BatchSize& batch_size() const = 0;
  virtual const std::optional<torch::Device>& device() const = 0;
  virtual std::vector<std::string> keys() const = 0;
  virtual bool contains(const std::string& key) const = 0;
  virtual std::optional<Value> find(const std::string& key) const = 0;
  /// Adds or replaces an entry.
  virtual void store(const std::string& key, Value value) = 0;
  /// Copies into an existing entry: tensors with copy_, TensorDicts leaf by leaf.
  virtual void store_inplace(const std::string& key, const Value& value) = 0;
  virtual void erase(const std::string& key) = 0;
  virtual void rename(const std::string& old_key, const std::string& new_key) = 0;
  virtual void set_batch_size(BatchSize batch_size) = 0;
  virtual void set_device(std::optional<torch::Device> device) = 0;
};

/// The ordinary TensorDict: an insertion-ordered list of entries. Small dictionaries are
/// searched linearly (faster than hashing for the handful of keys RL data has); a hash index
/// is kept once there are more than kLinearMax entries.
class DenseImpl final : public TensorDictImpl {
 public:
  DenseImpl(BatchSize batch_size, std::optional<torch::Device> device)
      : batch_size_(std::move(batch_size)), device_(device) {}

  Kind kind() const override { return Kind::kDense; }
  const BatchSize& batch_size() const override { return batch_size_; }
  const std::optional<torch::Device>& device() const override { return device_; }
  std::vector<std::string> keys() const override;
  bool contains(const std::string& key) const override { return lookup(key) != nullptr; }
  std::optional<Value> find(const std::string& key) const override;
  void store(const std::string& key, Value value) override;
  void store_inplace(const std::string& key, const Value& value) override;
  void erase(const std::string& key) override;
  void rename(const std::string& old_key, const std::string& new_key) override;
  void set_batch_size(BatchSize batch_size) override { batch_size_ = std::move(batch_size); }
  void set_device(std::optional<torch::Device> device) override { device_ = device; }

  /// The entry's value, or nullptr; valid until the next write.
  const Value* lookup(const std::string& key) const;
  Value* lookup(const std::string& key) {
    return const_cast<Value*>(static_cast<const DenseImpl*>(this)->lookup(key));
  }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  /// Appends without checking for an existing key (the caller knows it is new).
  void append(std::string key, Value value);

 private:
  static constexpr size_t kLinearMax = 16;
  void rebuild_index();

  BatchSize batch_size_;
  std::optional<torch::Device> device_;
  std::vector<std::pair<std::string, Value>> entries_;
  std::unordered_map<std::string, size_t> index_;  // used only past kLinearMax entries
};

/// tensordict::stack's result: members stacked along `stack_dim`, read on demand.
class LazyStackImpl final : public TensorDictImpl {
 public:
  LazyStackImpl(std::vector<TensorDict> tensordicts, int64_t stack_dim);

  Kind kind() const override { return Kind::kLazyStack; }
  const BatchSize& batch_size() const override { return batch_size_; }
  const std::optional<torch::Device>& device() const override { return device_; }
  std::vector<std::string> keys() const override;
  bool contains(const std::string& key) const override;
  std::optional<Value> find(const std::string& key) const override;
  void store(const std::string& key, Value value) override;
  void store_inplace(const std::string& key, const Value& value) override;
  void erase(const std::string& key) override;
  void rename(const std::string& old_key, const std::string& new_key) override;
  void set_batch_size(BatchSize batch_size) override;
  void set_device(std::optional<torch::Device> device) override;

  const std::vector<TensorDict>& tensordicts() const { return tensordicts_; }
  int64_t stack_dim() const { return stack_dim_; }

 private:
  /// `value` split along the stack dim, one piece per member.
  std::vector<Value> split(const Value& value) const;

  std::vector<TensorDict> tensordicts_;
  int64_t stack_dim_;
  BatchSize batch_size_;
  std::optional<torch::Device> device_;
};

/// get_sub_tensordict's result: a region of a parent TensorDict, read and written through.
class SubImpl final : public TensorDictImpl {
 public:
  /// `index` must already be normalised against the parent's batch dims.
  SubImpl(TensorDict parent, std::vector<TensorIndex> index, BatchSize batch_size);

  Kind kind() const override { return Kind::kSub; }
  const BatchSize& batch_size() const override { return batch_size_; }
  const std::optional<torch::Device>& device() const override;
  std::vector<std::string> keys() const override { return parent_.impl()->keys(); }
  bool contains(const std::string& key) const override { return parent_.impl()->contains(key); }
  std::optional<Value> find(const std::string& key) const override;
  void store(const std::string& key, Value value) override;
  void store_inplace(const std::string& key, const Value& value) override;
  void erase(const std::string& key) override;
  void rename(const std::string& old_key, const std::string& new_key) override;
  void set_batch_size(BatchSize batch_size) override;
  void set_device(std::optional<torch::Device> device) override;

  const TensorDict& parent() const { return parent_; }
  const std::vector<TensorIndex>& index() const { return index_; }

 private:
  TensorDict parent_;
  std::vector<TensorIndex> index_;
  BatchSize batch_size_;
};

// ---- Helpers shared by the sources --------------------------------------------------------

/// The batch size of a value: a tensor's leading `ndim` dims are not known here, so this
/// returns the full shape for tensors, the batch size for TensorDicts and non-tensor data.
std::vector<int64_t> value_shape(const Value& value);
/// True when `shape` starts with `prefix`.
bool starts_with(c10::IntArrayRef shape, c10::IntArrayRef prefix);
/// `dim` wrapped into `[0, ndim)` (or `[0, ndim]` with `allow_end`); ValueError naming `op`.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op, bool allow_end = false);
/// `index` with Ellipsis replaced by full slices so that it addresses `batch_dims` dims only;
/// checks it against `batch_size` (IndexError naming `op`).
std::vector<TensorIndex> normalize_index(at::ArrayRef<TensorIndex> index,
                                         const BatchSize& batch_size, const char* op);
/// The batch size that `index` (normalised) gives when applied to `batch_size`.
BatchSize indexed_batch_size(const BatchSize& batch_size, const std::vector<TensorIndex>& index);
/// normalize_index and indexed_batch_size together; an index that does not fit throws
/// IndexError naming `op`, the index and the batch size.
std::pair<std::vector<TensorIndex>, BatchSize> resolve_region(at::ArrayRef<TensorIndex> index,
                                                              const BatchSize& batch,
                                                              const char* op);
/// Python-style repr of an index for messages.
std::string index_str(at::ArrayRef<TensorIndex> index);

/// Builds a new dense TensorDict by mapping every entry of `td` with a batch-shape operation:
/// `leaf` maps tensors (and the position tensors of per-element non-tensor data) whose
/// leading dims are `td`'s batch dims; nested TensorDicts recurse with batch size
/// `new_batch + their extra dims`. Lazy stacks and views are read through their entries.
/// With `keep_non_tensor = false` non-tensor entries are dropped (reductions).
TensorDict map_batch(const TensorDict& td, const BatchSize& new_batch,
                     const std::function<torch::Tensor(const torch::Tensor&)>& leaf,
                     bool keep_non_tensor = true);

/// Structural map: `fn` on each tensor leaf (undefined result drops the key), same batch
/// size; non-tensor entries kept. `path` prefixes keys passed to `fn`.
/// The result (and its nested TensorDicts) takes `device`.
TensorDict map_leaves(
    const TensorDict& td, const NestedKey* path,
    const std::function<torch::Tensor(const NestedKey&, const torch::Tensor&)>& fn,
    const std::optional<torch::Device>& device);

/// Every tensor leaf of `td` with its full path, depth first.
void for_each_leaf(const TensorDict& td,
                   const std::function<void(const NestedKey&, const torch::Tensor&)>& fn);

std::string kind_name(const Value& value);

/// The values (one per TensorDict being stacked or concatenated) as `T`, which the first
/// value holds; TypeError naming `op` and `key` when another value holds a different kind.
template <class T>
std::vector<T> values_as(const std::vector<Value>& values, const char* op, const NestedKey& key) {
  std::vector<T> out;
  out.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const T* v = std::get_if<T>(&values[i]);
    TDRL_CHECK(v, TypeError, std::string(op), ": key ", key.to_string(), " holds ",
               kind_name(values[0]), " in TensorDict 0 but ", kind_name(values[i]),
               " in TensorDict ", std::to_string(i));
    out.push_back(*v);
  }
  return out;
}

/// Runs `op` on the tensor stored at `key` so that the change lands in `root`: directly on
/// the stored tensor when every TensorDict on the path is dense, else on a materialised copy
/// that is then written back in place (lazy stacks, sub-tensordict views).
void modify_leaf(const TensorDict& root, const NestedKey& key,
                 const std::function<void(torch::Tensor&)>& op);

/// The container and the existing tensor at `key`, for in-place writes; KeyError when
/// missing, TypeError when not a tensor. `op` names the caller in messages.
std::pair<TensorDict, torch::Tensor> existing_tensor(const TensorDict& root, const NestedKey& key,
                                                     const char* op);

/// Checks an in-place write of `value` into `dst` whose written region has shape `region`:
/// same dtype (TypeError), broadcastable shape (ShapeError).
void check_inplace_value(const char* op, const NestedKey& key, const torch::Tensor& dst,
                         c10::IntArrayRef region, const torch::Tensor& value);

/// `td`'s entry `key`: a pointer into a dense TensorDict's storage (valid until its next
/// write), or for lazy stacks and views a value read into `holder`. Null when missing.
const Value* entry_of(const TensorDict& td, const std::string& key, std::optional<Value>& holder);

/// A checked `set`, not yet written: `prepare_set` throws what `root.set(key, value)` would
/// throw without writing anything; `commit_set` writes it, creating missing intermediates.
struct PreparedSet {
  TensorDict deepest;  // deepest existing TensorDict on the key's path
  size_t depth;        // number of key parts that resolved to `deepest`
  Value value;         // moved to the device, non-tensor data restamped
};
PreparedSet prepare_set(const TensorDict& root, const NestedKey& key, Value value, const char* op);
void commit_set(PreparedSet prepared, const NestedKey& key);

/// Calls `fn` with every tensor `td` stores: lazy stacks are walked member by member (no
/// stacking), a sub-tensordict view reports its parent's tensors.
void for_each_stored_leaf(const TensorDict& td,
                          const std::function<void(const torch::Tensor&)>& fn);

/// Calls `fn` with each top-level entry of `td` (read through for lazy stacks and views).
void for_each_entry(const TensorDict& td,
                    const std::function<void(const std::string&, const Value&)>& fn);

}  // namespace tensordict::detail
