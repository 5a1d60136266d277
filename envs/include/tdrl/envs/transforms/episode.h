#pragma once

/// Episode bookkeeping transforms: StepCounter (step count, time limit), InitTracker (first
/// step flag), FrameSkipTransform (action repeat).

#include <cstdint>
#include <optional>
#include <string>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/transforms.h>
#include <tdrl/specs/keys.h>
#include <tensordict/fields.h>

namespace tdrl::envs {

// ---- StepCounter -------------------------------------------------------------------------------

/// Options of StepCounter.
/// Example: `StepCounterOptions().max_steps(200)`
struct StepCounterOptions {
  /// Truncate episodes after this many steps (>= 1). Default none (count only).
  TORCH_ARG(std::optional<int64_t>, max_steps);
  /// The count entry. Default "step_count".
  TORCH_ARG(NestedKey, step_count_key){"step_count"};
  /// The flag set at max_steps. Default "truncated".
  TORCH_ARG(NestedKey, truncated_key){specs::kTruncated};
  /// Also set "done" at max_steps (keeping done = terminated | truncated). Default true.
  TORCH_ARG(bool, update_done) = true;

 public:
  /// max_steps and update_done (the keys are the caller's wiring).
  void fields(tensordict::fields::FieldVisitor& v) {
    v("max_steps", max_steps_, tensordict::fields::at_least(1),
      "truncate episodes after this many steps (null: count only)");
    v("update_done", update_done_, "also set done when max_steps truncates");
  }
};

/// Counts the steps of each episode (TorchRL's StepCounter) and, with max_steps, truncates
/// it: when a step brings the count to max_steps and the episode did not terminate, that
/// step's truncated (and done) become true.
///
/// Keys: reset writes step_count_key = 0, int64 `[*batch, 1]` (on a partial reset, only for
/// the sub-envs reset: the others keep the count of the given TensorDict); step reads the
/// root's count (0 when absent) and writes ("next", step_count_key) = count + 1 and, with
/// max_steps, ("next", truncated_key) and ("next", "done"). Specs: step_count_key joins the
/// observation spec as BoundedDiscrete int64 [0, max_steps] (upper bound the int64 maximum
/// without max_steps).
/// Throws ValueError for max_steps < 1.
/// Example:
/// `env.append_transform(std::make_shared<StepCounter>(StepCounterOptions().max_steps(500)));`
class StepCounter : public Transform {
 public:
  explicit StepCounter(StepCounterOptions options = {});
  const StepCounterOptions& options() const { return options_; }

  std::string name() const override { return "StepCounter"; }
  std::string to_string() const override;
  TensorDict reset(const TensorDict& input, TensorDict output) override;
  TensorDict step(const TensorDict& root, TensorDict next) override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;

 private:
  StepCounterOptions options_;
};

// ---- InitTracker -------------------------------------------------------------------------------

/// Options of InitTracker.
/// Example: `InitTrackerOptions().init_key("is_init")`
struct InitTrackerOptions {
  /// The flag entry. Default "is_init".
  TORCH_ARG(NestedKey, init_key){"is_init"};
};

/// Marks the first observation of each episode (TorchRL's InitTracker), e.g. for recurrent
/// policies that reset their hidden state.
///
/// Keys: reset writes init_key = true, bool `[*batch, 1]` (on a partial reset: true for the
/// sub-envs reset, false for the others); step writes ("next", init_key) = false. Specs:
/// init_key joins the observation spec as a bool Binary flag `[*batch, 1]` (as the done flags).
/// Example: `env.append_transform(std::make_shared<InitTracker>());`
class InitTracker : public Transform {
 public:
  explicit InitTracker(InitTrackerOptions options = {});
  const InitTrackerOptions& options() const { return options_; }

  std::string name() const override { return "InitTracker"; }
  std::string to_string() const override;
  TensorDict reset(const TensorDict& input, TensorDict output) override;
  TensorDict step(const TensorDict& root, TensorDict next) override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;

 private:
  InitTrackerOptions options_;
};

// ---- FrameSkipTransform ------------------------------------------------------------------------

/// Options of FrameSkipTransform. Converts from a count, so `FrameSkipTransform(4)` reads as
/// before.
/// Example: `FrameSkipOptions().frame_skip(4)`
struct FrameSkipOptions {
  /* implicit */ FrameSkipOptions(int64_t frame_skip = 1) : frame_skip_(frame_skip) {}
  /// Env steps per action (>= 1; 1 repeats nothing).
  TORCH_ARG(int64_t, frame_skip);

 public:
  /// frame_skip, required: a config that names the transform says how many steps to repeat.
  void fields(tensordict::fields::FieldVisitor& v) {
    v.required()("frame_skip", frame_skip_, tensordict::fields::at_least(1),
                 "env steps per action: the action is repeated, the rewards summed");
  }
};

/// Repeats each action `frame_skip` times (TorchRL's FrameSkipTransform): one step of the
/// transformed env steps the env below up to frame_skip times with the same root (action),
/// summing the rewards, and stops early after a step where any sub-env is done (so a batched
/// env whose sub-envs end at different times repeats fewer frames for all of them). Each repeat
/// reads the last one's "next" entries as its root (with the same action), so that transforms
/// below that carry state from step to step (RewardSum, StepCounter, CatFrames) count every
/// frame. The returned "next" is the last step's, with the summed reward.
///
/// Keys: reads and rewrites the reward (the env's reward key) and reads "done" under "next".
/// Specs: unchanged.
/// Throws ValueError for frame_skip < 1.
/// Example: `env.append_transform(std::make_shared<FrameSkipTransform>(4));`
class FrameSkipTransform : public Transform {
 public:
  explicit FrameSkipTransform(FrameSkipOptions options);
  const FrameSkipOptions& options() const { return options_; }
  int64_t frame_skip() const { return options_.frame_skip(); }

  std::string name() const override { return "FrameSkipTransform"; }
  std::string to_string() const override;
  TensorDict step_through(const TensorDict& root, const StepFn& inner) override;
  specs::CompositePtr transform_reward_spec(specs::CompositePtr spec,
                                            const EnvSpecs& input) override;

 private:
  FrameSkipOptions options_;
  NestedKey reward_key_{specs::kReward};
};

}  // namespace tdrl::envs
