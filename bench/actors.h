// The policy network the RL benchmarks share (modules, losses, SAC): an MLP whose 2 * kAction
// outputs a NormalParamExtractor splits into loc and scale, for a TanhNormal on [-1, 1]^kAction,
// the actor of a HalfCheetah-sized continuous-control agent.

#pragma once

#include <memory>

#include <torch/torch.h>

#include <tdrl/modules.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nn.h>

#include "problem.h"

namespace tdrl::bench {

using tensordict::TensorDict;
namespace tdnn = tensordict::nn;
using modules::MLP;
using modules::MLPOptions;

/// ProbabilisticActor reading "observation" through `mlp` (kObs -> 2 * kAction), writing
/// "params", "loc", "scale" and "action" (and "sample_log_prob" with `return_log_prob`).
inline modules::ProbabilisticActor tanh_normal_actor(const MLP& mlp, bool return_log_prob) {
  tdnn::TensorDictSequential net(
      tdnn::TensorDictModule(
          mlp, tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"params"})),
      tdnn::TensorDictModule(
          tdnn::NormalParamExtractor(),
          tdnn::TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"})));
  auto spec = std::make_shared<specs::Bounded>(
      specs::BoundedOptions().low(-1.0).high(1.0).shape({kAction}).dtype(torch::kFloat32));
  return modules::ProbabilisticActor(
      net, spec, modules::ProbabilisticActorOptions().return_log_prob(return_log_prob));
}

}  // namespace tdrl::bench
