// Actors, critics and batches shared by the policy-gradient loss tests.

#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/losses/loss_module.h>
#include <tdrl/modules/actors.h>
#include <tdrl/modules/mlp.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nn.h>
#include <tensordict/tensor_dict.h>

#include "losses/loss_fixtures.h"

namespace tdrl::losses::testing {

using tensordict::NestedKey;
using tensordict::TensorDict;
namespace tdnn = tensordict::nn;

/// The scalar `key` of a loss output, as a double.
inline double scalar(const TensorDict& out, const char* key) { return out.get(key).item<double>(); }

constexpr double kHalfLog2Pi = 0.91893853320467274178;  // 0.5 * log(2 pi)

/// log N(x; mu, 1), as a plain formula.
inline double normal_log_density(double x, double mu, double sigma = 1.0) {
  const double z = (x - mu) / sigma;
  return -0.5 * z * z - std::log(sigma) - kHalfLog2Pi;
}

/// An actor whose distribution over a 1-dim action is `dist` (IndependentNormal by default)
/// with loc = w * observation (a Linear(1, 1) without bias, weight w) and scale = `scale`:
/// observation [*, 1] → loc, scale [*, 1]. `linear` receives the Linear.
inline tdnn::ProbabilisticTensorDictSequential linear_gaussian_actor(
    double w, torch::nn::Linear* linear = nullptr, double scale = 1.0,
    tdnn::DistributionClass dist = tdnn::DistributionClass::independent_normal()) {
  torch::nn::Linear lin(torch::nn::LinearOptions(1, 1).bias(false));
  {
    torch::NoGradGuard no_grad;
    lin->weight.fill_(w);
  }
  if (linear) *linear = lin;
  return tdnn::ProbabilisticTensorDictSequential(
      tdnn::TensorDictModule(
          lin, tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"loc"})),
      tdnn::TensorDictModule([scale](torch::Tensor loc) { return torch::full_like(loc, scale); },
                             tdnn::TensorDictModuleOptions().in_keys({"loc"}).out_keys({"scale"})),
      tdnn::ProbabilisticTensorDictModule(dist, tdnn::ProbabilisticTensorDictModuleOptions()
                                                    .in_keys({"loc", "scale"})
                                                    .out_keys({"action"})
                                                    .return_log_prob(true)));
}

/// A critic V(observation) = w * observation + b on observation [*, 1] writing state_value.
inline modules::ValueOperator linear_critic(double w, double b,
                                            torch::nn::Linear* linear = nullptr) {
  torch::nn::Linear lin(1, 1);
  {
    torch::NoGradGuard no_grad;
    lin->weight.fill_(w);
    lin->bias.fill_(b);
  }
  if (linear) *linear = lin;
  return modules::ValueOperator(lin);
}

/// A `Loss` (A2C, PPO, REINFORCE) on the hand-worked networks: the actor
/// linear_gaussian_actor(0.5) (loc = 0.5 * observation, scale 1) and the critic
/// linear_critic(0.3, 0.1); `options` go to the loss's constructor.
template <class Loss, class... Options>
std::shared_ptr<Loss> hand_loss(Options... options) {
  return std::make_shared<Loss>(linear_gaussian_actor(0.5), linear_critic(0.3, 0.1),
                                std::move(options)...);
}

/// A ProbabilisticActor: MLP(obs_dim → hidden → 2 * act_dim) → NormalParamExtractor →
/// TanhNormal on [-1, 1], writing action and sample_log_prob.
inline modules::ProbabilisticActor mlp_tanh_actor(int64_t obs_dim, int64_t act_dim,
                                                  std::vector<int64_t> hidden) {
  tdnn::TensorDictSequential net(
      tdnn::TensorDictModule(
          modules::MLP(modules::MLPOptions(obs_dim, 2 * act_dim).num_cells(hidden)),
          tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"params"})),
      tdnn::TensorDictModule(
          tdnn::NormalParamExtractor(),
          tdnn::TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"})));
  auto spec = std::make_shared<specs::Bounded>(
      specs::BoundedOptions().low(-1.0).high(1.0).shape({act_dim}).dtype(torch::kFloat32));
  return modules::ProbabilisticActor(net, spec,
                                     modules::ProbabilisticActorOptions().return_log_prob(true));
}

/// A ValueOperator around MLP(obs_dim → hidden → 1).
inline modules::ValueOperator mlp_critic(int64_t obs_dim, std::vector<int64_t> hidden) {
  return modules::ValueOperator(modules::MLP(modules::MLPOptions(obs_dim, 1).num_cells(hidden)));
}

/// A synthetic rollout of batch [B, T]: observation and ("next", "observation") [B, T, obs],
/// ("next", "reward") [B, T, 1], ("next", "done"/"terminated"/"truncated") [B, T, 1] with a
/// few terminated and truncated steps, and the actor's action and sample_log_prob drawn under
/// InteractionType::kRandom without gradient (as a collector writes them, with the
/// distribution parameters).
inline TensorDict synthetic_rollout(int64_t batch, int64_t steps, int64_t obs_dim,
                                    tdnn::ProbabilisticTensorDictSequentialImpl& actor) {
  const auto obs = torch::randn({batch, steps + 1, obs_dim});
  const auto terminated = torch::rand({batch, steps, 1}) < 0.1;
  const auto truncated = (torch::rand({batch, steps, 1}) < 0.1) & ~terminated;
  TensorDict next({{"observation", obs.narrow(1, 1, steps)},
                   {"reward", torch::randn({batch, steps, 1})},
                   {"terminated", terminated},
                   {"truncated", truncated},
                   {"done", terminated | truncated}},
                  {batch, steps});
  TensorDict td({{"observation", obs.narrow(1, 0, steps)}, {"next", next}}, {batch, steps});
  torch::NoGradGuard no_grad;
  tdnn::SetInteractionType random(tdnn::InteractionType::kRandom);
  actor.forward(td);
  return td;
}

/// An MLP TanhNormal actor and an MLP critic (one hidden layer of `num_cells`) for 3
/// observation and 2 action dims, and a `Loss` (A2C, PPO, REINFORCE) on them with default
/// options; built in that order, so a seed fixes all three.
template <class Loss>
struct MlpActorCritic {
  explicit MlpActorCritic(int64_t num_cells)
      : actor(mlp_tanh_actor(3, 2, {num_cells})),
        critic(mlp_critic(3, {num_cells})),
        loss(std::make_shared<Loss>(actor, critic)) {}
  modules::ProbabilisticActor actor;
  modules::ValueOperator critic;
  std::shared_ptr<Loss> loss;
};

/// The sum of `terms` before and after 100 Adam steps (lr 3e-3) of `loss` on the fixed `batch`,
/// whose advantage and value target are estimated once first (as before PPO's epochs).
inline LossDrop adam_on_fixed_batch(LossModule& loss, TensorDict batch,
                                    const std::vector<std::string>& terms) {
  loss.value_estimator()->forward(batch);
  return adam_steps(loss, batch, terms, loss.parameters(), 100, 3e-3);
}

}  // namespace tdrl::losses::testing
