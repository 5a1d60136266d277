#pragma once

/// The MuJoCo tasks: Gymnasium's v4 locomotion and control tasks on the project's own MJCF
/// models (envs/assets/), as MujocoEnv subclasses. Each follows the v4 definition:
/// observation layout, reward terms, healthy ranges, reset noise, frame skip and the time
/// limit (docs/envs.md has the table). Observations and rewards are float32; actions are the
/// actuators' controls, Bounded by their ctrlrange.
///
/// Every task takes MujocoEnvOptions (batch_size, num_threads, device, and overrides of
/// frame_skip, reset_noise_scale, max_episode_steps, terminate_when_unhealthy, model).
/// Throws as MujocoEnv's constructor, and ValueError when a replacement model does not have
/// the task's dimensions.
/// Example: `HalfCheetahEnv env(MujocoEnvOptions().batch_size({16}).num_threads(2));`

#include <tdrl/envs/mujoco_env.h>

namespace tdrl::envs {

/// InvertedPendulum-v4: keep a pole upright on a cart. Observation [4]: qpos (cart x, pole
/// angle), qvel. Action [1] in [-3, 3]. Reward 1 per step. Terminated when the observation
/// is not finite or |angle| > 0.2. Reset noise U(±0.01) on qpos and qvel; frame skip 2;
/// time limit 1000.
class InvertedPendulumEnv : public MujocoEnv {
 public:
  explicit InvertedPendulumEnv(const MujocoEnvOptions& options = {});

 protected:
  MujocoStepOutcome after_step(const MujocoView& sim, const float* action,
                               const MujocoMemo& memo) const override;
};

/// InvertedDoublePendulum-v4: balance two poles on a cart. Observation [11]: cart x,
/// sin and cos of the two hinge angles, qvel clipped to ±10, qfrc_constraint clipped to ±10.
/// Action [1] in [-1, 1]. Reward 10 - (0.01 x² + (y - 2)²) - (1e-3 v1² + 5e-3 v2²) with
/// (x, y) the tip site and v1, v2 the hinge velocities. Terminated when y <= 1. Reset noise
/// U(±0.1) on qpos, N(0, 0.1²) on qvel; frame skip 5; time limit 1000.
class InvertedDoublePendulumEnv : public MujocoEnv {
 public:
  explicit InvertedDoublePendulumEnv(const MujocoEnvOptions& options = {});

 protected:
  void write_observation(const MujocoView& sim, float* out) const override;
  MujocoStepOutcome after_step(const MujocoView& sim, const float* action,
                               const MujocoMemo& memo) const override;
  void sample_reset_state(torch::Generator& generator, torch::Tensor& qpos,
                          torch::Tensor& qvel) const override;

 private:
  int64_t tip_site_;
};

/// Reacher-v4: move a two-link arm's fingertip to a random target. Observation [11]: cos and
/// sin of the two joint angles, target (x, y), the two joint velocities, fingertip - target
/// (x, y, z). Action [2] in [-1, 1]. Reward -|fingertip - target| - |action|², measured
/// before the step. Never terminated. Reset: arm qpos U(±0.1), target uniform in the disc of
/// radius 0.2 (rejection sampling in [-0.2, 0.2]²), arm qvel U(±0.005), target qvel 0
/// (reset_noise_scale is the arm's qpos noise); frame skip 2; time limit 50.
class ReacherEnv : public MujocoEnv {
 public:
  explicit ReacherEnv(const MujocoEnvOptions& options = {});

 protected:
  void write_observation(const MujocoView& sim, float* out) const override;
  void before_step(const MujocoView& sim, const float* action, MujocoMemo& memo) const override;
  MujocoStepOutcome after_step(const MujocoView& sim, const float* action,
                               const MujocoMemo& memo) const override;
  void sample_reset_state(torch::Generator& generator, torch::Tensor& qpos,
                          torch::Tensor& qvel) const override;

 private:
  int64_t fingertip_;
  int64_t target_;
};

/// The weights of a LocomotionEnv's reward (Gymnasium's v4 argument names).
struct LocomotionReward {
  /// The factor of the forward velocity Δx / dt.
  double forward_reward_weight = 1.0;
  /// Paid each step while healthy, and every step when terminate_when_unhealthy is set.
  double healthy_reward = 0.0;
  /// The factor of the action's squared norm |a|².
  double ctrl_cost_weight = 0.0;
};

/// The base of the tasks that reward moving forward (HalfCheetah, Hopper, Walker2d, Ant,
/// Humanoid), as Gymnasium's v4 locomotion tasks define it:
/// `reward = forward_reward_weight Δx / dt + healthy_reward - ctrl_cost_weight |a|²`, with x
/// the forward_position() before and after the step and the healthy reward paid while
/// is_healthy() (every step when `terminate_when_unhealthy`); terminated when
/// `terminate_when_unhealthy` and not healthy.
///
/// Extending: a locomotion task passes its MujocoTaskConfig and weights to the constructor,
/// overrides write_observation (and sample_reset_state when its reset noise is not the
/// default), and overrides forward_position and is_healthy where the defaults (the root's x,
/// always healthy) do not fit. The hooks run on the pool's threads, as MujocoEnv's.
/// Throws (constructor) ValueError naming the weight when one of the three is not finite, and
/// what MujocoEnv's constructor throws.
/// Example: `class SwimmerEnv : public LocomotionEnv { ... };` with
/// `LocomotionReward{1.0, 0.0, 1e-4}`.
class LocomotionEnv : public MujocoEnv {
 public:
  /// The reward's weights.
  const LocomotionReward& reward_weights() const { return reward_; }

 protected:
  LocomotionEnv(std::string name, const MujocoEnvOptions& options, const MujocoTaskConfig& config,
                LocomotionReward reward);

  /// The position whose change over a step, divided by dt(), is the forward velocity.
  /// Default: qpos[0], the root's x.
  virtual double forward_position(const MujocoView& sim) const { return sim.qpos()[0]; }
  /// Whether the state after a step is healthy. Default: always.
  virtual bool is_healthy(const MujocoView& sim) const { return true; }

  /// Saves forward_position() before the step.
  void before_step(const MujocoView& sim, const float* action, MujocoMemo& memo) const override;
  /// The reward and termination above.
  MujocoStepOutcome after_step(const MujocoView& sim, const float* action,
                               const MujocoMemo& memo) const override;

 private:
  LocomotionReward reward_;
};

/// HalfCheetah-v4: run forward in the plane. Observation [17]: qpos without the root x (8),
/// qvel (9). Action [6] in [-1, 1]. Reward forward velocity (Δx / dt) - 0.1 |action|².
/// Never terminated. Reset noise U(±0.1) on qpos, N(0, 0.1²) on qvel; frame skip 5;
/// time limit 1000.
class HalfCheetahEnv : public LocomotionEnv {
 public:
  explicit HalfCheetahEnv(const MujocoEnvOptions& options = {});

 protected:
  void write_observation(const MujocoView& sim, float* out) const override;
  void sample_reset_state(torch::Generator& generator, torch::Tensor& qpos,
                          torch::Tensor& qvel) const override;
};

/// Hopper-v4: hop forward on one leg. Observation [11]: qpos without the root x (5), qvel
/// clipped to ±10 (6). Action [3] in [-1, 1]. Reward 1 (healthy) + Δx / dt - 1e-3 |action|².
/// Healthy: torso height qpos[1] > 0.7, |torso angle qpos[2]| < 0.2 and every qpos[2:], qvel
/// in (-100, 100); terminated when unhealthy. Reset noise U(±5e-3) on qpos and qvel;
/// frame skip 4; time limit 1000.
class HopperEnv : public LocomotionEnv {
 public:
  explicit HopperEnv(const MujocoEnvOptions& options = {});

 protected:
  void write_observation(const MujocoView& sim, float* out) const override;
  bool is_healthy(const MujocoView& sim) const override;
};

/// Walker2d-v4: walk forward on two legs in the plane. Observation [17]: qpos without the
/// root x (8), qvel clipped to ±10 (9). Action [6] in [-1, 1]. Reward 1 (healthy) + Δx / dt
/// - 1e-3 |action|². Healthy: 0.8 < torso height < 2 and |torso angle| < 1; terminated when
/// unhealthy. Reset noise U(±5e-3) on qpos and qvel; frame skip 4; time limit 1000.
class Walker2dEnv : public LocomotionEnv {
 public:
  explicit Walker2dEnv(const MujocoEnvOptions& options = {});

 protected:
  void write_observation(const MujocoView& sim, float* out) const override;
  bool is_healthy(const MujocoView& sim) const override;
};

/// Ant-v4 (without contact forces in the observation, its default): walk forward on four
/// legs. Observation [27]: qpos without the root x, y (13), qvel (14). Action [8] in [-1, 1].
/// Reward 1 (healthy) + torso Δx / dt - 0.5 |action|². Healthy: the state is finite and
/// 0.2 <= torso z <= 1; terminated when unhealthy. Reset noise U(±0.1) on qpos, N(0, 0.1²)
/// on qvel; frame skip 5; time limit 1000.
class AntEnv : public LocomotionEnv {
 public:
  explicit AntEnv(const MujocoEnvOptions& options = {});

 protected:
  void write_observation(const MujocoView& sim, float* out) const override;
  double forward_position(const MujocoView& sim) const override;
  bool is_healthy(const MujocoView& sim) const override;
  void sample_reset_state(torch::Generator& generator, torch::Tensor& qpos,
                          torch::Tensor& qvel) const override;

 private:
  int64_t torso_;
};

/// Humanoid-v4: walk forward on two legs in 3D. Observation [376]: qpos without the root x, y
/// (22), qvel (23), cinert (14 x 10), cvel (14 x 6), qfrc_actuator (23), cfrc_ext (14 x 6).
/// Action [17] in [-0.4, 0.4]. Reward 5 (healthy) + 1.25 Δ(centre of mass x) / dt
/// - 0.1 |action|² (no contact cost, as in v4). Healthy: 1 < torso z < 2; terminated when
/// unhealthy. Reset noise U(±0.01) on qpos and qvel; frame skip 5; time limit 1000.
class HumanoidEnv : public LocomotionEnv {
 public:
  explicit HumanoidEnv(const MujocoEnvOptions& options = {});

 protected:
  void write_observation(const MujocoView& sim, float* out) const override;
  double forward_position(const MujocoView& sim) const override;
  bool is_healthy(const MujocoView& sim) const override;
};

}  // namespace tdrl::envs
