#pragma once

/// Recipes: what an algorithm builds for the one generic Trainer loop, in two parts. The
/// acting part (exploration policy, evaluation actor, exploration state) is all that
/// evaluation (tdrl-eval) and collector workers build; the learning part (loss, optimiser
/// groups, replay buffer, update hooks) is built on top of it by the trainer only. The envs
/// are not the recipe's: they come from the `env:` section (env_parts.h).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>

#include <tdrl/apps/config.h>
#include <tdrl/collectors/policy.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/replay/replay_buffer.h>
#include <tdrl/specs/composite.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nn/module_ptr.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::apps {

using tensordict::TensorDict;

/// The task's shapes, read from one unbatched evaluation env (with the config's transforms).
struct EnvInfo {
  /// The registered env name (env.name).
  std::string name;
  /// The size of the flat "observation" entry; 0 when the env has none (pixels only).
  int64_t obs_dim = 0;
  /// The `[C, H, W]` shape of the "pixels" entry when the env has one of 3 dims (what
  /// model.encoder convnet reads), else empty.
  std::vector<int64_t> pixels_shape;
  /// The unbatched action spec.
  specs::TensorSpecPtr action_spec;
  /// The action spec when it is Bounded (continuous actions), else null.
  std::shared_ptr<specs::Bounded> bounded;
  /// The number of actions when the spec is Categorical or OneHot, else nullopt.
  std::optional<int64_t> num_actions;
  /// Elements of one action.
  int64_t action_dim = 1;
  /// Bytes of one step as the env writes it (its tensor entries and "next"; frames stacked by
  /// CatFrames counted once), what a replay buffer keeps per transition.
  int64_t frame_bytes = 0;
};

/// What a recipe's builders read: the task's shapes and the sections that concern networks,
/// optimisers and data. Builders never see the whole config.
///
/// The model and optimiser sections are reached through model() and optim(), which record that
/// the recipe read them: a config that sets model keys (or the optimiser's name, lr,
/// weight_decay, eps, actor_lr, critic_lr) for a recipe that never reads that section is
/// refused before the run (Trainer::check), since the keys would be ignored. Copies share the
/// record, so a context captured by a builder's lambda still counts.
struct RecipeContext {
  RecipeContext(const EnvInfo& env, const ModelSection& model, const OptimSection& optim,
                const CollectorSection& collector, const ReplaySection* replay,
                torch::Device device, torch::Device replay_device)
      : env(env),
        collector(collector),
        replay(replay),
        device(device),
        replay_device(replay_device),
        model_(model),
        optim_(optim) {}

  const EnvInfo& env;
  const CollectorSection& collector;
  /// Null for algorithms without a replay section.
  const ReplaySection* replay;
  /// Where training runs (the config's `device`). Networks are built on the CPU; the Trainer
  /// moves the loss, the actor and the exploration modules here after build_learning, before
  /// any optimiser steps (LibTorch's Module::to keeps the parameters the optimisers hold).
  torch::Device device = torch::kCPU;
  /// Where the replay buffer lives (`replay.device` resolved: never "auto").
  torch::Device replay_device = torch::kCPU;

  /// The `model:` section (networks' sizes, activation, init); marks it read.
  const ModelSection& model() const {
    reads_->model = true;
    return model_;
  }
  /// The `optim:` section (the optimiser, its rates); marks it read.
  const OptimSection& optim() const {
    reads_->optim = true;
    return optim_;
  }
  /// Whether a builder read model() / optim() through this context or a copy of it.
  bool read_model() const { return reads_->model; }
  bool read_optim() const { return reads_->optim; }

 private:
  struct Reads {
    bool model = false;
    bool optim = false;
  };
  const ModelSection& model_;
  const OptimSection& optim_;
  std::shared_ptr<Reads> reads_ = std::make_shared<Reads>();
};

/// The bool entry the Trainer adds to the data of a recipe that samples sequences from its
/// replay buffer (sequence_length() > 0): true at the last step of each env's stretch in a
/// collected batch, where the storage's next element is another env's. A sequence sampler
/// stops there (SliceSampler's end_key); it crosses the episode ends inside a stretch, where
/// is_init resets a recurrent core, so that short episodes and their last steps are sampled.
inline tensordict::NestedKey stream_end_key() {
  return tensordict::NestedKey{"collector", "stream_end"};
}

/// One optimiser and the loss terms it minimises. The Trainer sums the `terms` of the groups
/// that step on an update (every "loss_*" term when `terms` is empty), backpropagates once,
/// clips each stepping group's gradient norm and steps it.
struct OptimizerGroup {
  /// "actor", "critic", "alpha", "all", ...: names its state in checkpoints.
  std::string name;
  std::shared_ptr<torch::optim::Optimizer> optimizer;
  /// The loss terms this group minimises, among the loss's declared loss_terms(); empty: every
  /// loss_* term.
  std::vector<std::string> terms;
  /// Steps on updates 0, period, 2 * period, ... (TD3's delayed actor). Default every update.
  int64_t period = 1;
  /// The learning rate from the config (the schedule scales it).
  double base_lr = 0;
};

/// An algorithm's parts for one run. A recipe is constructed from its algorithm's config
/// section (register_algorithm); build_acting() then build_learning() fill the public members.
///
/// On-policy recipes (no replay buffer): each collected batch is optimised for
/// `epochs_per_batch()` epochs; `before_epoch` prepares the batch (advantages) and the batch is
/// cut into shuffled minibatches of `minibatch_size()` frames. Off-policy recipes (a replay
/// buffer): each batch is added to the buffer and `updates_per_batch()` minibatches are
/// sampled from it (once the buffer holds init_random_frames and a whole minibatch).
///
/// Networks are created in build_acting / build_learning, after the Trainer seeded the
/// generator, so the same seed gives the same initial weights.
class Recipe {
 public:
  virtual ~Recipe() = default;

  // ---- the acting part --------------------------------------------------------------------
  /// Builds exploration_policy, policy_factory, actor and exploration_modules. Throws
  /// ConfigError naming the key when the task does not suit the config.
  virtual void build_acting(const RecipeContext& context) = 0;

  /// The policy the collector runs (with exploration); null for random actions.
  collectors::CollectorPolicy exploration_policy;
  /// Builds another exploration policy with the same structure (for collector workers).
  collectors::PolicyFactory policy_factory;
  /// The actor run deterministically for evaluation; its parameters are what tdrl-eval loads.
  /// Assign the module's holder or a shared_ptr to it.
  tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase> actor;
  /// Modules with state besides the actor's parameters (exploration annealing), by name; saved
  /// in checkpoints.
  std::vector<std::pair<std::string, tensordict::nn::ModulePtr<torch::nn::Module>>>
      exploration_modules;
  /// The entries the exploration policy carries from one step to the next (a recurrent core's
  /// hidden state: RecurrentModuleImpl::hidden_specs, for one unbatched step), or null. Every
  /// env of the run then ends with an InitTracker ("is_init") and a TensorDictPrimer of them
  /// (carry_policy_state): zeros where an episode starts, the policy's next state after each
  /// step, kept through batches, workers and checkpoints.
  specs::CompositePtr policy_state;

  /// After each batch's optimisation: exploration annealing, given the frames so far.
  virtual void after_batch(int64_t frames) { (void)frames; }
  /// After a checkpoint taken at `frames` was loaded: brings the recipe's own counters there.
  virtual void on_resume(int64_t frames) { (void)frames; }

  // ---- the learning part ------------------------------------------------------------------
  /// Builds loss, optimizers and (off-policy) replay, on the networks of build_acting.
  virtual void build_learning(const RecipeContext& context) = 0;

  std::shared_ptr<losses::LossModule> loss;
  std::vector<OptimizerGroup> optimizers;
  /// Null for on-policy algorithms.
  std::shared_ptr<replay::TensorDictReplayBuffer> replay;

  /// On-policy: optimisation passes over each batch. Default 1.
  virtual int64_t epochs_per_batch() const { return 1; }
  /// On-policy: frames per minibatch. Default: the whole batch.
  virtual int64_t minibatch_size() const { return -1; }
  /// On-policy: what a minibatch is made of. 0 (default): single frames, shuffled across the
  /// batch. > 0: sequences of this many consecutive steps of one env (the batch's time dim T
  /// must be a multiple of it), minibatch_size / sequence_length of them `[N, L]`, shuffled as
  /// wholes, for a recurrent loss in sequence mode (which starts each sequence from the state
  /// stored at its first step). -1: whole sequences of the batch's T steps. Off-policy: > 0
  /// when the replay buffer samples sequences of this many steps (a SliceSampler), each sample
  /// then reshaped to `[batch_size / L, L]`.
  virtual int64_t sequence_length() const { return 0; }
  /// Off-policy: gradient steps per collected batch.
  virtual int64_t updates_per_batch() const { return 1; }
  /// On-policy: prepares the batch `[..., T]` before each epoch (e.g. writes advantages).
  virtual void before_epoch(const TensorDict& batch) { (void)batch; }
  /// After each gradient step (all groups stepped): target-network updates.
  virtual void after_update() {}
  /// Whether after_update() is device work alone (no host state such as a step counter, no host
  /// synchronisation), which `train.cuda_graph` captures with the update; when false it runs
  /// after each replay of the captured update instead.
  virtual bool after_update_capturable() const { return false; }
  /// After each gradient step on a sampled minibatch: true when the replay buffer's priorities
  /// are to be updated from it (prioritized replay).
  virtual bool updates_priorities() const { return false; }
};

}  // namespace tdrl::apps
