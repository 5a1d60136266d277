#pragma once

/// ReplayBuffer, TensorDictReplayBuffer and TensorDictPrioritizedReplayBuffer (TorchRL's
/// replay buffers): a storage, a sampler and a writer behind one thread-safe front.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <shared_mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/replay/prioritized_sampler.h>
#include <tdrl/replay/samplers.h>
#include <tdrl/replay/storage.h>
#include <tdrl/replay/writers.h>

namespace tdrl::replay {

/// A transform applied to every sample, in order: takes the sampled TensorDict and returns
/// the TensorDict the caller gets (it may modify and return its argument).
using Transform = std::function<TensorDict(TensorDict)>;

/// A transform that also reads the storage, e.g. FrameStack gathering the steps before each
/// sampled one: takes the sample, the storage elements it was gathered from (int64 `[B]`) and
/// the storage, and returns the TensorDict the caller gets. Called under the buffer's read
/// lock (so the storage does not change meanwhile: it must only read), before the plain
/// transforms.
using StorageTransform =
    std::function<TensorDict(TensorDict, const torch::Tensor&, const Storage&)>;

/// Options of ReplayBuffer.
/// Example: `ReplayBufferOptions().batch_size(256).prefetch(2)`
struct ReplayBufferOptions {
  /// The batch size of `sample()` without an argument; 0 means it must be given. Default 0.
  TORCH_ARG(int64_t, batch_size) = 0;
  /// Applied to every sample, in order, outside the buffer's locks. Default none.
  TORCH_ARG(std::vector<Transform>, transforms) = {};
  /// Applied to every sample, in order, under the buffer's read lock, before `transforms`.
  /// Default none.
  TORCH_ARG(std::vector<StorageTransform>, storage_transforms) = {};
  /// Batches of `batch_size` a background thread keeps ready for `sample()`; 0 samples on
  /// the caller's thread. Needs batch_size > 0. Default 0.
  TORCH_ARG(int64_t, prefetch) = 0;
};

/// The keys a TensorDictReplayBuffer writes into samples and reads priorities from.
struct ReplayBufferKeys {
  /// Written into every sample: the flat element index of each row, int64 `[B]`.
  NestedKey index = "index";
  /// Written into samples from prioritized samplers: importance weights, float32 `[B]`.
  NestedKey weight = "_weight";
  /// Read by update_tensordict_priority, and by extend when present in the data.
  NestedKey priority = "td_error";
};

/// A replay buffer built from a Storage, a Sampler and a Writer (TorchRL's ReplayBuffer).
///
/// `extend` writes rows of a TensorDict through the writer into the storage and tells the
/// sampler; `sample` draws indices from the sampler, gathers them from the storage and
/// applies the transforms. The buffer owns its components through shared_ptrs (it may
/// outlive the caller's frame, e.g. in collector threads); use them only through the buffer
/// once it is built.
///
/// Thread safety: every method may be called from any number of threads at once. `extend`,
/// `add`, `empty` and `loads` take an exclusive lock; `sample`, `update_priority`, `size`
/// and `dumps` take a shared lock (with a second mutex serialising the sampler's own state).
/// So an extend is atomic for samplers: a sample sees the buffer as it was before or after
/// each concurrent extend, never a half-written batch, and its indices and data come from
/// the same state. Samples run concurrently with each other (the gathers overlap). With
/// `prefetch`, a sample may return a batch drawn before the latest extends or priority
/// updates (at most `prefetch` batches old); `empty` and `loads` discard prefetched batches.
///
/// Errors (tensordict errors, messages name the operation, key, shapes and indices; a
/// failed call leaves the buffer as it was): sampling an empty buffer throws Error; data
/// whose structure or shapes differ from the storage's throw KeyError/ShapeError/TypeError
/// from `extend`; bad priorities and indices throw from update_priority (see
/// Sampler::update_priority).
///
/// Example:
/// ```
/// ReplayBuffer rb(std::make_shared<LazyTensorStorage>(100000),
///                 ReplayBufferOptions().batch_size(256));
/// rb.extend(rollout);                // batch [n]
/// TensorDict batch = rb.sample();    // batch [256]
/// ```
class ReplayBuffer {
 public:
  /// A buffer with a RandomSampler and a RoundRobinWriter. Throws ValueError for a null
  /// storage, a negative batch_size or prefetch, prefetch without batch_size, or a sampler
  /// whose capacity() is below the storage's max_size.
  explicit ReplayBuffer(std::shared_ptr<Storage> storage, ReplayBufferOptions options = {});
  /// A buffer from the given components; a null sampler or writer means RandomSampler or
  /// RoundRobinWriter.
  ReplayBuffer(std::shared_ptr<Storage> storage, std::shared_ptr<Sampler> sampler,
               std::shared_ptr<Writer> writer = nullptr, ReplayBufferOptions options = {});
  /// Stops the prefetch thread.
  virtual ~ReplayBuffer();
  ReplayBuffer(const ReplayBuffer&) = delete;
  ReplayBuffer& operator=(const ReplayBuffer&) = delete;

  /// Writes one element: `data` has the element's own batch size (`[]`, or `[T]` for an
  /// ndim-2 storage) and is written as one row. Returns the row written, int64 `[1]` (empty
  /// when a TensorDictMaxValueWriter rejected it). Throws as extend.
  torch::Tensor add(const TensorDict& data);
  /// Writes the rows of `data` (batch `[n, ...]`; `[n, T, ...]` for an ndim-2 storage) and
  /// returns the storage rows written, int64 `[m]` (with ndim 1 these are the element
  /// indices that samples report); n = 0 writes nothing. Data is copied into the storage.
  /// Throws ShapeError for data without batch dims, the storage's errors for data whose keys,
  /// shapes or dtypes differ from the stored ones (naming the key and both shapes), the
  /// writer's errors, and (TensorDictReplayBuffer with a prioritized sampler and the priority
  /// key in the data) ValueError for negative or non-finite priorities; nothing is written
  /// then.
  torch::Tensor extend(const TensorDict& data);

  /// A batch of `batch_size()` elements (see sample(int64_t)); from the prefetch queue when
  /// prefetch > 0. Throws ValueError when no batch size was set.
  TensorDict sample();
  /// A batch of `batch_size` elements (batch `[B, *element_batch]`): data gathered from the
  /// storage (copies, for tensor storages), then the transforms. Throws Error when the
  /// buffer is empty, ValueError when batch_size < 1, and the sampler's errors.
  TensorDict sample(int64_t batch_size);
  /// The same, also returning what the sampler drew (indices, weights).
  std::pair<TensorDict, SampleInfo> sample_with_info(std::optional<int64_t> batch_size = {});

  /// Sets the priorities of elements `index` (int64 `[n]`, flat element indices as in
  /// SampleInfo / the `index` key) to `priority` (n values, any shape, or one value). A no-op
  /// for samplers without priorities. Throws as Sampler::update_priority (ShapeError,
  /// IndexError naming the first index not below size(), ValueError naming the first
  /// negative or non-finite priority); no priority is changed then.
  void update_priority(const torch::Tensor& index, const torch::Tensor& priority);

  /// Elements stored (rows times steps per row for an ndim-2 storage).
  int64_t size() const;
  /// True when nothing is stored.
  bool is_empty() const { return size() == 0; }
  /// Empties the buffer (TorchRL's `empty()`): the storage forgets its elements, the writer
  /// its cursor, the sampler its state. Allocations are kept. Prefetched batches are dropped.
  void empty();
  /// The batch size of `sample()` (0 when none).
  int64_t batch_size() const { return batch_size_; }

  /// Adds a transform after the existing ones. Throws ValueError for an empty one.
  void append_transform(Transform transform);
  /// Adds a storage transform after the existing ones. Throws ValueError for an empty one.
  void append_storage_transform(StorageTransform transform);

  /// Writes a checkpoint into folder `dir` (created; subfolders `storage`, `sampler`,
  /// `writer` replaced): storage contents, sampler state (priorities, epoch) and writer
  /// cursor, in tensordict's memmap format. LazyMemmapStorage records its folder instead of
  /// copying its data. Extends wait meanwhile. Throws Error naming the path when a folder
  /// cannot be written.
  void dumps(const std::string& dir) const;
  /// Restores a checkpoint written by dumps into this buffer, whose components must be of
  /// the same kinds (and a storage of the same max_size and ndim, a sampler of the same
  /// capacity); a resumed buffer then samples from the same distribution. Everything is read
  /// and checked before anything is replaced. Throws Error naming the path when a part is
  /// missing or unreadable, ValueError for a checkpoint of other components.
  void loads(const std::string& dir);

  const std::shared_ptr<Storage>& storage() const { return storage_; }
  const std::shared_ptr<Sampler>& sampler() const { return sampler_; }
  const std::shared_ptr<Writer>& writer() const { return writer_; }

  /// `ReplayBuffer(storage=..., sampler=..., writer=..., batch_size=256, transforms=0,
  /// prefetch=0)`; transforms counts both kinds.
  std::string to_string() const;

 protected:
  /// TensorDictReplayBuffer's keys: when set, samples get `index` (and `_weight`), and
  /// extend reads the priority key.
  void set_tensordict_keys(ReplayBufferKeys keys);
  std::optional<ReplayBufferKeys> tensordict_keys() const;
  /// The class name used in messages and repr (set by subclass constructors; not virtual, so
  /// that the prefetch thread never reads a vtable under destruction).
  void set_class_name(std::string name);
  std::string class_name() const;

 private:
  struct Draw {
    TensorDict data;
    SampleInfo info;
  };
  /// Samples (locks, sampler, gather, keys, transforms); nothing when the buffer is empty.
  std::optional<Draw> draw(int64_t batch_size) const;
  /// Batches from the prefetch queue (starting the thread on first use).
  Draw take_prefetched();
  void prefetch_loop();
  void stop_prefetch();
  /// Drops prefetched batches (after empty/loads) and wakes the worker.
  void flush_prefetched();
  void notify_prefetch();

  std::shared_ptr<Storage> storage_;
  std::shared_ptr<Sampler> sampler_;
  std::shared_ptr<Writer> writer_;
  int64_t batch_size_;
  int64_t prefetch_;

  /// Exclusive for writes to the storage, writer and sampler; shared for reads.
  mutable std::shared_mutex data_mutex_;
  /// Taken by writers while they wait for data_mutex_ and passed by readers, so that a
  /// steady stream of samples cannot starve extend.
  mutable std::mutex turnstile_;
  /// Serialises the sampler (sample, update_priority) under the shared lock.
  mutable std::mutex sampler_mutex_;
  /// Guards transforms_, storage_transforms_, keys_ and class_name_.
  mutable std::mutex config_mutex_;
  std::vector<Transform> transforms_;
  std::vector<StorageTransform> storage_transforms_;
  std::optional<ReplayBufferKeys> keys_;
  std::string class_name_ = "ReplayBuffer";

  // Prefetching: a worker thread fills queue_ up to prefetch_ batches.
  std::mutex queue_mutex_;
  std::condition_variable queue_ready_;  // a batch, an error or an empty buffer for takers
  std::condition_variable queue_space_;  // room in the queue or new data for the worker
  std::deque<Draw> queue_;
  std::exception_ptr prefetch_error_;
  uint64_t data_epoch_ = 0;  // counts empty/loads: batches drawn before one are stale
  bool stop_ = false;
  std::thread worker_;
};

std::ostream& operator<<(std::ostream& os, const ReplayBuffer& buffer);

/// A ReplayBuffer whose samples carry their indices (TorchRL's TensorDictReplayBuffer):
/// every sample gets `index` (int64 `[B]`) and, with a prioritized sampler, `_weight`
/// (float32 `[B]`); `update_tensordict_priority` reads both the index and the priority key
/// (`td_error` by default) back from a TensorDict; `extend` with the priority key in the
/// data sets the new elements' priorities from it. Keys are renamed with set_keys.
///
/// Example:
/// ```
/// TensorDictReplayBuffer rb(std::make_shared<LazyTensorStorage>(1000), sampler);
/// auto batch = rb.sample(64);
/// batch.set("td_error", loss_td_error);  // [64] or [64, 1]
/// rb.update_tensordict_priority(batch);
/// ```
class TensorDictReplayBuffer : public ReplayBuffer {
 public:
  using Keys = ReplayBufferKeys;

  explicit TensorDictReplayBuffer(std::shared_ptr<Storage> storage,
                                  ReplayBufferOptions options = {});
  TensorDictReplayBuffer(std::shared_ptr<Storage> storage, std::shared_ptr<Sampler> sampler,
                         std::shared_ptr<Writer> writer = nullptr,
                         ReplayBufferOptions options = {});

  /// Renames the keys; call it before sampling (prefetched batches keep the old keys).
  void set_keys(Keys keys) { set_tensordict_keys(std::move(keys)); }
  Keys keys() const { return *tensordict_keys(); }

  /// update_priority(td[index], td[priority]). Throws KeyError naming the missing key (with
  /// the keys `td` has) when the sampler has priorities, then as update_priority.
  void update_tensordict_priority(const TensorDict& td);
};

/// A TensorDictReplayBuffer with a PrioritizedSampler over the storage's max_size (TorchRL's
/// TensorDictPrioritizedReplayBuffer).
///
/// Example:
/// ```
/// TensorDictPrioritizedReplayBuffer rb(std::make_shared<LazyTensorStorage>(100000),
///                                      PrioritizedSamplerOptions(0.7, 0.5),
///                                      ReplayBufferOptions().batch_size(256));
/// ```
class TensorDictPrioritizedReplayBuffer : public TensorDictReplayBuffer {
 public:
  TensorDictPrioritizedReplayBuffer(std::shared_ptr<Storage> storage,
                                    PrioritizedSamplerOptions sampler_options,
                                    ReplayBufferOptions options = {},
                                    std::shared_ptr<Writer> writer = nullptr);
  /// The buffer's PrioritizedSampler.
  PrioritizedSampler& prioritized_sampler() const;
};

}  // namespace tdrl::replay
