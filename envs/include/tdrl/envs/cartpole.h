#pragma once

/// CartPole-v1 (Gymnasium's classic-control task, Barto, Sutton and Anderson 1983).

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/classic_control_env.h>

namespace tdrl::envs {

/// Options of CartPoleEnv. The physical constants are Gymnasium's.
/// Example: `CartPoleEnvOptions().batch_size({1024}).max_episode_steps(200)`
struct CartPoleEnvOptions : ClassicControlEnvOptions<CartPoleEnvOptions> {
  /// batch_size, device and max_episode_steps: see ClassicControlEnvOptions; the time
  /// limit defaults to 500 steps (CartPole-v1).
  CartPoleEnvOptions() : ClassicControlEnvOptions(500, 600, 400) {}
  /// Gymnasium's `sutton_barto_reward`: reward 0 per step and -1 on termination instead of
  /// 1 per step. Default false.
  TORCH_ARG(bool, sutton_barto_reward) = false;
  /// Gravity, m/s^2. Default 9.8.
  TORCH_ARG(double, gravity) = 9.8;
  /// Mass of the cart, kg. Default 1.0.
  TORCH_ARG(double, masscart) = 1.0;
  /// Mass of the pole, kg. Default 0.1.
  TORCH_ARG(double, masspole) = 0.1;
  /// Half the pole's length, m. Default 0.5.
  TORCH_ARG(double, length) = 0.5;
  /// Magnitude of the push, N. Default 10.0.
  TORCH_ARG(double, force_mag) = 10.0;
  /// Seconds per step (explicit Euler). Default 0.02.
  TORCH_ARG(double, tau) = 0.02;
  /// |theta| beyond which the episode terminates, rad. Default 12 degrees.
  TORCH_ARG(double, theta_threshold_radians) = 12.0 * 2.0 * 3.14159265358979323846 / 360.0;
  /// |x| beyond which the episode terminates, m. Default 2.4.
  TORCH_ARG(double, x_threshold) = 2.4;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    ClassicControlEnvOptions::fields(v);
    v("sutton_barto_reward", sutton_barto_reward_,
      "reward 0 per step and -1 on termination instead of 1 per step");
    v("gravity", gravity_, "gravity, m/s^2");
    v("masscart", masscart_, "mass of the cart, kg");
    v("masspole", masspole_, "mass of the pole, kg");
    v("length", length_, "half the pole's length, m");
    v("force_mag", force_mag_, "magnitude of the push, N");
    v("tau", tau_, "seconds per step (explicit Euler)");
    v("theta_threshold_radians", theta_threshold_radians_,
      "|theta| beyond which the episode terminates, rad");
    v("x_threshold", x_threshold_, "|x| beyond which the episode terminates, m");
  }
};

/// Prints `CartPoleEnvOptions(batch_size=[], device=cpu, max_episode_steps=500, ...)` with
/// every field.
std::ostream& operator<<(std::ostream& os, const CartPoleEnvOptions& options);

/// CartPole-v1: a pole hinged on a cart moving along a frictionless track; push the cart
/// left or right to keep the pole upright.
///
/// - State `[*batch, 4]` float64 (set_state/state): x, x_dot, theta, theta_dot.
/// - Observation "observation" `[*batch, 4]` float32, the state (Unbounded: Gymnasium's
///   bounds are ±inf on the velocities).
/// - Action "action" `[*batch]` int64, Categorical(2): 0 pushes left (-force_mag), 1 right.
///   (TorchRL's GymEnv would give a one-hot action; indices are used here, as Gymnasium.)
/// - Dynamics: Gymnasium's equations with explicit Euler (x += tau * x_dot, then x_dot +=
///   tau * x_acc, theta likewise).
/// - Reward `[*batch, 1]` float32 (Gymnasium's): 1 per step, including the terminating one;
///   0 for a step that ends in a terminal state again after termination without a reset.
///   With sutton_barto_reward: 0 per non-terminal step, -1 per terminal one.
/// - Terminated when |x| > x_threshold or |theta| > theta_threshold_radians (strictly).
/// - Truncated at max_episode_steps (500).
/// - Initial state: each component uniform in [-0.05, 0.05].
///
/// Throws ValueError from the constructor for a negative max_episode_steps or non-positive
/// masses, length or tau. Errors of reset/step: see EnvBase.
/// Example:
/// ```
/// CartPoleEnv env(CartPoleEnvOptions().batch_size({8}));
/// env.set_seed(0);
/// TensorDict rollout = env.rollout(100);  // batch [8, T]
/// ```
class CartPoleEnv : public ClassicControlEnv {
 public:
  explicit CartPoleEnv(const CartPoleEnvOptions& options = {});

  const CartPoleEnvOptions& options() const { return options_; }
  /// `CartPole-v1(batch_size=[8], device=cpu, max_episode_steps=500, sutton_barto_reward=false)`.
  std::string to_string() const override;

 protected:
  void advance(const torch::Tensor& action, float* reward, bool* terminated) override;
  void observe(const double* states, int64_t count, float* obs) const override;
  drawing::Drawing draw(const double* state) const override;

 private:
  CartPoleEnvOptions options_;
};

}  // namespace tdrl::envs
