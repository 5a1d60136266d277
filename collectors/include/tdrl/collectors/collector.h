#pragma once

/// Collector: steps an env with a policy and yields batches of transitions (TorchRL's
/// Collector, formerly SyncDataCollector).

#include <atomic>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/collectors/collection_limits.h>
#include <tdrl/collectors/policy.h>
#include <tdrl/envs/batched_envs.h>
#include <tdrl/envs/env_base.h>
#include <tensordict/nn/interaction_type.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::collectors {

using envs::EnvBase;
using envs::EnvFactory;
using tensordict::NestedKey;

/// The key of the trajectory ids a collector writes: ("collector", "traj_ids").
inline NestedKey traj_ids_key() { return NestedKey({"collector", "traj_ids"}); }
/// The key of the validity mask split_trajectories writes: ("collector", "mask").
inline NestedKey mask_key() { return NestedKey({"collector", "mask"}); }

/// Options of Collector (and, for each worker, of the multi-process and multi-thread
/// collectors): the limits (collection_limits.h: frames_per_batch, total_frames,
/// init_random_frames, max_frames_per_traj) and how batches are made. Names follow TorchRL's
/// collector arguments.
/// Example: `CollectorOptions().frames_per_batch(1000).total_frames(100000)`
struct CollectorOptions : CollectionLimits {
  // The limits' setters return CollectorOptions, so that a chain goes on with the options
  // below.
#define TDRL_COLLECTOR_LIMIT(name)                                          \
  CollectorOptions& name(const int64_t& value) {                            \
    CollectionLimits::name(value);                                          \
    return *this;                                                           \
  }                                                                         \
  const int64_t& name() const noexcept { return CollectionLimits::name(); } \
  int64_t& name() noexcept { return CollectionLimits::name(); }
  TDRL_COLLECTOR_LIMIT(frames_per_batch)
  TDRL_COLLECTOR_LIMIT(total_frames)
  TDRL_COLLECTOR_LIMIT(init_random_frames)
  TDRL_COLLECTOR_LIMIT(max_frames_per_traj)
#undef TDRL_COLLECTOR_LIMIT

  /// Reset every sub-env at the start of each batch (new trajectory ids). Default false:
  /// episodes continue across batches.
  TORCH_ARG(bool, reset_at_each_iter) = false;
  /// Reset the sub-envs whose step is done (partial reset). Default true. When false, the
  /// policy keeps stepping done sub-envs and the env decides what that means.
  TORCH_ARG(bool, reset_when_done) = true;
  /// Yield batches split by trajectory (split_trajectories): batch `[num_traj, max_len]`
  /// with ("collector", "mask"). Default false: batch `[*env_batch, T]`.
  TORCH_ARG(bool, split_trajs) = false;
  /// The interaction type set while the policy runs (SetInteractionType). Default kRandom
  /// (sample, and exploration modules active).
  TORCH_ARG(tensordict::nn::InteractionType,
            exploration_type) = tensordict::nn::InteractionType::kRandom;
  /// Applied to each batch (after split_trajs) before it is yielded. Default none.
  TORCH_ARG(std::function<TensorDict(TensorDict)>, postproc);
  /// Where yielded batches live. Default: the env's device. A batch bound for another device is
  /// filled on the env's device (in pinned memory when it goes from the CPU to a GPU) and moved
  /// across once, when it is complete: one copy per leaf per batch, not per step.
  TORCH_ARG(std::optional<torch::Device>, storing_device);
  /// Where the policy runs: its input is moved there and its output back to the env's
  /// device. Default: the env's device.
  TORCH_ARG(std::optional<torch::Device>, policy_device);
  /// Builds the policy of each worker of a multi-worker collector (each then has its own
  /// weights, updated by update_policy_weights_). Ignored by Collector.
  TORCH_ARG(PolicyFactory, policy_factory);
};

class CollectorBase;

/// Input iterator over a collector's batches (range-for). Advancing collects the next batch;
/// the end is reached when the collector has collected its total_frames.
class BatchIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = TensorDict;
  using difference_type = std::ptrdiff_t;
  using pointer = const TensorDict*;
  using reference = const TensorDict&;

  BatchIterator() = default;
  explicit BatchIterator(CollectorBase* collector);
  const TensorDict& operator*() const { return *batch_; }
  const TensorDict* operator->() const { return &*batch_; }
  BatchIterator& operator++();
  bool operator==(const BatchIterator& other) const { return done() == other.done(); }
  bool operator!=(const BatchIterator& other) const { return !(*this == other); }

 private:
  bool done() const { return !batch_.has_value(); }
  CollectorBase* collector_ = nullptr;
  std::optional<TensorDict> batch_;
};

/// What every collector offers: iteration, counters, weights and shutdown.
class CollectorBase {
 public:
  virtual ~CollectorBase() = default;
  CollectorBase(const CollectorBase&) = delete;
  CollectorBase& operator=(const CollectorBase&) = delete;

  /// Collects and returns the next batch, or nullopt once total_frames have been collected
  /// (or after shutdown()). Throws what the env or the policy throws (see each collector).
  virtual std::optional<TensorDict> next() = 0;
  /// Iterates with range-for: `for (const TensorDict& batch : collector)`. Breaking out and
  /// iterating again continues where the collection stopped.
  BatchIterator begin() { return BatchIterator(this); }
  BatchIterator end() { return BatchIterator(); }

  /// Frames collected so far (summed over workers).
  int64_t frames() const { return frames_; }
  /// Batches yielded so far.
  int64_t iterations() const { return iterations_; }
  /// The frames per batch after rounding (see CollectorOptions::frames_per_batch).
  int64_t frames_per_batch() const { return frames_per_batch_; }
  /// The total after rounding; -1 for endless collection.
  int64_t total_frames() const { return total_frames_; }

  /// Makes the next batches use the current weights of the policy given at construction
  /// (for collectors whose workers hold their own copies; a no-op when the policy is shared
  /// or random).
  virtual void update_policy_weights_() = 0;
  /// Seeds the envs (worker i's env gets the seed worker i-1's returned); returns the seed
  /// the last env returned.
  virtual uint64_t set_seed(uint64_t seed) = 0;
  /// Stops the collection and releases workers; next() returns nullopt afterwards.
  /// Idempotent; never throws.
  virtual void shutdown() = 0;

  /// What a checkpoint saves to continue the collection: the counters (frames, iterations,
  /// the next trajectory id; int64 scalars) and, for collectors that step their envs in this
  /// process, the envs' state_dict() and the episodes in flight. See each collector.
  virtual TensorDict state_dict() const = 0;
  /// Restores what state_dict() returned: collection goes on from that frame count, and
  /// from the saved episodes where the collector says so (otherwise from freshly reset
  /// envs). Throws KeyError naming a missing entry and ValueError for a negative counter.
  virtual void load_state_dict(const TensorDict& state) = 0;

 protected:
  CollectorBase() = default;
  /// True once total_frames have been collected (never for endless collection).
  bool finished() const { return total_frames_ >= 0 && frames_ >= total_frames_; }
  /// Sets total_frames() from `total` (-1: endless) rounded up to a whole number of batches of
  /// frames_per_batch() (set before), so that every batch is full; warns, naming `who`, when
  /// that changes it.
  void set_total_frames(int64_t total, const std::string& who);

  // The counters every collector keeps; subclasses set them.
  int64_t frames_per_batch_ = 0;
  int64_t total_frames_ = -1;
  int64_t frames_ = 0;
  int64_t iterations_ = 0;
};

/// Steps one env (possibly batched: SerialEnv, ParallelEnv, a natively batched env) with a
/// policy and yields batches of `frames_per_batch` frames (TorchRL's Collector).
///
/// Batches: batch size `[*env_batch, T]` (T = frames_per_batch / env_batch.numel()), each step
/// holding what the env read and wrote (root observations and flags, the action, "next")
/// plus everything the policy wrote, and ("collector", "traj_ids") (int64 `[*env_batch, T]`).
/// Each batch is a new TensorDict (later batches never overwrite it). With split_trajs the
/// batch is split_trajectories(batch).
///
/// Trajectories: ids start at 0 (sub-env i's first trajectory has id i) and each reset
/// sub-env takes the next unused id, so ids stay unique across batches. Episodes continue
/// across batches unless reset_at_each_iter.
///
/// The policy runs under `SetInteractionType(exploration_type)` and `torch::NoGradGuard`; it
/// must write the env's action key with the action spec's shape and dtype. A null policy
/// means random actions (env.rand_action). The first batches use random actions until
/// init_random_frames have been collected.
///
/// Errors: the constructor throws ValueError for a null env (or factory result),
/// frames_per_batch < 1, total_frames 0 or < -1, negative init_random_frames, or
/// max_frames_per_traj 0 or < -1. next() throws KeyError when the policy did not write the
/// action ("the policy must write 'action'"), the env's Shape/Type/ValueError for a wrong
/// action, and whatever the env or policy throws; the collector then resets its envs before
/// the next batch (frames already collected in the failed batch are dropped).
///
/// Thread safety: one thread at a time; cancel() may be called from any thread.
///
/// Example:
/// ```
/// Collector collector(make_env("Pendulum-v1"), actor,
///                     CollectorOptions().frames_per_batch(1000).total_frames(100000));
/// for (const TensorDict& batch : collector) { /* batch: [1000] */ }
/// ```
class Collector : public CollectorBase {
 public:
  /// Collects from `env` (shared: the collector steps it, nobody else should meanwhile).
  Collector(std::shared_ptr<EnvBase> env, CollectorPolicy policy, CollectorOptions options);
  /// Builds the env with `factory` (once).
  Collector(const EnvFactory& factory, CollectorPolicy policy, CollectorOptions options);
  ~Collector() override;

  std::optional<TensorDict> next() override;
  /// Collects the next batch with random actions (true) or the policy (false), whatever
  /// init_random_frames says, and ignoring total_frames (for collectors that drive workers
  /// and count frames themselves). Nullopt only when cancelled or shut down.
  std::optional<TensorDict> next(bool random_actions);
  /// A no-op: the collector runs the policy it was given.
  void update_policy_weights_() override {}
  uint64_t set_seed(uint64_t seed) override;
  void shutdown() override;
  /// The counters; "env", the env's state_dict(); and, when the env's state resumes
  /// episodes (EnvBase::state_dict) and reset_at_each_iter is off, the episodes in flight:
  /// "current" (the root the next step acts on), "traj_ids" and "step_count" (int64
  /// `[*env_batch]`). Restored into a collector built the same way (same env, policy and
  /// options), the following batches are those this one would have yielded, bit for bit,
  /// given the same policy weights and global RNG state.
  TensorDict state_dict() const override;
  /// Restores what state_dict() returned; without "current" (or "env": a state from before
  /// the envs were saved), the next batch starts from a reset. Throws KeyError /
  /// ShapeError naming the entry, or what EnvBase::load_state_dict throws; nothing changes
  /// then.
  void load_state_dict(const TensorDict& state) override;

  /// Makes the running call to next() (on another thread) stop after its current step, or
  /// the next call if none is running, and return nullopt, dropping its partial batch; the
  /// request is used up by that call. The env keeps its state: collection resumes from it.
  void cancel() { cancel_.store(true); }

  /// The env the collector steps.
  const std::shared_ptr<EnvBase>& env() const { return env_; }
  /// The policy the collector runs.
  const CollectorPolicy& policy() const { return policy_; }
  /// Steps per batch: frames_per_batch / env_batch.numel().
  int64_t steps_per_batch() const { return steps_per_batch_; }

 private:
  // Collects one batch of `steps_per_batch_` steps; nullopt when cancelled.
  std::optional<TensorDict> collect(bool random);
  void reset_all();
  // Runs the policy (or random actions) on `td`; checks that it wrote the action.
  TensorDict act(TensorDict td, bool random);
  // Allocates the batch buffer after the first step of a batch, from `step`'s leaves, on the
  // env's device (pinned when the batch is bound for a GPU).
  TensorDict allocate(const TensorDict& step,
                      std::vector<std::pair<torch::Tensor, NestedKey>>& leaves);

  std::shared_ptr<EnvBase> env_;
  CollectorPolicy policy_;
  CollectorOptions options_;
  int64_t steps_per_batch_ = 0;
  int64_t env_numel_ = 1;
  int64_t next_traj_id_ = 0;
  bool shut_down_ = false;
  std::atomic<bool> cancel_{false};
  std::optional<TensorDict> current_;  // the root to act on next; nullopt: reset first
  torch::Tensor traj_ids_;             // int64 [*env_batch]
  torch::Tensor step_count_;           // int64 [*env_batch]
};

/// Splits a batch `[*B, T]` into trajectories: a TensorDict of batch `[num_traj, max_len]`
/// whose row i holds trajectory i's steps in order, padded with zeros (false for bool)
/// after its end, and `mask_key` (bool `[num_traj, max_len]`, true on real steps).
/// Trajectories are found from `trajectory_key` (default ("collector", "traj_ids"), int64
/// `[*B, T]`): consecutive steps of one sub-env with the same id; when the batch has no such
/// key, from `done_key` (default ("next", "done"), `[*B, T]` or `[*B, T, 1]`): a trajectory
/// ends after a done step and at the end of each sub-env's row. Rows are ordered by sub-env,
/// then by time. Throws ValueError for a batch with no batch dims, KeyError when neither key
/// is present (naming both), ShapeError when the key's shape does not match the batch.
TensorDict split_trajectories(const TensorDict& batch,
                              const NestedKey& trajectory_key = traj_ids_key(),
                              const NestedKey& done_key = NestedKey({"next", "done"}),
                              const NestedKey& mask_key = tdrl::collectors::mask_key());

}  // namespace tdrl::collectors
