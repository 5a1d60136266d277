#pragma once

// Small deterministic envs for testing code that runs envs (transforms, wrappers, collectors).
// Each is natively batched (any batch_size) and honours partial resets ("_reset"). Shared by
// several test suites: add new mock envs with distinct names, keep the existing ones as they
// are (the transforms tests use CountingEnv, ContinuousEnv and Float64Env).

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/torch.h>

#include <tdrl/envs/env_base.h>
#include <tensordict/errors.h>

namespace tdrl::testing {

using envs::EnvBase;
using envs::EnvBaseOptions;
using specs::Bounded;
using specs::BoundedOptions;
using specs::Categorical;
using specs::CategoricalOptions;
using specs::Composite;
using specs::Unbounded;
using specs::UnboundedOptions;
using tensordict::TensorDict;

inline std::vector<int64_t> shape_with(std::vector<int64_t> batch, std::vector<int64_t> tail) {
  batch.insert(batch.end(), tail.begin(), tail.end());
  return batch;
}

// The "_reset" mask of `td` ([*batch, 1]), or an undefined tensor (reset everything).
inline torch::Tensor reset_mask_of(const TensorDict& td) {
  return td.get_or(specs::kReset, torch::Tensor());
}

// Counts steps: "observation" float32 [*batch, 1] is the number of steps since the reset;
// the action is Categorical(2) [*batch, 1] (ignored); reward 1 (float32 [*batch, 1]);
// terminated once the count reaches max_count.
class CountingEnv : public EnvBase {
 public:
  explicit CountingEnv(std::vector<int64_t> batch = {}, int64_t max_count = 5)
      : EnvBase("CountingEnv", EnvBaseOptions().batch_size(batch)), max_count_(max_count) {
    const auto one = shape_with(batch, {1});
    set_observation_spec(
        Composite::make({{"observation", std::make_shared<Unbounded>(one)}}, batch));
    set_action_spec(std::make_shared<Categorical>(2, CategoricalOptions().shape(one)));
    count_ = torch::zeros(one);
  }

  // The current counts [*batch, 1].
  const torch::Tensor& count() const { return count_; }
  int64_t steps_taken = 0;

 protected:
  TensorDict reset_impl(const TensorDict& td) override {
    const auto mask = reset_mask_of(td);
    count_ = mask.defined() ? torch::where(mask, torch::zeros_like(count_), count_)
                            : torch::zeros_like(count_);
    return TensorDict({{"observation", count_.clone()}}, batch_size());
  }

  TensorDict step_impl(const TensorDict& td) override {
    ++steps_taken;
    count_ = count_ + 1;
    return TensorDict({{"observation", count_.clone()},
                       {"reward", torch::ones_like(count_)},
                       {"terminated", count_ >= static_cast<double>(max_count_)}},
                      batch_size());
  }

 private:
  int64_t max_count_;
  torch::Tensor count_;
};

// A continuous-action env: the action is Bounded [low, high] (per dim) [*batch, dim];
// "observation" float32 [*batch, dim] echoes the last action (zeros after a reset);
// "position" float32 [*batch, dim] adds the actions up from a uniform draw in [-1, 1] at
// reset (from generator()); reward = -sum(action^2) [*batch, 1]; never terminates.
class ContinuousEnv : public EnvBase {
 public:
  explicit ContinuousEnv(std::vector<int64_t> batch = {}, std::vector<double> low = {-1.0, -2.0},
                         std::vector<double> high = {1.0, 3.0})
      : EnvBase("ContinuousEnv", EnvBaseOptions().batch_size(batch)) {
    const auto dim = static_cast<int64_t>(low.size());
    const auto full = shape_with(batch, {dim});
    set_observation_spec(Composite::make({{"observation", std::make_shared<Unbounded>(full)},
                                          {"position", std::make_shared<Unbounded>(full)}},
                                         batch));
    set_action_spec(std::make_shared<Bounded>(
        BoundedOptions().low(torch::tensor(low)).high(torch::tensor(high)).shape(full)));
    position_ = torch::zeros(full);
    last_action = torch::zeros(full);
  }

  // The action the last step received (as the env saw it).
  torch::Tensor last_action;

 protected:
  TensorDict reset_impl(const TensorDict& td) override {
    const auto fresh = torch::rand(position_.sizes(), generator()) * 2 - 1;
    const auto mask = reset_mask_of(td);
    position_ = mask.defined() ? torch::where(mask, fresh, position_) : fresh;
    last_action = mask.defined() ? torch::where(mask, torch::zeros_like(last_action), last_action)
                                 : torch::zeros_like(last_action);
    return TensorDict({{"observation", last_action.clone()}, {"position", position_.clone()}},
                      batch_size());
  }

  TensorDict step_impl(const TensorDict& td) override {
    last_action = td.get("action").clone();
    position_ = position_ + last_action;
    return TensorDict({{"observation", last_action.clone()},
                       {"position", position_.clone()},
                       {"reward", -last_action.pow(2).sum(-1, true)},
                       {"terminated", torch::zeros(shape_with(batch_size(), {1}), torch::kBool)}},
                      batch_size());
  }

 private:
  torch::Tensor position_;
};

// A float64 env: "observation" float64 [*batch, 3] drawn as 3 + 2 * N(0, 1) (generator())
// at every reset and step; the action is Bounded [-1, 1] float64 [*batch, 2]; reward =
// sum(action) float64 [*batch, 1]; never terminates.
class Float64Env : public EnvBase {
 public:
  explicit Float64Env(std::vector<int64_t> batch = {})
      : EnvBase("Float64Env", EnvBaseOptions().batch_size(batch)) {
    obs_shape_ = shape_with(batch, {3});
    set_observation_spec(Composite::make(
        {{"observation",
          std::make_shared<Unbounded>(obs_shape_, UnboundedOptions().dtype(torch::kFloat64))}},
        batch));
    set_action_spec(std::make_shared<Bounded>(
        BoundedOptions().low(-1.0).high(1.0).shape(shape_with(batch, {2})).dtype(torch::kFloat64)));
    set_reward_spec(std::make_shared<Unbounded>(shape_with(batch, {1}),
                                                UnboundedOptions().dtype(torch::kFloat64)));
    last_action = torch::zeros(shape_with(batch, {2}), torch::kFloat64);
  }

  // The action the last step received (as the env saw it).
  torch::Tensor last_action;

 protected:
  TensorDict reset_impl(const TensorDict& td) override {
    return TensorDict({{"observation", draw()}}, batch_size());
  }

  TensorDict step_impl(const TensorDict& td) override {
    last_action = td.get("action").clone();
    return TensorDict({{"observation", draw()}, {"reward", last_action.sum(-1, true)}},
                      batch_size());
  }

 private:
  torch::Tensor draw() { return 3 + 2 * torch::randn(obs_shape_, generator(), torch::kFloat64); }

  std::vector<int64_t> obs_shape_;
};

// ---- NoisyCounterEnv (batched envs and registry tests) ------------------------------------------

/// Options of NoisyCounterEnv.
/// Example: `NoisyCounterOptions().batch_size({2}).episode_length(3)`
struct NoisyCounterOptions {
  /// The env's batch size. Default `[]`.
  TORCH_ARG(std::vector<int64_t>, batch_size);
  /// The size of the "observation" entry's last dim. Default 2.
  TORCH_ARG(int64_t, obs_dim) = 2;
  /// Terminated once an instance has taken this many steps since its reset. Default 1000.
  TORCH_ARG(int64_t, episode_length) = 1000;
  /// When > 0, the step with this number (1-based, counted over the env's life) throws
  /// ValueError("NoisyCounterEnv: step <k> fails on purpose"). Default 0.
  TORCH_ARG(int64_t, fail_at_step) = 0;
  /// When true, the failure above is a std::runtime_error instead. Default false.
  TORCH_ARG(bool, fail_with_runtime_error) = false;
  /// When true, step() writes an "observation" one element too wide (a broken env).
  TORCH_ARG(bool, wrong_observation_shape) = false;
  /// Sleep this long in every step (to keep work pending on other threads). Default 0.
  TORCH_ARG(std::chrono::microseconds, step_delay) = std::chrono::microseconds(0);
};

// A noisy walk with a step counter. Writes "observation" float32 [*batch, obs_dim] (reset:
// 0.1 * N(0, 1); step: + action (broadcast) + 0.01 * N(0, 1), all from generator()),
// ("stats", "count") int64 [*batch, 1] (steps since the reset), reward -sum(observation^2)
// [*batch, 1], terminated when count reaches episode_length. Action: Bounded [-1, 1] float32
// [*batch, 1]. Counts reset/step calls and records the thread of the last step.
class NoisyCounterEnv : public EnvBase {
 public:
  explicit NoisyCounterEnv(NoisyCounterOptions options = {})
      : EnvBase("NoisyCounter", EnvBaseOptions().batch_size(options.batch_size())),
        options_(std::move(options)) {
    const auto& batch = batch_size();
    set_observation_spec(Composite::make(
        {{"observation", std::make_shared<Unbounded>(shape_with(batch, {options_.obs_dim()}))},
         {{"stats", "count"},
          std::make_shared<Unbounded>(shape_with(batch, {1}),
                                      UnboundedOptions().dtype(torch::kInt64))}},
        batch));
    set_action_spec(std::make_shared<Bounded>(
        BoundedOptions().low(-1.0).high(1.0).shape(shape_with(batch, {1}))));
    position_ = torch::zeros(shape_with(batch, {options_.obs_dim()}));
    count_ = torch::zeros(shape_with(batch, {1}), torch::kInt64);
  }

  int64_t reset_calls = 0;
  int64_t step_calls = 0;
  std::thread::id last_step_thread;

 protected:
  TensorDict reset_impl(const TensorDict& td) override {
    ++reset_calls;
    auto fresh = 0.1 * torch::randn(position_.sizes(), generator());
    auto mask = reset_mask_of(td);
    if (mask.defined()) {
      position_ = torch::where(mask, fresh, position_);
      count_ = torch::where(mask, torch::zeros_like(count_), count_);
    } else {
      position_ = fresh;
      count_ = torch::zeros_like(count_);
    }
    return TensorDict({{"observation", position_.clone()}, {{"stats", "count"}, count_.clone()}},
                      batch_size());
  }

  TensorDict step_impl(const TensorDict& td) override {
    ++step_calls;
    last_step_thread = std::this_thread::get_id();
    if (options_.step_delay().count() > 0) std::this_thread::sleep_for(options_.step_delay());
    if (options_.fail_at_step() > 0 && step_calls == options_.fail_at_step()) {
      const std::string message =
          "NoisyCounterEnv: step " + std::to_string(step_calls) + " fails on purpose";
      if (options_.fail_with_runtime_error()) throw std::runtime_error(message);
      throw tensordict::ValueError(message);
    }
    position_ = position_ + td.get("action") + 0.01 * torch::randn(position_.sizes(), generator());
    count_ = count_ + 1;
    auto observation = position_.clone();
    if (options_.wrong_observation_shape()) {
      observation = torch::cat({observation, observation.narrow(-1, 0, 1)}, -1);
    }
    return TensorDict({{"observation", observation},
                       {{"stats", "count"}, count_.clone()},
                       {"reward", -position_.pow(2).sum(-1, true)},
                       {"terminated", count_ >= options_.episode_length()}},
                      batch_size());
  }

 private:
  NoisyCounterOptions options_;
  torch::Tensor position_;
  torch::Tensor count_;
};

/// A ContinuousEnv of the default bounds with batch size `batch`.
inline std::shared_ptr<ContinuousEnv> continuous(std::vector<int64_t> batch = {}) {
  return std::make_shared<ContinuousEnv>(std::move(batch));
}

}  // namespace tdrl::testing
