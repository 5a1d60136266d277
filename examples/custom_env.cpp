// Writing your own environment (docs/custom_env.md walks through this file).
//
// PointGoal-v0: a point in the plane must reach a goal. Natively batched (any batch_size),
// seeded through generator(), registered by name, checked with check_env_specs, stepped with a
// hand-written policy and run in a ParallelEnv. Exits non-zero if anything misbehaves, so the
// test suite runs it (ctest: Examples.CustomEnvRuns).

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <tdrl/envs/batched_envs.h>
#include <tdrl/envs/env_base.h>
#include <tdrl/envs/registry.h>
#include <tensordict/fields.h>

namespace example {

using tdrl::envs::EnvBase;
using tdrl::envs::EnvBaseOptions;
using tdrl::specs::Bounded;
using tdrl::specs::BoundedOptions;
using tdrl::specs::Composite;
using tdrl::specs::Unbounded;
using tensordict::TensorDict;

// ---- 1. Options ---------------------------------------------------------------------------------

/// Options of PointGoalEnv.
/// Example: `PointGoalEnvOptions().batch_size({8}).max_episode_steps(100)`
struct PointGoalEnvOptions {
  /// The env's batch size (`[]` = one point). Default `[]`.
  TORCH_ARG(std::vector<int64_t>, batch_size);
  /// Where outputs live. Default CPU.
  TORCH_ARG(torch::Device, device) = torch::kCPU;
  /// Steps after which an episode is truncated. Default 100.
  TORCH_ARG(int64_t, max_episode_steps) = 100;
  /// Distance to the goal under which the episode terminates (success). Default 0.05.
  TORCH_ARG(double, goal_tolerance) = 0.05;

 public:
  /// The task options (a config's env.options), declared once: the registry reads them by name
  /// and tdrl-train validates and documents them from this.
  void fields(tensordict::fields::FieldVisitor& v) {
    v("max_episode_steps", max_episode_steps_, tensordict::fields::at_least(1),
      "steps after which an episode is truncated");
    v("goal_tolerance", goal_tolerance_, tensordict::fields::greater_than(0),
      "distance to the goal that ends the episode");
  }
};

// ---- 2. The env ---------------------------------------------------------------------------------

/// PointGoal-v0. Observation "observation" `[*batch, 4]` float32: the position (x, y) and the
/// offset to the goal (gx - x, gy - y). Action "action" `[*batch, 2]` float32 in [-0.1, 0.1]:
/// the displacement. Reward `-|goal - position|` after the move. Terminated when the distance
/// is below goal_tolerance; truncated after max_episode_steps. Reset draws the position and
/// the goal uniformly in [-1, 1]^2.
class PointGoalEnv : public EnvBase {
 public:
  explicit PointGoalEnv(const PointGoalEnvOptions& options = {})
      : EnvBase("PointGoal-v0",
                EnvBaseOptions().batch_size(options.batch_size()).device(options.device())),
        options_(options) {
    const std::vector<int64_t>& batch = batch_size();
    // Specs: shapes start with the batch dims.
    set_observation_spec(Composite::make(
        {{"observation", std::make_shared<Unbounded>(with_last(batch, 4))}}, batch));
    set_action_spec(
        std::make_shared<Bounded>(BoundedOptions().low(-0.1).high(0.1).shape(with_last(batch, 2))));
    set_reward_spec(std::make_shared<Unbounded>(with_last(batch, 1)));
    // State: held as tensors on the CPU, one row per batch element.
    position_ = torch::zeros(with_last(batch, 2));
    goal_ = torch::zeros(with_last(batch, 2));
    steps_ = torch::zeros(with_last(batch, 1), torch::kInt64);
  }

 protected:
  // 3. Reset: all sub-envs, or only those a "_reset" mask [*batch, 1] selects.
  TensorDict reset_impl(const TensorDict& tensordict) override {
    // Every random draw comes from generator(): same seed, same episode.
    const auto position = torch::rand(position_.sizes(), generator()) * 2 - 1;
    const auto goal = torch::rand(goal_.sizes(), generator()) * 2 - 1;
    if (auto mask = tensordict.find(tdrl::specs::kReset)) {
      position_ = torch::where(*mask, position, position_);
      goal_ = torch::where(*mask, goal, goal_);
      steps_ = torch::where(*mask, torch::zeros_like(steps_), steps_);
    } else {
      position_ = position;
      goal_ = goal;
      steps_.zero_();
    }
    // Flags may be left out: reset() fills done/terminated/truncated with false.
    return TensorDict({{"observation", observe()}}, batch_size());
  }

  // 4. Step: the action has been checked against the action spec already.
  TensorDict step_impl(const TensorDict& tensordict) override {
    position_ = (position_ + tensordict.get("action")).clamp(-1.0, 1.0);
    steps_ += 1;
    const auto distance = (goal_ - position_).norm(2, -1, /*keepdim=*/true);
    return TensorDict({{"observation", observe()},
                       {"reward", -distance},
                       {"terminated", distance < options_.goal_tolerance()},
                       {"truncated", steps_ >= options_.max_episode_steps()}},
                      batch_size());
    // "done" is left out: step() sets it to terminated | truncated.
  }

  // 5. Checkpointing: everything reset_impl/step_impl read besides their input. Returning true
  // says the state is complete, so a resumed run continues its episodes mid-way.
  bool save_state(TensorDict& state) const override {
    state.set("position", position_.clone());
    state.set("goal", goal_.clone());
    state.set("steps", steps_.clone());
    return true;
  }
  void load_state(const TensorDict& state) override {
    // state_entry throws KeyError/ShapeError/TypeError naming the entry; check all, then assign.
    const auto position = state_entry(state, "position", position_.sizes().vec(), torch::kFloat);
    const auto goal = state_entry(state, "goal", goal_.sizes().vec(), torch::kFloat);
    const auto steps = state_entry(state, "steps", steps_.sizes().vec(), torch::kInt64);
    position_ = position.clone();
    goal_ = goal.clone();
    steps_ = steps.clone();
  }

 private:
  static std::vector<int64_t> with_last(std::vector<int64_t> shape, int64_t last) {
    shape.push_back(last);
    return shape;
  }
  // A new tensor each call: the env's outputs must never alias its state.
  torch::Tensor observe() const { return torch::cat({position_, goal_ - position_}, -1); }

  PointGoalEnvOptions options_;
  torch::Tensor position_;
  torch::Tensor goal_;
  torch::Tensor steps_;
};

// ---- 6. Registration ----------------------------------------------------------------------------

/// Registers PointGoal-v0 with its declared task options (the names a config uses).
void register_point_goal() {
  tdrl::envs::register_env<PointGoalEnvOptions>(
      "PointGoal-v0", [](const PointGoalEnvOptions& task, const tdrl::envs::EnvOptions& given) {
        return std::make_shared<PointGoalEnv>(
            PointGoalEnvOptions(task).batch_size(given.batch_size()).device(given.device()));
      });
}

}  // namespace example

int main() {
  using tdrl::envs::EnvOptions;
  using tensordict::TensorDict;

  example::register_point_goal();
  auto env = tdrl::envs::make_env(
      "PointGoal-v0", EnvOptions().batch_size({4}).seed(0).set("max_episode_steps", 60));
  std::cout << *env << "\n";

  // 7. Check the env against its own specs (throws a report listing every mismatch).
  tdrl::envs::check_env_specs(*env);
  std::cout << "check_env_specs: ok\n";

  // 8. A rollout with a hand-written policy: step towards the goal, as far as allowed.
  tdrl::envs::Policy greedy = [](TensorDict td) {
    td.set("action", td.get("observation").narrow(-1, 2, 2).clamp(-0.1, 0.1));
    return td;
  };
  // Episodes restart where they end (partial resets) until 30 steps are done.
  const auto keep_going = tdrl::envs::RolloutOptions().break_when_any_done(false);
  env->set_seed(0);
  TensorDict rollout = env->rollout(30, greedy, keep_going);
  // Each coordinate starts at most 2 from the goal's and moves up to 0.1 a step: within 20
  // steps every sub-env reaches its goal.
  const auto reached = rollout.get({"next", "terminated"}).any(1).squeeze(-1);
  std::cout << "greedy rollout: batch_size " << tensordict::shape_str(rollout.batch_size())
            << ", sub-envs that reached their goal: " << reached.sum().item<int64_t>()
            << " of 4, mean reward " << rollout.get({"next", "reward"}).mean().item<float>()
            << "\n";
  if (!reached.all().item<bool>()) {
    std::cerr << "custom_env: the greedy policy should reach every goal within 30 steps\n";
    return 1;
  }

  // 9. Same seed, same rollout.
  env->set_seed(0);
  TensorDict again = env->rollout(30, greedy, keep_going);
  if (!torch::equal(again.get({"next", "observation"}), rollout.get({"next", "observation"}))) {
    std::cerr << "custom_env: the same seed gave a different rollout\n";
    return 1;
  }

  // 10. A checkpoint mid-episode: a fresh env loaded with the state continues the same stream.
  env->set_seed(3);
  TensorDict root = env->reset();
  for (int t = 0; t < 5; ++t) root = env->step_and_maybe_reset(env->rand_action(root)).second;
  const TensorDict saved = env->state_dict();
  const auto from = [&] {
    return tdrl::envs::RolloutOptions(keep_going).auto_reset(false).tensordict(root.clone());
  };
  const TensorDict expected = env->rollout(10, nullptr, from());
  auto restored = tdrl::envs::make_env("PointGoal-v0",
                                       EnvOptions().batch_size({4}).set("max_episode_steps", 60));
  restored->load_state_dict(saved);
  const TensorDict resumed = restored->rollout(10, nullptr, from());
  if (!torch::equal(resumed.get({"next", "observation"}), expected.get({"next", "observation"}))) {
    std::cerr << "custom_env: the restored env did not continue the saved stream\n";
    return 1;
  }
  std::cout << "state_dict round trip: the restored env continues the same 10 steps\n";

  // 11. Eight copies in a ParallelEnv on two threads: batch [8, 4].
  tdrl::envs::ParallelEnv parallel(
      8, [] { return tdrl::envs::make_env("PointGoal-v0", EnvOptions().batch_size({4})); },
      tdrl::envs::ParallelEnvOptions().num_threads(2));
  parallel.set_seed(1);
  TensorDict batch =
      parallel.rollout(30, greedy, tdrl::envs::RolloutOptions().break_when_any_done(false));
  std::cout << parallel << "\nparallel rollout: batch_size "
            << tensordict::shape_str(batch.batch_size())
            << ", episodes finished: " << batch.get({"next", "done"}).sum().item<int64_t>() << "\n";
  if (batch.batch_size() != std::vector<int64_t>{8, 4, 30}) return 1;
  return 0;
}
