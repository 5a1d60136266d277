#pragma once

/// Acrobot-v1 (Gymnasium's classic-control task, Sutton 1996; Sutton and Barto's book
/// dynamics): swing the tip of a two-link chain above a line, actuating only the middle joint.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/classic_control_env.h>

namespace tdrl::envs {

/// Options of AcrobotEnv. The link constants are Gymnasium's and fixed (see AcrobotEnv).
/// Example: `AcrobotEnvOptions().batch_size({16}).torque_noise_max(0.1)`
struct AcrobotEnvOptions : ClassicControlEnvOptions<AcrobotEnvOptions> {
  /// batch_size, device and max_episode_steps: see ClassicControlEnvOptions; the time
  /// limit defaults to 500 steps (Acrobot-v1).
  AcrobotEnvOptions() : ClassicControlEnvOptions(500, 500, 500) {}
  /// Uniform noise in [-torque_noise_max, torque_noise_max] added to the torque each step
  /// (drawn from generator()). Default 0 (none).
  TORCH_ARG(double, torque_noise_max) = 0.0;
  /// "book" (Sutton and Barto's equations, Gymnasium's default) or "nips" (the NIPS 1995
  /// paper's, without the theta1_dot^2 term in theta2's acceleration). Default "book".
  TORCH_ARG(std::string, book_or_nips) = "book";

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    namespace tf = tensordict::fields;
    ClassicControlEnvOptions::fields(v);
    v("torque_noise_max", torque_noise_max_, tf::at_least(0),
      "uniform noise in [-torque_noise_max, torque_noise_max] added to the torque");
    v("book_or_nips", book_or_nips_, tf::one_of({"book", "nips"}),
      "the dynamics: Sutton and Barto's book, or the NIPS 1995 paper's");
  }
};

/// Prints `AcrobotEnvOptions(batch_size=[], device=cpu, max_episode_steps=500, ...)`.
std::ostream& operator<<(std::ostream& os, const AcrobotEnvOptions& options);

/// Acrobot-v1.
///
/// - State `[*batch, 4]` float64: theta1 (the first link against the downward vertical),
///   theta2 (the second link against the first), both wrapped into [-pi, pi] after a step;
///   theta1_dot in [-4 pi, 4 pi], theta2_dot in [-9 pi, 9 pi].
/// - Observation "observation" `[*batch, 6]` float32: cos(theta1), sin(theta1), cos(theta2),
///   sin(theta2), theta1_dot, theta2_dot; Bounded by [1, 1, 1, 1, 4 pi, 9 pi] and its negation.
/// - Action "action" `[*batch]` int64, Categorical(3): torque -1, 0, +1 on the middle joint.
///   (TorchRL's GymEnv would give a one-hot action; indices are used here, as Gymnasium.)
/// - Dynamics: link lengths 1, masses 1, centres of mass 0.5, moments of inertia 1,
///   g = 9.8; one classical Runge-Kutta 4 step of dt = 0.2 s; angles wrapped, velocities
///   clipped.
/// - Reward `[*batch, 1]` float32: -1 per step, 0 on the terminating step.
/// - Terminated when -cos(theta1) - cos(theta1 + theta2) > 1 (the tip above the bar's
///   height above the pivot).
/// - Truncated at max_episode_steps (500).
/// - Initial state: each component uniform in [-0.1, 0.1].
///
/// Throws ValueError from the constructor for a negative max_episode_steps, a negative
/// torque_noise_max or a book_or_nips other than "book" or "nips". Errors of reset/step: see
/// EnvBase.
/// Example: `AcrobotEnv env(AcrobotEnvOptions().batch_size({8}));`
class AcrobotEnv : public ClassicControlEnv {
 public:
  explicit AcrobotEnv(const AcrobotEnvOptions& options = {});

  const AcrobotEnvOptions& options() const { return options_; }
  /// `Acrobot-v1(batch_size=[8], device=cpu, max_episode_steps=500, torque_noise_max=0,
  /// book_or_nips=book)`.
  std::string to_string() const override;

  static constexpr double kDt = 0.2;
  static constexpr double kLinkLength1 = 1.0;
  /// The second link's length: only drawn (the dynamics use the centres of mass).
  static constexpr double kLinkLength2 = 1.0;
  static constexpr double kLinkMass1 = 1.0;
  static constexpr double kLinkMass2 = 1.0;
  static constexpr double kLinkComPos1 = 0.5;
  static constexpr double kLinkComPos2 = 0.5;
  static constexpr double kLinkMoi = 1.0;
  static constexpr double kGravity = 9.8;
  static constexpr double kMaxVel1 = 4 * 3.14159265358979323846;
  static constexpr double kMaxVel2 = 9 * 3.14159265358979323846;

 protected:
  void advance(const torch::Tensor& action, float* reward, bool* terminated) override;
  void observe(const double* states, int64_t count, float* obs) const override;
  drawing::Drawing draw(const double* state) const override;

 private:
  AcrobotEnvOptions options_;
  bool book_;
};

}  // namespace tdrl::envs
