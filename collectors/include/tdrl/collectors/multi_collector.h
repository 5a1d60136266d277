#pragma once

/// MultiSyncCollector and MultiAsyncCollector: several Collectors on worker threads (TorchRL's
/// MultiSyncCollector / MultiAsyncCollector, with threads instead of processes).

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <tdrl/collectors/collector.h>

namespace tdrl::collectors {

/// The common part of the two multi-worker collectors: one worker thread per env factory,
/// each owning a Collector over its own env.
///
/// Policies: with `CollectorOptions::policy_factory`, each worker builds its own policy (on
/// the constructing thread) and takes the weights of the policy given to the constructor
/// (the trainer's) at construction and after each update_policy_weights_(), at the start of
/// its next batch. Without a factory, every worker runs the trainer's policy itself (forward
/// only, under NoGradGuard), so the trainer's optimiser must not write the weights while
/// workers collect: fine for MultiSyncCollector (workers are idle between next() calls),
/// refused by MultiAsyncCollector (ValueError) unless the policy is random. With a factory
/// but a trainer policy without weights (random, or a plain callable), workers keep the
/// weights their factory gave them and update_policy_weights_() does nothing.
///
/// Random actions: a batch uses random actions when the frames yielded so far, counted when
/// the batch is requested, are fewer than init_random_frames.
///
/// Trajectory ids: worker w's local id k becomes `k * num_workers + w`, unique over workers.
///
/// Errors: the constructor throws ValueError for no factories, a null factory, a factory
/// returning null, or the options errors of Collector (frames_per_batch, total_frames and
/// init_random_frames are checked first; the others when the workers' collectors are built,
/// on the constructing thread, with `<Collector class>: worker w: ` in front), and what
/// load_policy_weights throws when a factory's policy does not match the trainer's (same
/// prefix). An exception on a worker stops the collection (every worker is
/// stopped and joined) and is rethrown by next() with its type and `worker w: ` in front;
/// next() then returns nullopt.
///
/// Shutdown: shutdown() (and the destructor) cancels batches in flight after their current
/// step and joins every worker; it never hangs on a worker that is collecting.
///
/// Thread safety: next(), update_policy_weights_(), set_seed(), state_dict(),
/// load_state_dict() and shutdown() are called from one thread (the trainer's).
class MultiCollectorBase : public CollectorBase {
 public:
  ~MultiCollectorBase() override;

  int64_t num_workers() const { return static_cast<int64_t>(workers_.size()); }
  void update_policy_weights_() override;
  /// Seeds worker 0's env with `seed`, worker w's with what worker w-1's returned; returns
  /// what the last returned. Envs restart from a reset at their next batch. Must not be
  /// called while workers collect (MultiAsyncCollector: before the first next(), or after
  /// shutdown): throws tensordict::Error then.
  uint64_t set_seed(uint64_t seed) override;
  void shutdown() override;
  /// frames, iterations (int64 scalars), and each worker's Collector::state_dict() under
  /// ("workers", "w<i>") as of that worker's last finished batch (MultiAsyncCollector: this
  /// may count a batch in flight or not yet yielded; its trajectory ids stay unused after a
  /// resume either way). A copy: safe to call while workers collect.
  TensorDict state_dict() const override;
  /// Restores what state_dict() returned (each worker's envs continue their episodes as
  /// Collector::load_state_dict says). Throws
  /// KeyError naming a missing counter or ("workers", "w<i>") entry, ShapeError for a
  /// non-scalar counter, ValueError for a negative one, what a worker's
  /// Collector::load_state_dict throws (with `worker w: ` in front; workers already restored
  /// get their previous state back), and tensordict::Error while
  /// workers collect (as set_seed). The counters are unchanged when it throws.
  void load_state_dict(const TensorDict& state) override;

 protected:
  /// The factories (the first one handing out the env that prepare() built to read the env's
  /// batch size) and the rounded frame counts; `worker_frames_per_batch` is each worker's
  /// batch size in frames.
  struct Setup {
    std::vector<EnvFactory> factories;
    int64_t frames_per_batch = 0;
    int64_t worker_frames_per_batch = 0;
  };
  /// Checks the arguments and rounds frames_per_batch: `sync` (MultiSyncCollector) to a
  /// multiple of num_workers * env numel, since each worker collects a share, else to a
  /// multiple of env numel; only `sync` allows a shared policy. Throws ValueError.
  static Setup prepare(const std::vector<EnvFactory>& factories, const CollectorPolicy& policy,
                       const CollectorOptions& options, bool sync);
  /// `setup` is what prepare() returned for the same arguments (it is not checked again).
  MultiCollectorBase(Setup setup, CollectorPolicy policy, const CollectorOptions& options,
                     bool sync);

  /// Asks worker w to collect one batch.
  void request(int64_t w);
  /// Waits until some requested worker has finished; returns its index and batch (with
  /// global traj ids), or rethrows its error (after shutting down).
  std::pair<int64_t, TensorDict> wait_any();
  /// Waits for worker w's requested batch (as wait_any).
  TensorDict wait_for(int64_t w);
  /// Applies split_trajs and postproc of the options and counts the batch.
  TensorDict finish_batch(TensorDict batch, int64_t frames);
  bool is_shut_down() const { return shut_down_; }

 private:
  struct Worker;
  // The loop of worker `worker`'s thread: waits for a request, collects, publishes.
  void run_worker(Worker& worker);
  // Waits for a finished batch (of worker `only` when given, of any requested worker
  // otherwise) and takes it; an error of any finished worker is taken first and rethrown
  // after shutdown().
  std::pair<int64_t, TensorDict> wait_ready(std::optional<int64_t> only);
  // Throws tensordict::Error naming `op` when a worker has a batch requested, running or
  // not yet taken (set_seed and load_state_dict touch the workers' collectors).
  void check_idle(const char* op) const;

  const char* name_;  // "MultiSyncCollector" or "MultiAsyncCollector", for messages
  CollectorPolicy policy_;
  CollectorOptions options_;
  // Built in the constructor, never resized; each worker thread touches only its own Worker
  // (and the members below under mutex_).
  std::vector<std::unique_ptr<Worker>> workers_;
  // The trainer thread's counters (workers never read them).
  bool shut_down_ = false;
  // True when workers run their own policy_factory copies of a policy with weights.
  bool sync_weights_ = false;
  mutable std::mutex mutex_;
  std::condition_variable cv_;  // workers wait for requests / the trainer for results
  // Guarded by mutex_ (with each Worker's phase, batch, error and state):
  bool stop_ = false;          // workers exit their loop
  std::deque<int64_t> ready_;  // workers with a finished batch (or error), in finishing order
  TensorDict weights_;         // the snapshot workers copy from (never mutated once set)
  int64_t weights_version_ = 0;
};

/// Yields one batch per next() gathered from every worker: each worker collects
/// frames_per_batch / num_workers frames (frames_per_batch is rounded up, with a warning, to
/// a multiple of num_workers * env_batch.numel(), read from worker 0's env, which is built
/// once for this), and the batches are stacked along a new first dim and made contiguous:
/// batch `[num_workers, *env_batch, T]` (or split_trajectories of it with split_trajs; the
/// postproc sees that batch). total_frames is rounded up to a multiple of frames_per_batch.
/// Workers are idle between calls to next(), so they may share the trainer's policy.
///
/// Example:
/// ```
/// MultiSyncCollector collector({make_cheetah, make_cheetah}, actor,
///     CollectorOptions().frames_per_batch(2000).total_frames(1000000));
/// for (const TensorDict& batch : collector) {  // [2, 1000]
///   train(batch);
///   collector.update_policy_weights_();
/// }
/// ```
class MultiSyncCollector : public MultiCollectorBase {
 public:
  MultiSyncCollector(const std::vector<EnvFactory>& factories, CollectorPolicy policy,
                     CollectorOptions options);
  /// `num_workers` workers, each with an env from `factory`.
  MultiSyncCollector(const EnvFactory& factory, int64_t num_workers, CollectorPolicy policy,
                     CollectorOptions options);
  std::optional<TensorDict> next() override;
};

/// Yields whichever worker's batch is ready first: each worker collects frames_per_batch
/// frames per batch (batch `[*env_batch, T]`; frames_per_batch rounded up to a multiple of
/// worker 0's env_batch.numel()), and a worker starts its next batch when next() is called
/// after its batch was yielded (TorchRL's order), so the others keep collecting while the
/// trainer trains. `last_worker()` says which worker a batch came from. Once total_frames
/// (rounded up to a multiple of frames_per_batch) have been yielded, the collector shuts
/// down: batches still in flight are cancelled and dropped.
/// Needs CollectorOptions::policy_factory unless the policy is random (see
/// MultiCollectorBase).
class MultiAsyncCollector : public MultiCollectorBase {
 public:
  MultiAsyncCollector(const std::vector<EnvFactory>& factories, CollectorPolicy policy,
                      CollectorOptions options);
  MultiAsyncCollector(const EnvFactory& factory, int64_t num_workers, CollectorPolicy policy,
                      CollectorOptions options);
  std::optional<TensorDict> next() override;
  /// The worker the last yielded batch came from (-1 before the first).
  int64_t last_worker() const { return last_worker_; }

 private:
  bool started_ = false;
  int64_t last_worker_ = -1;
};

}  // namespace tdrl::collectors
