// What the distributed collector tests and their worker processes (tdrl_collectors_worker)
// share: the scenario names and the policy both sides build with the same code.

#pragma once

#include <memory>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/collectors/policy.h>
#include <tdrl/modules/q_value.h>
#include <tdrl/modules/recurrent.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>

namespace tdrl::testing {

// The worker program's scenarios (its first argument):
// - "random": CartPole-v1, random actions (null policy);
// - "batched": CartPole-v1 with batch size [2], random actions;
// - "linear": CartPole-v1, linear_policy with bias (0, 0.5) (action 1 until the trainer's
//   weights arrive);
// - "noisy": CartPole-v1, each action drawn with the process's global generator (as
//   exploration noise is);
// - "throw": rank 2's policy throws kThrownMessage; rank 1 acts randomly;
// - "die": rank 2 kills itself (SIGKILL) during its second batch; rank 1 acts randomly;
// - "bad_env": the env factory asks for the unregistered env kMissingEnv;
// - "recurrent": CartPole-v1 carrying RecurrentPolicy's state (envs::with_policy_state), acted
//   on by a RecurrentPolicy (the trainer's weights arrive before the first batch).
inline constexpr const char* kThrownMessage = "the policy of rank 2 failed on purpose";
inline constexpr const char* kMissingEnv = "NoSuchEnv-v0";

// action = argmax(linear(observation)), over CartPole's 4 observations and 2 actions.
struct ArgmaxLinearImpl : torch::nn::Module {
  ArgmaxLinearImpl() { linear = register_module("linear", torch::nn::Linear(4, 2)); }
  torch::Tensor forward(torch::Tensor observation) { return linear(observation).argmax(-1); }
  torch::nn::Linear linear{nullptr};
};
TORCH_MODULE(ArgmaxLinear);

// Sets `net`'s weights to zero and its bias to (b0, b1): the action is argmax(b0, b1).
inline void set_bias(const ArgmaxLinear& net, float b0, float b1) {
  torch::NoGradGuard no_grad;
  net->linear->weight.zero_();
  net->linear->bias.copy_(torch::tensor({b0, b1}));
}

// A policy over `net`: a TensorDictModule "observation" -> "action", whose weights are
// `net`'s.
inline collectors::CollectorPolicy linear_policy(const ArgmaxLinear& net) {
  tensordict::nn::TensorDictModule module(
      net, tensordict::nn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action"}));
  return collectors::CollectorPolicy(module.ptr());
}

// A greedy recurrent Q-policy for CartPole: LSTM over the observation, a linear head, argmax.
struct RecurrentPolicy {
  modules::LSTMModule lstm{
      modules::RecurrentModuleOptions(4, 8).in_key("observation").out_key("embed")};
  tensordict::nn::TensorDictSequential policy{nullptr};
  RecurrentPolicy() {
    torch::nn::Linear head(8, 2);
    policy = tensordict::nn::TensorDictSequential(
        lstm,
        tensordict::nn::TensorDictModule(
            head, tensordict::nn::TensorDictModuleOptions().in_keys({"embed"}).out_keys(
                      {"action_value"})),
        modules::QValueModule(modules::QValueModuleOptions().action_space("categorical")));
  }
};

}  // namespace tdrl::testing
