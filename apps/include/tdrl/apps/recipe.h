#pragma once

/// Recipes: what each algorithm builds from the config (envs, networks, loss, optimisers,
/// replay buffer, exploration) for the one generic Trainer loop.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>

#include <tdrl/apps/config.h>
#include <tdrl/collectors/policy.h>
#include <tdrl/envs/batched_envs.h>
#include <tdrl/envs/env_base.h>
#include <tdrl/envs/transforms/normalization.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/replay/replay_buffer.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::apps {

using tensordict::TensorDict;

/// One optimiser and the loss terms it minimises. The Trainer sums the `terms` of the groups
/// that step on an update (all "loss_*" terms when `terms` is empty), backpropagates once,
/// clips each stepping group's gradient norm and steps it.
struct OptimizerGroup {
  /// "actor", "critic", "alpha", "all", ...: names its files in checkpoints and its metrics.
  std::string name;
  std::shared_ptr<torch::optim::Optimizer> optimizer;
  /// The loss terms this group minimises; empty: every loss_* term.
  std::vector<std::string> terms;
  /// Steps on updates 0, period, 2 * period, ... (TD3's delayed actor). Default every update.
  int64_t period = 1;
  /// The learning rate from the config (the schedule scales it).
  double base_lr = 0;
};

/// Everything an algorithm contributes to a run. A recipe's constructor builds the parts from
/// the config; its hooks default to the common case so that most recipes only build.
///
/// On-policy recipes (no replay buffer): each collected batch is optimised for
/// `epochs_per_batch()` epochs; `before_epoch` prepares the batch (advantages) and the batch
/// is cut into shuffled minibatches of `minibatch_size()` frames. Off-policy recipes (a replay
/// buffer): each batch is added to the buffer and `updates_per_batch()` minibatches are
/// sampled from it (once the buffer holds init_random_frames).
class Recipe {
 public:
  virtual ~Recipe() = default;

  /// "ppo", "sac", ...
  const std::string& algorithm() const { return algorithm_; }

  /// Builds the training env (batched over env.num_envs, with the config's transforms).
  envs::EnvFactory train_env_factory;
  /// Builds one unbatched evaluation env (same task and transforms, sharing normalisation
  /// statistics with the training env, which it never updates).
  envs::EnvFactory eval_env_factory;
  /// The policy the collector runs (with exploration); null for random actions.
  collectors::CollectorPolicy exploration_policy;
  /// Builds another exploration policy with the same structure (for collector workers).
  collectors::PolicyFactory policy_factory;
  /// The actor run deterministically (InteractionType::kMode) for evaluation.
  std::shared_ptr<tensordict::nn::TensorDictModuleBase> actor;
  /// The modules whose state a checkpoint saves besides the loss (exploration wrappers with
  /// annealing buffers), by name.
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> extra_modules;
  std::shared_ptr<losses::LossModule> loss;
  std::vector<OptimizerGroup> optimizers;
  /// Null for on-policy algorithms.
  std::shared_ptr<replay::TensorDictReplayBuffer> replay;
  /// Running statistics of the env (VecNorm states shared by the training and evaluation
  /// envs), saved in checkpoints, by name.
  std::vector<std::pair<std::string, std::shared_ptr<envs::VecNormState>>> env_state;

  /// On-policy: optimisation passes over each batch. Default 1.
  virtual int64_t epochs_per_batch() const { return 1; }
  /// On-policy: frames per minibatch. Default: the whole batch.
  virtual int64_t minibatch_size() const { return -1; }
  /// Off-policy: gradient steps per collected batch.
  virtual int64_t updates_per_batch() const { return 1; }
  /// On-policy: prepares the batch `[..., T]` before each epoch (e.g. writes advantages).
  virtual void before_epoch(const TensorDict& batch) { (void)batch; }
  /// After each gradient step (all groups stepped): target-network updates.
  virtual void after_update() {}
  /// After each batch's optimisation: exploration annealing, given the frames so far.
  virtual void after_batch(int64_t frames) { (void)frames; }
  /// After a checkpoint taken at `frames` was loaded (--resume): brings the recipe's own
  /// counters there (e.g. the frames exploration was already annealed for).
  virtual void on_resume(int64_t frames) { (void)frames; }

 protected:
  explicit Recipe(std::string algorithm) : algorithm_(std::move(algorithm)) {}

 private:
  std::string algorithm_;
};

/// Builds the recipe of `config`'s algo.name (ppo, a2c, dqn, ddpg, td3, sac). Throws
/// ConfigError when the env does not suit the algorithm (e.g. dqn on a continuous action
/// space, naming the env, its action spec and the algorithms that fit).
std::unique_ptr<Recipe> make_recipe(const Config& config);

/// The algorithm names make_recipe knows.
std::vector<std::string> recipe_names();

}  // namespace tdrl::apps
