#pragma once

/// Pendulum-v1 (Gymnasium's classic-control task): swing a pendulum up and hold it.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/classic_control_env.h>

namespace tdrl::envs {

/// Options of PendulumEnv. The constants are Gymnasium's.
/// Example: `PendulumEnvOptions().batch_size({16}).g(9.81)`
struct PendulumEnvOptions : ClassicControlEnvOptions<PendulumEnvOptions> {
  /// batch_size, device and max_episode_steps: see ClassicControlEnvOptions; the time
  /// limit defaults to 200 steps (Pendulum-v1).
  PendulumEnvOptions() : ClassicControlEnvOptions(200, 500, 500) {}
  /// Gravity, m/s^2 (Gymnasium's `g` argument). Default 10.0.
  TORCH_ARG(double, g) = 10.0;
  /// Mass, kg. Default 1.0.
  TORCH_ARG(double, m) = 1.0;
  /// Length, m. Default 1.0.
  TORCH_ARG(double, l) = 1.0;
  /// Seconds per step. Default 0.05.
  TORCH_ARG(double, dt) = 0.05;
  /// Bound of the angular velocity, rad/s. Default 8.0.
  TORCH_ARG(double, max_speed) = 8.0;
  /// Bound of the torque (the action spec's bounds), N m. Default 2.0.
  TORCH_ARG(double, max_torque) = 2.0;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    ClassicControlEnvOptions::fields(v);
    v("g", g_, "gravity, m/s^2");
    v("m", m_, "mass, kg");
    v("l", l_, "length, m");
    v("dt", dt_, "seconds per step");
    v("max_speed", max_speed_, "bound of the angular velocity, rad/s");
    v("max_torque", max_torque_, "bound of the torque (the action's bounds), N m");
  }
};

/// Prints `PendulumEnvOptions(batch_size=[], device=cpu, max_episode_steps=200, g=10, ...)`.
std::ostream& operator<<(std::ostream& os, const PendulumEnvOptions& options);

/// Pendulum-v1: a pendulum under gravity with a torque at its pivot.
///
/// - State `[*batch, 2]` float64: theta (rad, 0 = upright, not wrapped), theta_dot (within
///   ±max_speed).
/// - Observation "observation" `[*batch, 3]` float32: cos(theta), sin(theta), theta_dot;
///   Bounded [-1, -1, -max_speed] .. [1, 1, max_speed].
/// - Action "action" `[*batch, 1]` float32, Bounded [-max_torque, max_torque].
/// - Dynamics: theta_dot += (3 g / (2 l) sin(theta) + 3 / (m l^2) u) dt, clipped to
///   ±max_speed; theta += theta_dot dt (semi-implicit Euler).
/// - Reward `[*batch, 1]` float32: -(normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2), with
///   the state before the step and normalize(theta) in [-pi, pi).
/// - Never terminates; truncated at max_episode_steps (200).
/// - Initial state: theta uniform in [-pi, pi], theta_dot uniform in [-1, 1].
///
/// Throws ValueError from the constructor for a negative max_episode_steps or non-positive
/// m, l, dt, max_speed or max_torque. Errors of reset/step: see EnvBase.
/// Example:
/// ```
/// PendulumEnv env(PendulumEnvOptions().batch_size({4}));
/// TensorDict td = env.reset();
/// td.set("action", torch::zeros({4, 1}));
/// env.step(td);  // td["next", "reward"] is [4, 1]
/// ```
class PendulumEnv : public ClassicControlEnv {
 public:
  explicit PendulumEnv(const PendulumEnvOptions& options = {});

  const PendulumEnvOptions& options() const { return options_; }
  /// `Pendulum-v1(batch_size=[4], device=cpu, max_episode_steps=200, g=10)`.
  std::string to_string() const override;

 protected:
  void advance(const torch::Tensor& action, float* reward, bool* terminated) override;
  void observe(const double* states, int64_t count, float* obs) const override;
  drawing::Drawing draw(const double* state) const override;

 private:
  PendulumEnvOptions options_;
};

}  // namespace tdrl::envs
