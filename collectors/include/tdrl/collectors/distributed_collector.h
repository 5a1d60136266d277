#pragma once

/// DistributedCollector: worker processes (on this host or others) collect with their own envs
/// and send batches to the trainer over torch.distributed (c10d Gloo, TCPStore rendezvous);
/// the trainer sends them its policy weights (TorchRL's DistributedDataCollector).

#include <torch/arg.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tdrl/collectors/collector.h>
#include <tdrl/collectors/distributed_options.h>

namespace tdrl::collectors {

/// The environment variables a worker process reads (set by the trainer's launch_command,
/// or by hand on other hosts): TDRL_COLLECTOR_RANK (1..num_workers),
/// TDRL_COLLECTOR_WORLD_SIZE (num_workers + 1), TDRL_COLLECTOR_ADDR, TDRL_COLLECTOR_PORT and
/// optionally TDRL_COLLECTOR_TIMEOUT_MS and TDRL_COLLECTOR_GLOO_HOSTNAME.
struct WorkerIdentity {
  int64_t rank = 0;
  DistributedOptions options;
};
/// Reads the worker variables; nullopt when TDRL_COLLECTOR_RANK is not set (this process is
/// the trainer). Throws ValueError naming the variable for a malformed or missing value
/// (not an integer, rank outside 1..world_size-1, world size < 2, port outside 1..65535,
/// timeout < 1, empty address).
std::optional<WorkerIdentity> worker_identity_from_env();

/// The trainer side. Yields batches sent by the workers: sync mode, each worker collects
/// ceil(frames_per_batch / num_workers) frames (rounded up by its Collector to a multiple
/// of its env's batch numel; frames_per_batch() is their sum) and the batches are stacked
/// into one contiguous TensorDict `[num_workers, *env_batch, T]` (every worker's batch must
/// then have the same structure, else next() throws std::runtime_error naming the worker);
/// async mode, `[*env_batch, T]` from whichever worker sent
/// first (last_worker() is its rank - 1), each worker collecting frames_per_batch frames,
/// and that worker is asked for its next batch at the next call to next() (unless the
/// batches in flight complete total_frames). split_trajs and postproc run on the trainer;
/// trajectory ids are made unique as in MultiCollectorBase (worker w's local id k becomes
/// `k * num_workers + w`). init_random_frames is global: a request asks for random actions
/// while the trainer has counted fewer frames. Batches are new TensorDicts on CPU (or
/// CollectorOptions::storing_device); policy_device is not used (workers run their policy
/// where their env lives). Only tensor entries travel.
///
/// Weights: the trainer's policy weights (policy_weights(policy)) go to every worker before
/// its first batch and, after update_policy_weights_(), before its next one. Each worker's
/// policy must have the same structure (built by the same code).
///
/// Protocol and errors: the constructor starts the TCPStore and joins the group (and launches
/// the workers with launch_command), then sends every worker its collector options and
/// waits until each has built its Collector; it throws ValueError for bad options,
/// tensordict::Error when the workers do not join within timeout (launched workers are
/// killed and reaped; the message says how those that ended early ended), and
/// std::runtime_error `worker rank r: ...` when a worker cannot build its env or
/// Collector. An exception on a worker is sent to the trainer, whose next() throws it (as
/// std::runtime_error with `worker rank r: ` and the worker's message); a worker process
/// that dies or hangs makes next() throw tensordict::Error naming the rank (and, for a
/// launched worker that ended, its exit status or signal): at once when its connection
/// closes (a dead process), after timeout when it hangs. After an error the collection is
/// over: the workers still reachable are told to stop, the others see the trainer's
/// connection close, launched ones are reaped (those still running 2 s later are killed),
/// and next() returns nullopt.
/// shutdown() (and the destructor) first receives and drops the batches still being
/// collected (async mode; so it may wait for one batch per worker, at most timeout), then
/// stops the workers, waits for launched ones to exit (kills them after timeout) and never
/// hangs. Launched workers are always reaped (no zombies), also when the constructor throws.
///
/// SIGPIPE: the trainer and the workers ignore SIGPIPE when it has its default action (as
/// Python does), so that writing to a dead peer's socket is an error instead of killing the
/// process.
///
/// Thread safety: one thread uses the trainer object. Each batch in flight is received on its
/// own short-lived thread (std::async), so that transfers from several workers overlap; all
/// are joined before next() returns (sync) or by shutdown() (async).
///
/// Launching on several hosts: start the trainer with a fixed port, then on each worker host
/// `TDRL_COLLECTOR_RANK=r TDRL_COLLECTOR_WORLD_SIZE=n+1 TDRL_COLLECTOR_ADDR=<trainer host>
/// TDRL_COLLECTOR_PORT=<port> ./my_app` (r = 1..n); see docs/collectors.md.
class DistributedCollector : public CollectorBase {
 public:
  /// `policy` is the trainer's copy: only its weights are used (sent to the workers, which
  /// build their own policy with the same code; a random policy or one without weights
  /// sends none). `options`: frames_per_batch, max_frames_per_traj, reset_at_each_iter,
  /// reset_when_done and exploration_type are sent to every worker; total_frames,
  /// init_random_frames, split_trajs, postproc and storing_device apply on the trainer.
  DistributedCollector(CollectorPolicy policy, CollectorOptions options,
                       DistributedOptions distributed);
  ~DistributedCollector() override;

  std::optional<TensorDict> next() override;
  void update_policy_weights_() override;
  /// Seeds the workers' collectors now, in rank order (one round trip each): rank 1 gets
  /// `seed`, rank r what rank r-1's Collector::set_seed returned; returns what the last
  /// returned (seed + num_workers for unbatched envs). Each worker also seeds its process's
  /// global generator, which its policy's exploration noise draws from, with its env seed
  /// XOR 0x9E3779B97F4A7C15: a seeded distributed run repeats. Throws tensordict::Error in async
  /// mode once batches are in flight (call it before the first next()) or after shutdown,
  /// and like next() when a worker fails.
  uint64_t set_seed(uint64_t seed) override;
  void shutdown() override;
  /// "frames" and "iterations" (int64 scalars) and, when no batch is in flight (sync mode
  /// between batches; not after shutdown), each worker's state under ("workers", "r<rank>"):
  /// "collector", its Collector::state_dict() (its env and episodes in flight), and "rng", its
  /// process's global generator (which the policy's exploration draws from); one round trip
  /// per worker.
  /// In async mode a batch is always in flight after the first next(): the counters only.
  /// Throws tensordict::Error naming the worker when one cannot answer.
  TensorDict state_dict() const override;
  /// Restores the counters and, when the state holds them, every worker's collector state: the
  /// workers continue their episodes where the saved ones were. Without them (a state saved in
  /// async mode), the workers keep their envs. Throws KeyError naming a missing counter or
  /// worker entry and ValueError for a negative counter (nothing changes then), Error while a
  /// batch is in flight or after shutdown, ValueError naming the worker whose collector
  /// refuses its state (every worker then gets back the state it had), and Error when a
  /// worker is lost (the collection is stopped, as in next()).
  void load_state_dict(const TensorDict& state) override;

  int64_t num_workers() const { return distributed_.num_workers(); }
  int64_t last_worker() const { return last_worker_; }
  /// The TCPStore port (the chosen one when port(0) was asked).
  int port() const;

 private:
  struct Impl;
  // Asks worker w (rank w + 1) for a batch, first sending it the current weights if it lacks
  // them, and starts receiving its answer on a task thread.
  void request(int64_t w, bool random);
  // After a failed transfer with worker w (-1: not known): leaves that worker alone, shuts
  // down and throws tensordict::Error naming the rank and how launched workers ended.
  [[noreturn]] void lost(const std::string& operation, int64_t w, const std::exception& error);
  // Shuts down and throws worker w's own error as std::runtime_error("worker rank r: ...").
  [[noreturn]] void worker_failed(int64_t w, const std::string& message);

  std::unique_ptr<Impl> impl_;
  CollectorOptions options_;
  DistributedOptions distributed_;
  int64_t last_worker_ = -1;
};

/// The worker side: joins the trainer's group as `identity.rank`, builds a Collector over
/// `factory()` with `policy` and the trainer's options, and serves the trainer's requests
/// (collect a batch, take weights, seed) until the trainer says stop; returns then.
/// Exceptions of the env, the Collector or the policy (and weights whose structure does not
/// match `policy`'s) are sent to the trainer, and the worker goes on serving. Throws
/// tensordict::Error when the trainer cannot be reached within identity's timeout, when its
/// connection closes (the trainer ended or failed) or when a transfer times out; a worker
/// waits for the next request without limit.
///
/// Example (the same executable as trainer and worker):
/// ```
/// if (auto identity = worker_identity_from_env()) {
///   run_distributed_worker(*identity, make_env, make_policy());
///   return 0;
/// }
/// DistributedCollector collector(make_policy(), options,
///     DistributedOptions().num_workers(2).launch_command({argv[0]}));
/// ```
void run_distributed_worker(const WorkerIdentity& identity, const EnvFactory& factory,
                            CollectorPolicy policy);

}  // namespace tdrl::collectors
