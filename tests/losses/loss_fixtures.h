// Gradient and training checks shared by every loss test (policy-gradient and off-policy):
// which parameters a term reaches, and what a few Adam steps on a fixed batch do to a term.

#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/losses/loss_module.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::losses::testing {

/// True when `module` has no parameter with a nonzero gradient.
inline bool has_no_gradient(const torch::nn::Module& module) {
  for (const auto& p : module.parameters()) {
    if (p.grad().defined() && p.grad().abs().sum().item<double>() > 0) return false;
  }
  return true;
}

/// True when every parameter of `module` has a nonzero gradient somewhere.
inline bool has_gradient(const torch::nn::Module& module) {
  for (const auto& p : module.parameters()) {
    if (!p.grad().defined() || p.grad().abs().sum().item<double>() == 0) return false;
  }
  return !module.parameters().empty();
}

/// True when every parameter of `module` has a defined gradient (zero allowed).
inline bool all_have_grad(const torch::nn::Module& module) {
  for (const auto& p : module.parameters()) {
    if (!p.grad().defined()) return false;
  }
  return true;
}

/// The sum of the entries `terms` of a loss output.
inline torch::Tensor sum_terms(const tensordict::TensorDict& out,
                               const std::vector<std::string>& terms) {
  torch::Tensor total = out.get(terms.front());
  for (size_t i = 1; i < terms.size(); ++i) total = total + out.get(terms[i]);
  return total;
}

/// Whether the sum of `terms` of one forward of `loss` on `batch`, backpropagated from cleared
/// gradients, reaches every parameter of `reached` and none of `untouched`.
inline ::testing::AssertionResult terms_reach_only(LossModule& loss,
                                                   const tensordict::TensorDict& batch,
                                                   const std::vector<std::string>& terms,
                                                   const torch::nn::Module& reached,
                                                   const torch::nn::Module& untouched) {
  loss.zero_grad();
  sum_terms(loss.forward(batch), terms).backward();
  if (!has_gradient(reached))
    return ::testing::AssertionFailure() << "a parameter meant to be reached got no gradient";
  if (!has_no_gradient(untouched))
    return ::testing::AssertionFailure() << "a parameter meant to be untouched got a gradient";
  return ::testing::AssertionSuccess();
}

/// A loss term's value before and after training.
struct LossDrop {
  double initial;
  double final;
};

/// The sum of `terms` of `loss` on the fixed `batch` before and after `steps` Adam steps
/// (learning rate `lr`) that minimise it over `params`. The gradients of the last step stay.
inline LossDrop adam_steps(LossModule& loss, const tensordict::TensorDict& batch,
                           const std::vector<std::string>& terms,
                           const std::vector<torch::Tensor>& params, int steps, double lr) {
  torch::optim::Adam optimizer(params, torch::optim::AdamOptions(lr));
  auto total = [&] { return sum_terms(loss.forward(batch), terms); };
  const double initial = total().item<double>();
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    total().backward();
    optimizer.step();
  }
  return {initial, total().item<double>()};
}

/// The parameters of `modules`, in order (e.g. of both Q-networks, for one optimiser).
template <class... Modules>
std::vector<torch::Tensor> parameters_of(const Modules&... modules) {
  std::vector<torch::Tensor> out;
  for (const torch::nn::Module* module : {static_cast<const torch::nn::Module*>(&modules)...}) {
    for (const auto& p : module->parameters()) out.push_back(p);
  }
  return out;
}

/// loss_qvalue and loss_actor at each step, before that step's update.
struct ActorCriticHistory {
  std::vector<double> qvalue;
  std::vector<double> actor;
};

/// `steps` steps of an off-policy actor-critic loss (SAC, discrete SAC) on the fixed `batch`:
/// each minimises loss_qvalue + loss_actor with an Adam optimiser (lr 1e-2) over `q_params` and
/// another over `actor_params`.
inline ActorCriticHistory train_actor_and_critics(LossModule& loss,
                                                  const tensordict::TensorDict& batch,
                                                  const std::vector<torch::Tensor>& q_params,
                                                  const std::vector<torch::Tensor>& actor_params,
                                                  int steps) {
  torch::optim::Adam q_opt(q_params, torch::optim::AdamOptions(1e-2));
  torch::optim::Adam actor_opt(actor_params, torch::optim::AdamOptions(1e-2));
  ActorCriticHistory history;
  for (int step = 0; step < steps; ++step) {
    q_opt.zero_grad();
    actor_opt.zero_grad();
    auto out = loss.forward(batch);
    sum_terms(out, {"loss_qvalue", "loss_actor"}).backward();
    q_opt.step();
    actor_opt.step();
    history.qvalue.push_back(out.get("loss_qvalue").item<double>());
    history.actor.push_back(out.get("loss_actor").item<double>());
  }
  return history;
}

}  // namespace tdrl::losses::testing
