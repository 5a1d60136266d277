#pragma once

// What the built-in recipes share: networks from the model section, optimisers from the optim
// section, the replay buffer from the replay section, target updates and the stochastic actor.

#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tdrl/apps/config.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/modules/actors.h>
#include <tdrl/modules/mlp.h>
#include <tdrl/replay/replay_buffer.h>

namespace tdrl::apps::detail {

/// model.init's choices: "default" (LibTorch's), "orthogonal".
const std::vector<std::string>& init_names();

/// An MLP of `model`'s activation, layer norm and init; `last_gain` is the orthogonal gain of
/// the output layer under `init: orthogonal` (0.01 for a policy's, so that it starts near
/// uniform; 1 for a value's).
modules::MLP mlp(const ModelSection& model, int64_t in, int64_t out,
                 const std::vector<int64_t>& cells, double last_gain = 1.0);

/// Q(s, a): an MLP of the model's critic cells on the concatenated observation and action,
/// writing "state_action_value".
modules::ValueOperator state_action_critic(const RecipeContext& context);

/// An optimiser group over `params` with `optim`'s optimiser (modules::make_optimizer) at
/// learning rate `lr`. A parameter listed more than once (networks sharing a module, e.g.
/// model.share_encoder: the loss lists it under each network) is kept once, at its first place,
/// so that each step moves it once and gradient clipping counts it once.
OptimizerGroup group(const OptimSection& optim, std::string name, std::vector<torch::Tensor> params,
                     double lr, std::vector<std::string> terms, int64_t period = 1);

/// optim.lr_schedule's choices: "constant", "linear" (decaying to 0 at total_frames).
const std::vector<std::string>& lr_schedule_names();
/// The factor on the base learning rate after `frames` of `total_frames` under `schedule`.
/// Throws tensordict::ValueError for a schedule not in the table.
double lr_schedule_factor(const std::string& schedule, int64_t frames, int64_t total_frames);

/// `lr` when positive, else optim.lr (the -1 of optim.actor_lr / optim.critic_lr).
double lr_or_default(const OptimSection& optim, double lr);

/// The parameters of the loss's networks whose names start with one of `prefixes`.
std::vector<torch::Tensor> network_params(const losses::LossModule& loss,
                                          const std::vector<std::string>& prefixes);

/// A replay buffer from the replay section (lazy tensor storage on `device`, replay.device
/// resolved; prioritized when asked), sampling with `sampler` when given (e.g. a SliceSampler
/// for a recurrent network's sequences; the caller refuses replay.prioritized with it).
std::shared_ptr<replay::TensorDictReplayBuffer> make_replay(
    const ReplaySection& replay, torch::Device device,
    std::shared_ptr<replay::Sampler> sampler = nullptr);

/// The problems of running an algorithm that needs `need` actions on `env`.
std::vector<std::string> action_space_problems(const std::string& algo, const EnvInfo& env,
                                               bool discrete, bool continuous);

}  // namespace tdrl::apps::detail
