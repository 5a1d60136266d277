#pragma once

/// SerialEnv and ParallelEnv: n copies of an env stepped as one env of batch `[n, *sub_batch]`
/// (TorchRL's SerialEnv / ParallelEnv, with threads instead of processes).

#include <torch/arg.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <tdrl/envs/env_base.h>
#include <tdrl/envs/worker_pool.h>

namespace tdrl::envs {

/// Builds one sub-env; called n times, each call must return a new instance.
using EnvFactory = std::function<std::shared_ptr<EnvBase>()>;

/// The common part of SerialEnv and ParallelEnv: n sub-envs of batch `sub_batch` seen as one
/// env of batch `[n, *sub_batch]`.
///
/// Specs: every sub-env must have equal specs (observation, action and its key, reward and its
/// key, done, state), batch size and device; the batched env's specs are the sub-env specs
/// expanded to `[n, ...]`. The sub-envs are built once, in order, by the factory.
///
/// Keys: reset() writes the observation entries of the observation spec (and the flags, false);
/// step() reads the action and the state-spec entries and writes the next observation entries,
/// the reward and done/terminated/truncated. Other entries a sub-env writes are not carried
/// over. Sub-env i reads slice i of every input (a view, never a copy) and its results are
/// written into slice i of a TensorDict allocated (uninitialised) once per call, which is
/// returned as it is: earlier results are never overwritten.
///
/// Partial reset: a "_reset" mask `[n, *sub_batch, 1]` (or `[n, *sub_batch]`) resets only the
/// selected sub-envs; a sub-env none of whose entries is selected is not called at all and
/// keeps the observation of its last reset or step.
///
/// Seeding: set_seed(seed) seeds sub-env 0 with `seed`, sub-env i with the seed sub-env i-1
/// returned (so `seed + i` for plain envs), and this env's own generator (used by rand_action)
/// with `seed`; it returns the seed the last sub-env returned.
///
/// Errors: an exception thrown by sub-env i is rethrown with the same type (tensordict::Error
/// subclasses, c10::Error as tensordict::Error, anything else as std::runtime_error) and
/// `sub-env i` in its message; when several throw, the lowest index wins. The sub-envs that
/// did not throw keep their new state: reset before stepping again.
///
/// Thread safety: one thread at a time uses the batched env (as any EnvBase).
class BatchedEnvBase : public EnvBase {
 public:
  /// The number of sub-envs (the first batch dim).
  int64_t num_envs() const { return static_cast<int64_t>(envs_.size()); }
  /// Sub-env `i`. Throws tensordict::IndexError when i is outside [0, num_envs()).
  const std::shared_ptr<EnvBase>& env(int64_t i) const;
  /// The sub-envs' (they have equal specs; the first one's is returned).
  int64_t max_episode_steps() const override { return envs_.front()->max_episode_steps(); }

  /// `SerialEnv(num_envs=4, env=CartPole-v1(batch_size=[], device=cpu), batch_size=[4],
  /// device=cpu)`; ParallelEnv adds `num_threads=2`.
  std::string to_string() const override;

 protected:
  /// Checks `envs` (at least one, no null, no instance twice, equal specs, batch sizes and
  /// devices; ValueError naming the differing spec and both sub-envs otherwise) and sets the
  /// expanded specs. `name` is "SerialEnv" or "ParallelEnv".
  BatchedEnvBase(const std::string& name, std::vector<std::shared_ptr<EnvBase>> envs);

  /// Calls the factory n times (ValueError for n < 1, a null factory or a null result,
  /// naming `name`).
  static std::vector<std::shared_ptr<EnvBase>> make_envs(const std::string& name, int64_t n,
                                                         const EnvFactory& factory);

  /// Runs `task(j)` for every j in [0, count) and returns when all have run. `task` never
  /// throws (the caller catches per index). Serial: in order on the calling thread; parallel:
  /// on the worker threads.
  virtual void run_tasks(int64_t count, const std::function<void(int64_t)>& task) = 0;
  /// The extra `, num_threads=2` of ParallelEnv's printed form; empty by default.
  virtual std::string extra_repr() const { return ""; }

  TensorDict reset_impl(const TensorDict& tensordict) override;
  TensorDict step_impl(const TensorDict& tensordict) override;
  uint64_t set_seed_impl(uint64_t seed) override;
  /// ("envs", "<i>"): sub-env i's state_dict(); ("last_observation", <key>): the observations
  /// a partial reset reports for the sub-envs it does not reset.
  bool save_state(TensorDict& state) const override;
  void load_state(const TensorDict& state) override;
  /// The sub-envs' frames stacked: `[n, *sub_batch, H, W, 3]` (rendered on the worker threads
  /// for ParallelEnv). Throws as a step does when a sub-env throws.
  torch::Tensor render_impl() override;

 private:
  /// One output entry: its key, and its full shape `[n, *sub_shape]` and dtype.
  struct Leaf {
    NestedKey key;
    std::vector<int64_t> shape;
    torch::Dtype dtype;
  };

  // Checks that sub-env i's specs equal sub-env 0's; throws ValueError naming the spec.
  void check_same_specs(int64_t i) const;
  // A TensorDict of batch batch_size() with an uninitialised tensor per leaf.
  TensorDict allocate(const std::vector<Leaf>& leaves, std::vector<torch::Tensor>& tensors) const;
  // Runs `task` for positions [0, count), then rethrows the lowest failing sub-env's
  // exception (its index being `index_of(position)`) with the sub-env index and `op`.
  void run_checked(const std::string& op, int64_t count,
                   const std::function<int64_t(int64_t)>& index_of,
                   const std::function<void(int64_t)>& task);
  // Copies `value` (sub-env i's entry `leaf`) into slice i of `target`, checking its shape.
  void write_slice(const std::string& op, int64_t i, const Leaf& leaf, const torch::Tensor& value,
                   const torch::Tensor& target) const;

  std::vector<std::shared_ptr<EnvBase>> envs_;
  std::vector<Leaf> observation_leaves_;         // the observation spec's leaves
  std::vector<Leaf> step_leaves_;                // observations, reward and the three flags
  std::vector<NestedKey> input_keys_;            // the action key and the state spec's leaves
  std::vector<TensorDict> step_inputs_;          // one per sub-env, reused every step
  std::vector<torch::Tensor> last_observation_;  // per observation leaf, [n, ...]
};

/// n sub-envs stepped one after the other on the calling thread (TorchRL's SerialEnv).
/// See BatchedEnvBase for specs, keys, partial reset, seeding and errors.
///
/// Example:
/// ```
/// SerialEnv env(4, [] { return make_env("Pendulum-v1"); });
/// env.set_seed(0);
/// TensorDict rollout = env.rollout(100);  // batch [4, T]
/// ```
class SerialEnv : public BatchedEnvBase {
 public:
  /// Builds `n` sub-envs with `factory`. Throws ValueError for n < 1, a null factory or
  /// result, the same instance twice, or sub-envs whose specs differ.
  SerialEnv(int64_t n, const EnvFactory& factory);

 protected:
  void run_tasks(int64_t count, const std::function<void(int64_t)>& task) override;
};

/// Options of ParallelEnv.
/// Example: `ParallelEnvOptions().num_threads(2)`
struct ParallelEnvOptions {
  /// Worker threads stepping the sub-envs (capped at the number of sub-envs); >= 1.
  /// Default: the number of hardware threads.
  TORCH_ARG(int64_t,
            num_threads) = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
};

/// n sub-envs stepped concurrently on a persistent pool of worker threads (TorchRL's
/// ParallelEnv, with threads instead of processes). Sub-env i is used by one worker at a time;
/// inputs are read through views and each worker writes its sub-env's results into its slice
/// of the call's output TensorDict. Workers run with the caller's thread-local LibTorch state
/// (grad mode, inference mode). For the same seeds, results equal SerialEnv's bit for bit
/// (each sub-env draws only from its own generator).
/// See BatchedEnvBase for specs, keys, partial reset, seeding and errors.
///
/// The destructor stops and joins the workers (after any work in flight); it never hangs.
/// Sub-envs that themselves use LibTorch's intra-op threads compete with the workers: for small
/// envs, `torch::set_num_threads(1)` is often faster.
///
/// Example:
/// ```
/// ParallelEnv env(8, [] { return make_env("HalfCheetah-v4"); },
///                 ParallelEnvOptions().num_threads(2));
/// env.set_seed(0);
/// TensorDict rollout = env.rollout(1000, policy);  // batch [8, T]
/// ```
class ParallelEnv : public BatchedEnvBase {
 public:
  /// Builds `n` sub-envs with `factory` (on the calling thread, in order) and starts
  /// `min(n, options.num_threads())` workers. Throws as SerialEnv, and ValueError for
  /// num_threads < 1.
  ParallelEnv(int64_t n, const EnvFactory& factory, const ParallelEnvOptions& options = {});

  /// The number of worker threads.
  int64_t num_threads() const { return pool_->num_threads(); }

 protected:
  void run_tasks(int64_t count, const std::function<void(int64_t)>& task) override;
  std::string extra_repr() const override;

 private:
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace tdrl::envs
