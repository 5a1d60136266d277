// A worker of the distributed collector tests: `tdrl_collectors_worker SCENARIO` (see
// distributed_scenarios.h), started with the TDRL_COLLECTOR_* variables by the trainer's
// launch_command or by a test. Exits 0 after the trainer said stop, 1 on an exception, 2 when
// started without the variables.

#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/collectors/distributed_collector.h>
#include <tdrl/envs/registry.h>
#include <tdrl/envs/transforms/primer.h>

#include "collectors/distributed_scenarios.h"

namespace {

using tdrl::collectors::CollectorPolicy;
using tdrl::collectors::TensorDict;

CollectorPolicy make_policy(const std::string& scenario, int64_t rank) {
  if (scenario == "linear") {
    tdrl::testing::ArgmaxLinear net;
    tdrl::testing::set_bias(net, 0.0f, 0.5f);
    return tdrl::testing::linear_policy(net);
  }
  if (scenario == "recurrent") return CollectorPolicy(tdrl::testing::RecurrentPolicy().policy);
  if (scenario == "noisy")
    return CollectorPolicy([](TensorDict td) -> TensorDict {
      td.set("action", torch::randint(2, {}, torch::kLong));
      return td;
    });
  if (scenario == "throw" && rank == 2)
    return CollectorPolicy(
        [](TensorDict) -> TensorDict { throw std::runtime_error(tdrl::testing::kThrownMessage); });
  if (scenario == "die" && rank == 2) {
    auto calls = std::make_shared<int64_t>(0);
    return CollectorPolicy([calls](TensorDict td) -> TensorDict {
      // The tests collect 4 frames per worker batch: call 6 is in the second batch.
      if (++*calls == 6) kill(getpid(), SIGKILL);
      td.set("action", torch::zeros({}, torch::kLong));
      return td;
    });
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "random";
  torch::set_num_threads(1);
  try {
    auto identity = tdrl::collectors::worker_identity_from_env();
    if (!identity) {
      std::cerr << "tdrl_collectors_worker: TDRL_COLLECTOR_RANK is not set\n";
      return 2;
    }
    tdrl::envs::register_builtin_envs();
    tdrl::envs::EnvFactory factory = [scenario]() -> std::shared_ptr<tdrl::envs::EnvBase> {
      if (scenario == "recurrent")
        return tdrl::envs::with_policy_state(tdrl::envs::make_env("CartPole-v1"),
                                             tdrl::testing::RecurrentPolicy().lstm->hidden_specs());
      return tdrl::envs::make_env(
          scenario == "bad_env" ? tdrl::testing::kMissingEnv : "CartPole-v1",
          tdrl::envs::EnvOptions().batch_size(scenario == "batched" ? std::vector<int64_t>{2}
                                                                    : std::vector<int64_t>{}));
    };
    tdrl::collectors::run_distributed_worker(*identity, factory,
                                             make_policy(scenario, identity->rank));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "tdrl_collectors_worker (" << scenario << "): " << e.what() << "\n";
    return 1;
  }
}
