// The fixtures shared by the Collector, CollectorPolicy and split_trajectories tests: envs,
// policies, options and tensor-to-vector helpers.

#pragma once

#include <tdrl/collectors/collector.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/envs/batched_envs.h>
#include <tdrl/envs/registry.h>
#include <tdrl/modules/actors.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/errors.h>
#include <tensordict/nn.h>
#include <tensordict/tensor_dict.h>

#include "support/mock_envs.h"
#include "support/test_names.h"

namespace tdrl::collectors {
namespace {

using namespace tdrl::testing::names;
using namespace tdrl::testing;  // the mock envs
using tensordict::nn::InteractionType;
namespace tdnn = tensordict::nn;
using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

const NestedKey kObs("observation");
const NestedKey kAction("action");
const NestedKey kNextObs({"next", "observation"});
const NestedKey kNextDone({"next", "done"});
const NestedKey kNextTerminated({"next", "terminated"});
const NestedKey kNextTruncated({"next", "truncated"});
const NestedKey kNextReward({"next", "reward"});

// ---- Helpers ---------------------------------------------------------------------------------

inline Ints ints(const torch::Tensor& t) {
  auto flat = t.to(torch::kInt64).contiguous().flatten();
  return Ints(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
}

inline Floats floats(const torch::Tensor& t) {
  auto flat = t.to(torch::kFloat32).contiguous().flatten();
  return Floats(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
}

inline Shape shape(const torch::Tensor& t) { return t.sizes().vec(); }

inline std::shared_ptr<envs::EnvBase> make(const std::string& name, Shape batch = {}) {
  envs::register_builtin_envs();
  return envs::make_env(name, envs::EnvOptions().batch_size(std::move(batch)));
}

inline std::shared_ptr<CountingEnv> counting(Shape batch = {}, int64_t max_count = 100) {
  return std::make_shared<CountingEnv>(std::move(batch), max_count);
}

inline CollectorOptions options(int64_t frames_per_batch, int64_t total_frames = -1) {
  return CollectorOptions().frames_per_batch(frames_per_batch).total_frames(total_frames);
}

// Every leaf of `a` equals the same leaf of `b`, and both have the same leaves.
inline void expect_same(const TensorDict& a, const TensorDict& b) {
  ASSERT_EQ(a.batch_size(), b.batch_size());
  const auto keys = a.keys(true, true);
  ASSERT_EQ(keys, b.keys(true, true));
  for (const auto& key : keys) EXPECT_TRUE(torch::equal(a.get(key), b.get(key))) << key;
}

// Writes action = 1 (int64 [*batch, 1], CountingEnv's action) and counts its calls.
struct ConstantActionPolicy {
  std::shared_ptr<int64_t> calls = std::make_shared<int64_t>(0);
  TensorDict operator()(TensorDict td) const {
    ++*calls;
    Shape action_shape = td.batch_size();
    action_shape.push_back(1);
    td.set(kAction, torch::ones(action_shape, torch::kInt64));
    return td;
  }
};

// A SerialEnv of two CountingEnvs terminating after 2 and 3 steps (out of step).
inline std::shared_ptr<envs::EnvBase> two_counters() {
  auto made = std::make_shared<int64_t>(0);
  return std::make_shared<envs::SerialEnv>(
      2, [made] { return std::make_shared<CountingEnv>(Shape{}, ++*made == 1 ? 2 : 3); });
}

// Pendulum actor: loc = Linear(3, 1)(observation), scale = 0.1, Normal, with log-prob.
inline modules::ProbabilisticActor pendulum_actor(torch::nn::Linear* linear = nullptr) {
  torch::nn::Linear lin(3, 1);
  {
    // Small weights keep loc within [-1, 1] on Pendulum's observations (|theta_dot| <= 8).
    torch::NoGradGuard no_grad;
    lin->weight.uniform_(-0.1, 0.1);
    lin->bias.zero_();
  }
  if (linear) *linear = lin;
  auto spec =
      std::make_shared<specs::Bounded>(specs::BoundedOptions().low(-2.0).high(2.0).shape({1}));
  return modules::ProbabilisticActor(
      tdnn::TensorDictSequential(
          tdnn::TensorDictModule(
              lin, tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"loc"})),
          tdnn::TensorDictModule(
              [](torch::Tensor loc) { return torch::full_like(loc, 0.1); },
              tdnn::TensorDictModuleOptions().in_keys({"loc"}).out_keys({"scale"}))),
      spec,
      modules::ProbabilisticActorOptions()
          .distribution_class(tdnn::DistributionClass::normal())
          .return_log_prob(true));
}

// Concatenates the batches along their last (time) batch dim.
inline TensorDict cat_time(const std::vector<TensorDict>& batches) {
  const auto dims = batches.front().batch_dims();
  TensorDict out = TensorDict::empty({});
  for (const auto& key : batches.front().keys(true, true)) {
    std::vector<torch::Tensor> parts;
    for (const auto& b : batches) parts.push_back(b.get(key));
    out.set(key, torch::cat(parts, dims - 1));
  }
  return out;
}

// Consecutive `[E, T]` batches of one collector: at each step the state is zero where the
// sub-env (re)starts, else the state the policy wrote at the step before (in the same batch or
// at the end of the previous one); resets happen inside the batches, and the state moves (a
// state stuck at zero would pass the rest vacuously).
inline void expect_state_runs_on(const std::vector<TensorDict>& batches) {
  int64_t resets_inside = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    const auto h = batches[b].get("recurrent_state_h");
    const auto h_next = batches[b].get({"next", "recurrent_state_h"});
    const auto init = batches[b].get("is_init").squeeze(-1);
    for (int64_t e = 0; e < h.size(0); ++e) {
      for (int64_t t = 0; t < h.size(1); ++t) {
        if (init[e][t].item<bool>()) {
          EXPECT_TRUE(torch::all(h[e][t] == 0).item<bool>()) << "b=" << b << " e=" << e;
          if (t > 0) ++resets_inside;
          continue;
        }
        if (t == 0 && b == 0) continue;
        const auto before =
            t > 0 ? h_next[e][t - 1] : batches[b - 1].get({"next", "recurrent_state_h"})[e][-1];
        EXPECT_TRUE(torch::equal(h[e][t], before)) << "b=" << b << " e=" << e << " t=" << t;
      }
    }
  }
  EXPECT_GT(resets_inside, 0);
  EXPECT_GT(batches.back().get("recurrent_state_c").abs().sum().item<double>(), 0);
}

}  // namespace
}  // namespace tdrl::collectors
