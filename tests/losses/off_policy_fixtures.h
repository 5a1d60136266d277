// Networks and batches shared by the off-policy loss tests (DQN, DDPG, TD3, SAC, discrete SAC,
// IQL, CQL): a Q(s, a) critic over the concatenated observation and action, deterministic and
// TanhNormal actors with small linear layers whose weights the tests set, and transition
// batches laid out as envs write them.

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <tdrl/modules/actors.h>
#include <tdrl/modules/mlp.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nn/distribution_class.h>
#include <tensordict/nn/functional.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>
#include <tensordict/tensor_dict.h>

#include "losses/loss_fixtures.h"

namespace tdrl::losses::testing {

using tensordict::NestedKey;
using tensordict::TensorDict;
namespace tdnn = tensordict::nn;

/// Q(s, a) = mlp(cat(observation, action)); hidden = {} gives one Linear layer "mlp.0".
inline modules::ConcatMLP make_qnet(int64_t obs_dim, int64_t action_dim,
                                    std::vector<int64_t> hidden = {}) {
  return modules::ConcatMLP(modules::MLP(modules::MLPOptions(obs_dim + action_dim, 1)
                                             .num_cells(std::move(hidden))
                                             .activation("relu")));
}

/// A critic reading observation and action, writing state_action_value.
inline modules::ValueOperator make_critic(int64_t obs_dim, int64_t action_dim,
                                          std::vector<int64_t> hidden = {}) {
  return modules::ValueOperator(make_qnet(obs_dim, action_dim, std::move(hidden)),
                                modules::ValueOperatorOptions().in_keys({"observation", "action"}));
}

/// A deterministic actor: action = tanh(mlp(observation)) (hidden = {}: one Linear layer), or
/// without tanh.
inline tdnn::TensorDictModule make_deterministic_actor(int64_t obs_dim, int64_t action_dim,
                                                       std::vector<int64_t> hidden = {},
                                                       bool squash = true) {
  torch::nn::Sequential net(
      modules::MLP(modules::MLPOptions(obs_dim, action_dim).num_cells(std::move(hidden))));
  if (squash) net->push_back(torch::nn::Tanh());
  return tdnn::TensorDictModule(
      net, tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action"}));
}

/// Sets the only Linear layer of `module` (which holds exactly one weight and one bias).
inline void set_linear(const torch::nn::Module& module, const torch::Tensor& weight,
                       const torch::Tensor& bias) {
  torch::NoGradGuard no_grad;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const auto& name = item.key();
    if (name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0) {
      item.value().copy_(weight);
    } else {
      item.value().copy_(bias);
    }
  }
}

/// A TanhNormal actor on [-1, 1]: a Linear layer observation → (loc, log_scale) per action
/// dim, scale = exp(log_scale). `linear` is the layer, for setting its weights.
struct TanhNormalActor {
  torch::nn::Linear linear{nullptr};
  modules::ProbabilisticActor actor{nullptr};
};

inline TanhNormalActor make_tanh_normal_actor(int64_t obs_dim, int64_t action_dim,
                                              specs::TensorSpecPtr spec = nullptr) {
  TanhNormalActor out;
  out.linear = torch::nn::Linear(obs_dim, 2 * action_dim);
  tdnn::TensorDictSequential net(
      tdnn::TensorDictModule(
          out.linear,
          tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"params"})),
      tdnn::TensorDictModule(
          [](const torch::Tensor& params) {
            auto chunks = params.chunk(2, -1);
            return std::make_tuple(chunks[0], chunks[1].exp());
          },
          tdnn::TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"})));
  out.actor = modules::ProbabilisticActor(net, spec, modules::ProbabilisticActorOptions());
  return out;
}

/// A TanhNormal actor and two Q(s, a) critics (one hidden layer of 16) for 3 observation and 2
/// action dims, and a `Loss` (SACLoss, CQLLoss: constructed from actor, critics and options) on
/// them.
template <class Loss, class Options>
struct TanhActorTwinCritics {
  TanhNormalActor actor = make_tanh_normal_actor(3, 2);
  modules::ValueOperator q1 = make_critic(3, 2, {16});
  modules::ValueOperator q2 = make_critic(3, 2, {16});
  std::shared_ptr<Loss> loss(Options options = {}) const {
    return std::make_shared<Loss>(actor.actor, std::vector<modules::ValueOperator>{q1, q2},
                                  options);
  }
};

/// A categorical actor: logits = Linear(observation); `linear` is the layer.
struct CategoricalActor {
  torch::nn::Linear linear{nullptr};
  modules::ProbabilisticActor actor{nullptr};
};

inline CategoricalActor make_categorical_actor(int64_t obs_dim, int64_t num_actions,
                                               bool one_hot = false, bool with_mask = false) {
  CategoricalActor out;
  out.linear = torch::nn::Linear(obs_dim, num_actions);
  tdnn::TensorDictModule logits(
      out.linear, tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"logits"}));
  // With a mask, ("masks", "mask") feeds the distribution's "mask" parameter.
  std::vector<NestedKey> in_keys{"logits"};
  if (with_mask) in_keys.push_back(NestedKey{"masks", "mask"});
  out.actor = modules::ProbabilisticActor(
      logits, nullptr,
      modules::ProbabilisticActorOptions().in_keys(in_keys).distribution_class(
          one_hot ? tdnn::DistributionClass::one_hot_categorical()
                  : tdnn::DistributionClass::categorical()));
  return out;
}

/// A Q-network over observations writing action values `[B, n]` (hidden = {}: one Linear).
inline tdnn::TensorDictModule make_action_value_network(int64_t obs_dim, int64_t num_actions,
                                                        std::vector<int64_t> hidden = {}) {
  return tdnn::TensorDictModule(
      modules::MLP(modules::MLPOptions(obs_dim, num_actions).num_cells(std::move(hidden))),
      tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action_value"}));
}

/// A batch of B transitions: observation, action, and next: observation, reward `[B, 1]`,
/// done and terminated `[B, 1]` (bool).
inline TensorDict transitions(const torch::Tensor& observation, const torch::Tensor& action,
                              const torch::Tensor& next_observation, const torch::Tensor& reward,
                              const torch::Tensor& terminated) {
  const int64_t b = observation.size(0);
  TensorDict next({{"observation", next_observation},
                   {"reward", reward},
                   {"done", terminated.clone()},
                   {"terminated", terminated}},
                  {b});
  return TensorDict({{"observation", observation}, {"action", action}, {"next", next}}, {b});
}

/// A random batch (seed first): observations N(0, 1), continuous actions in (-1, 1), rewards
/// N(0, 1), about one transition in five terminated. The draws are sequenced, last field first
/// (the order GCC evaluated them in as arguments), so that one seed gives one batch under every
/// compiler: clang's left-to-right order gave TD3's optimisation test another batch.
inline TensorDict random_batch(int64_t b, int64_t obs_dim, int64_t action_dim) {
  const auto terminated = torch::rand({b, 1}) < 0.2;
  const auto reward = torch::randn({b, 1});
  const auto next_observation = torch::randn({b, obs_dim});
  const auto action = torch::rand({b, action_dim}) * 2 - 1;
  const auto observation = torch::randn({b, obs_dim});
  return transitions(observation, action, next_observation, reward, terminated);
}

/// As random_batch, with discrete actions: int64 indices `[B]` uniform in [0, num_actions).
inline TensorDict random_discrete_batch(int64_t b, int64_t obs_dim, int64_t num_actions) {
  const auto terminated = torch::rand({b, 1}) < 0.2;
  const auto reward = torch::randn({b, 1});
  const auto next_observation = torch::randn({b, obs_dim});
  const auto action = torch::randint(0, num_actions, {b});
  const auto observation = torch::randn({b, obs_dim});
  return transitions(observation, action, next_observation, reward, terminated);
}

/// True when no tensor of `params` (e.g. target parameters) has a gradient or requires one.
inline bool untouched_by_autograd(const TensorDict& params) {
  for (const auto& value : params.values(/*include_nested=*/true, /*leaves_only=*/true)) {
    const auto& t = std::get<torch::Tensor>(value);
    if (t.requires_grad() || t.grad().defined()) return false;
  }
  return true;
}

/// Zeroes (undefines) the gradients of every parameter of `module`.
inline void clear_grads(const torch::nn::Module& module) {
  for (auto& p : module.parameters()) p.mutable_grad() = torch::Tensor();
}

}  // namespace tdrl::losses::testing
