#pragma once

/// MountainCar-v0 and MountainCarContinuous-v0 (Gymnasium's classic-control tasks, Moore
/// 1990): drive an underpowered car up a hill by swinging back and forth.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/classic_control_env.h>

namespace tdrl::envs {

/// The track of both MountainCar tasks (Gymnasium's constants).
struct MountainCarTrack {
  static constexpr double kMinPosition = -1.2;
  static constexpr double kMaxPosition = 0.6;
  static constexpr double kMaxSpeed = 0.07;
};

/// Options of MountainCarEnv. The constants are Gymnasium's.
/// Example: `MountainCarEnvOptions().batch_size({32}).goal_velocity(0.01)`
struct MountainCarEnvOptions : ClassicControlEnvOptions<MountainCarEnvOptions> {
  /// batch_size, device and max_episode_steps: see ClassicControlEnvOptions; the time
  /// limit defaults to 200 steps (MountainCar-v0).
  MountainCarEnvOptions() : ClassicControlEnvOptions(200, 600, 400) {}
  /// Velocity the car must have (at least) at the goal (Gymnasium's `goal_velocity`).
  /// Default 0.
  TORCH_ARG(double, goal_velocity) = 0.0;
  /// Position of the goal. Default 0.5.
  TORCH_ARG(double, goal_position) = 0.5;
  /// Acceleration of a push. Default 0.001.
  TORCH_ARG(double, force) = 0.001;
  /// Gravity's factor on the slope. Default 0.0025.
  TORCH_ARG(double, gravity) = 0.0025;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    ClassicControlEnvOptions::fields(v);
    v("goal_velocity", goal_velocity_, "velocity the car must have (at least) at the goal");
    v("goal_position", goal_position_, "position of the goal");
    v("force", force_, "acceleration of a push");
    v("gravity", gravity_, "gravity's factor on the slope");
  }
};

/// Prints `MountainCarEnvOptions(batch_size=[], device=cpu, max_episode_steps=200, ...)`.
std::ostream& operator<<(std::ostream& os, const MountainCarEnvOptions& options);

/// Options of MountainCarContinuousEnv. The constants are Gymnasium's.
/// Example: `MountainCarContinuousEnvOptions().batch_size({32})`
struct MountainCarContinuousEnvOptions : ClassicControlEnvOptions<MountainCarContinuousEnvOptions> {
  /// batch_size, device and max_episode_steps: see ClassicControlEnvOptions; the time
  /// limit defaults to 999 steps (MountainCarContinuous-v0).
  MountainCarContinuousEnvOptions() : ClassicControlEnvOptions(999, 600, 400) {}
  /// Velocity the car must have (at least) at the goal (Gymnasium's `goal_velocity`).
  /// Default 0.
  TORCH_ARG(double, goal_velocity) = 0.0;
  /// Position of the goal. Default 0.45.
  TORCH_ARG(double, goal_position) = 0.45;
  /// Acceleration per unit of action. Default 0.0015.
  TORCH_ARG(double, power) = 0.0015;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    ClassicControlEnvOptions::fields(v);
    v("goal_velocity", goal_velocity_, "velocity the car must have (at least) at the goal");
    v("goal_position", goal_position_, "position of the goal");
    v("power", power_, "acceleration per unit of action");
  }
};

/// Prints `MountainCarContinuousEnvOptions(batch_size=[], device=cpu, ...)`.
std::ostream& operator<<(std::ostream& os, const MountainCarContinuousEnvOptions& options);

/// MountainCar-v0: discrete pushes.
///
/// - State `[*batch, 2]` float64: position in [-1.2, 0.6], velocity in [-0.07, 0.07].
/// - Observation "observation" `[*batch, 2]` float32, the state; Bounded [-1.2, -0.07] ..
///   [0.6, 0.07].
/// - Action "action" `[*batch]` int64, Categorical(3): 0 push left, 1 no push, 2 push right.
///   (TorchRL's GymEnv would give a one-hot action; indices are used here, as Gymnasium.)
/// - Dynamics: velocity += (action - 1) force + cos(3 position) (-gravity), clipped to
///   ±0.07; position += velocity, clipped to [-1.2, 0.6]; at the left wall a negative
///   velocity becomes 0.
/// - Reward `[*batch, 1]` float32: -1 per step.
/// - Terminated when position >= goal_position and velocity >= goal_velocity.
/// - Truncated at max_episode_steps (200).
/// - Initial state: position uniform in [-0.6, -0.4], velocity 0.
///
/// Throws ValueError from the constructor for a negative max_episode_steps. Errors of
/// reset/step: see EnvBase.
/// Example: `MountainCarEnv env(MountainCarEnvOptions().batch_size({8}));`
class MountainCarEnv : public ClassicControlEnv {
 public:
  explicit MountainCarEnv(const MountainCarEnvOptions& options = {});

  const MountainCarEnvOptions& options() const { return options_; }
  /// `MountainCar-v0(batch_size=[8], device=cpu, max_episode_steps=200, goal_velocity=0)`.
  std::string to_string() const override;

 protected:
  void advance(const torch::Tensor& action, float* reward, bool* terminated) override;
  void observe(const double* states, int64_t count, float* obs) const override;
  drawing::Drawing draw(const double* state) const override;

 private:
  MountainCarEnvOptions options_;
};

/// MountainCarContinuous-v0: a continuous force.
///
/// - State and observation as MountainCarEnv.
/// - Action "action" `[*batch, 1]` float32, Bounded [-1, 1].
/// - Dynamics: velocity += action power - 0.0025 cos(3 position), clipped to ±0.07;
///   position += velocity, clipped to [-1.2, 0.6]; at the left wall a negative velocity
///   becomes 0.
/// - Reward `[*batch, 1]` float32: -0.1 action^2 per step, +100 on reaching the goal.
/// - Terminated when position >= goal_position and velocity >= goal_velocity.
/// - Truncated at max_episode_steps (999).
/// - Initial state: position uniform in [-0.6, -0.4], velocity 0.
///
/// Throws ValueError from the constructor for a negative max_episode_steps. Errors of
/// reset/step: see EnvBase.
/// Example: `MountainCarContinuousEnv env(MountainCarContinuousEnvOptions().batch_size({8}));`
class MountainCarContinuousEnv : public ClassicControlEnv {
 public:
  explicit MountainCarContinuousEnv(const MountainCarContinuousEnvOptions& options = {});

  const MountainCarContinuousEnvOptions& options() const { return options_; }
  /// `MountainCarContinuous-v0(batch_size=[8], device=cpu, max_episode_steps=999,
  /// goal_velocity=0)`.
  std::string to_string() const override;

 protected:
  void advance(const torch::Tensor& action, float* reward, bool* terminated) override;
  void observe(const double* states, int64_t count, float* obs) const override;
  drawing::Drawing draw(const double* state) const override;

 private:
  MountainCarContinuousEnvOptions options_;
};

}  // namespace tdrl::envs
