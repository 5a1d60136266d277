// The ClipPPOLoss problem bench_losses and the GPU timings share: a HalfCheetah-sized agent
// (64x64 actor and critic) and a batch of kPpoBatch steps holding what a PPO batch holds (the
// collector's outputs, advantage and value target).

#pragma once

#include <memory>

#include <torch/torch.h>

#include <tdrl/losses.h>
#include <tdrl/modules.h>

#include "actors.h"

namespace tdrl::bench {

constexpr int64_t kPpoBatch = 2048;

struct PpoFixture {
  MLP actor_mlp{MLPOptions(kObs, 2 * kAction).num_cells({64, 64})};
  MLP critic_mlp{MLPOptions(kObs, 1).num_cells({64, 64})};
  modules::ProbabilisticActor actor{nullptr};
  modules::ValueOperator critic{nullptr};
  std::shared_ptr<losses::ClipPPOLoss> loss;
  TensorDict batch;

  PpoFixture() {
    actor = tanh_normal_actor(actor_mlp, /*return_log_prob=*/true);
    critic = modules::ValueOperator(critic_mlp);
    loss = std::make_shared<losses::ClipPPOLoss>(actor, critic);
    batch = TensorDict({{"observation", torch::randn({kPpoBatch, kObs})}}, {kPpoBatch});
    {
      torch::NoGradGuard no_grad;
      tdnn::SetInteractionType random(tdnn::InteractionType::kRandom);
      actor(batch);
    }
    batch.set("advantage", torch::randn({kPpoBatch, 1}));
    batch.set("value_target", torch::randn({kPpoBatch, 1}));
    batch = batch.select({"observation", "action", "sample_log_prob", "advantage", "value_target"});
  }
};

}  // namespace tdrl::bench
