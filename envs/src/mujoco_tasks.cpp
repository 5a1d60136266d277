// The MuJoCo tasks: Gymnasium's v4 definitions (observation layout, reward terms, healthy
// ranges, reset noise, frame skip, time limit) over the models in envs/assets/.

#include <tdrl/envs/mujoco_tasks.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <tensordict/errors.h>

namespace tdrl::envs {
namespace {

// `velocities`: the observation components [first, first + count) that are velocities (several
// ranges for a task that observes velocities in more than one place).
MujocoTaskConfig task_config(const char* model_file, int64_t observation_dim, int64_t frame_skip,
                             double reset_noise_scale, int64_t max_episode_steps,
                             std::vector<std::pair<int64_t, int64_t>> velocities,
                             bool post_constraint = false) {
  MujocoTaskConfig config;
  for (const auto& [first, count] : velocities)
    for (int64_t i = 0; i < count; ++i) config.velocity_obs.push_back(first + i);
  config.model_file = model_file;
  config.observation_dim = observation_dim;
  config.frame_skip = frame_skip;
  config.reset_noise_scale = reset_noise_scale;
  config.max_episode_steps = max_episode_steps;
  config.post_constraint = post_constraint;
  return config;
}

double squared_norm(const float* action, int n) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(action[i]) * action[i];
  return sum;
}

void copy_to(const double* from, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = static_cast<float>(from[i]);
}

void copy_clipped(const double* from, int n, double bound, float* out) {
  for (int i = 0; i < n; ++i) out[i] = static_cast<float>(std::clamp(from[i], -bound, bound));
}

// HalfCheetah and Ant: qpos noise uniform, qvel noise normal with the same scale.
void uniform_qpos_normal_qvel(torch::Generator& generator, double scale, torch::Tensor& qpos,
                              torch::Tensor& qvel) {
  if (scale <= 0.0) return;
  qpos.add_(torch::empty_like(qpos).uniform_(-scale, scale, generator));
  qvel.add_(torch::randn(qvel.sizes(), generator, qvel.options()).mul_(scale));
}

// The planar walkers' observation: qpos without the root x, qvel clipped to ±10.
void planar_walker_observation(const MujocoView& sim, float* out) {
  copy_to(sim.qpos() + 1, sim.nq() - 1, out);
  copy_clipped(sim.qvel(), sim.nv(), 10.0, out + sim.nq() - 1);
}

}  // namespace

// ---- InvertedPendulum ---------------------------------------------------------------------------

InvertedPendulumEnv::InvertedPendulumEnv(const MujocoEnvOptions& options)
    : MujocoEnv("InvertedPendulum-v4", options,
                task_config("InvertedPendulum.xml", 4, 2, 0.01, 1000, {{2, 2}})) {
  check_model_dims(2, 2, 1);
}

MujocoStepOutcome InvertedPendulumEnv::after_step(const MujocoView& sim, const float* action,
                                                  const MujocoMemo& memo) const {
  return {1.0, std::abs(sim.qpos()[1]) > 0.2};
}

// ---- InvertedDoublePendulum ---------------------------------------------------------------------

InvertedDoublePendulumEnv::InvertedDoublePendulumEnv(const MujocoEnvOptions& options)
    : MujocoEnv("InvertedDoublePendulum-v4", options,
                task_config("InvertedDoublePendulum.xml", 11, 5, 0.1, 1000, {{5, 3}})) {
  check_model_dims(3, 3, 1);
  tip_site_ = site_id("tip");
}

void InvertedDoublePendulumEnv::write_observation(const MujocoView& sim, float* out) const {
  const double* qpos = sim.qpos();
  out[0] = static_cast<float>(qpos[0]);
  out[1] = static_cast<float>(std::sin(qpos[1]));
  out[2] = static_cast<float>(std::sin(qpos[2]));
  out[3] = static_cast<float>(std::cos(qpos[1]));
  out[4] = static_cast<float>(std::cos(qpos[2]));
  copy_clipped(sim.qvel(), 3, 10.0, out + 5);
  copy_clipped(sim.qfrc_constraint(), 3, 10.0, out + 8);
}

MujocoStepOutcome InvertedDoublePendulumEnv::after_step(const MujocoView& sim, const float* action,
                                                        const MujocoMemo& memo) const {
  const double* tip = sim.site_xpos() + 3 * tip_site_;
  const double x = tip[0];
  const double y = tip[2];
  const double v1 = sim.qvel()[1];
  const double v2 = sim.qvel()[2];
  const double dist_penalty = 0.01 * x * x + (y - 2.0) * (y - 2.0);
  const double vel_penalty = 1e-3 * v1 * v1 + 5e-3 * v2 * v2;
  return {10.0 - dist_penalty - vel_penalty, y <= 1.0};
}

void InvertedDoublePendulumEnv::sample_reset_state(torch::Generator& generator, torch::Tensor& qpos,
                                                   torch::Tensor& qvel) const {
  uniform_qpos_normal_qvel(generator, reset_noise_scale(), qpos, qvel);
}

// ---- Reacher ------------------------------------------------------------------------------------

ReacherEnv::ReacherEnv(const MujocoEnvOptions& options)
    : MujocoEnv("Reacher-v4", options, task_config("Reacher.xml", 11, 2, 0.1, 50, {{6, 2}})) {
  check_model_dims(4, 4, 2);
  fingertip_ = body_id("fingertip");
  target_ = body_id("target");
}

void ReacherEnv::write_observation(const MujocoView& sim, float* out) const {
  const double* qpos = sim.qpos();
  out[0] = static_cast<float>(std::cos(qpos[0]));
  out[1] = static_cast<float>(std::cos(qpos[1]));
  out[2] = static_cast<float>(std::sin(qpos[0]));
  out[3] = static_cast<float>(std::sin(qpos[1]));
  copy_to(qpos + 2, 2, out + 4);
  copy_to(sim.qvel(), 2, out + 6);
  const double* tip = sim.xpos() + 3 * fingertip_;
  const double* target = sim.xpos() + 3 * target_;
  for (int i = 0; i < 3; ++i) out[8 + i] = static_cast<float>(tip[i] - target[i]);
}

// Reacher-v4 rewards the state before the step: the distance is measured here.
void ReacherEnv::before_step(const MujocoView& sim, const float* action, MujocoMemo& memo) const {
  const double* tip = sim.xpos() + 3 * fingertip_;
  const double* target = sim.xpos() + 3 * target_;
  double distance2 = 0.0;
  for (int i = 0; i < 3; ++i) distance2 += (tip[i] - target[i]) * (tip[i] - target[i]);
  memo[0] = -std::sqrt(distance2) - squared_norm(action, sim.nu());
}

MujocoStepOutcome ReacherEnv::after_step(const MujocoView& sim, const float* action,
                                         const MujocoMemo& memo) const {
  return {memo[0], false};
}

void ReacherEnv::sample_reset_state(torch::Generator& generator, torch::Tensor& qpos,
                                    torch::Tensor& qvel) const {
  const double scale = reset_noise_scale();
  const auto options = qpos.options();
  // One simulation after the other, in Gymnasium's order: qpos noise, goal, qvel noise.
  for (int64_t j = 0; j < qpos.size(0); ++j) {
    auto row = qpos[j];
    if (scale > 0.0) row.add_(torch::empty({4}, options).uniform_(-scale, scale, generator));
    torch::Tensor goal;
    do {
      goal = torch::empty({2}, options).uniform_(-0.2, 0.2, generator);
    } while (goal.norm().item<double>() >= 0.2);
    row.slice(0, 2, 4).copy_(goal);
    auto vel = qvel[j];
    vel.copy_(torch::empty({4}, options).uniform_(-0.005, 0.005, generator));
    vel.slice(0, 2, 4).zero_();
  }
}

// ---- LocomotionEnv ------------------------------------------------------------------------------

LocomotionEnv::LocomotionEnv(std::string name, const MujocoEnvOptions& options,
                             const MujocoTaskConfig& config, LocomotionReward reward)
    : MujocoEnv(std::move(name), options, config), reward_(reward) {
  // A non-finite weight would make every reward non-finite, which the env reports as
  // instabilities rather than as the configuration error it is.
  for (const auto& [field, value] :
       {std::pair<const char*, double>{"forward_reward_weight", reward.forward_reward_weight},
        {"healthy_reward", reward.healthy_reward},
        {"ctrl_cost_weight", reward.ctrl_cost_weight}}) {
    TDRL_CHECK(std::isfinite(value), tensordict::ValueError, this->name(),
               ": LocomotionReward::", field, " is ", std::to_string(value), "; it must be finite");
  }
}

void LocomotionEnv::before_step(const MujocoView& sim, const float* action,
                                MujocoMemo& memo) const {
  memo[0] = forward_position(sim);
}

MujocoStepOutcome LocomotionEnv::after_step(const MujocoView& sim, const float* action,
                                            const MujocoMemo& memo) const {
  const bool healthy = is_healthy(sim);
  const bool terminate = options().terminate_when_unhealthy();
  const double forward_reward =
      reward_.forward_reward_weight * (forward_position(sim) - memo[0]) / dt();
  const double healthy_reward = (healthy || terminate) ? reward_.healthy_reward : 0.0;
  const double ctrl_cost = reward_.ctrl_cost_weight * squared_norm(action, sim.nu());
  return {forward_reward + healthy_reward - ctrl_cost, terminate && !healthy};
}

// ---- HalfCheetah --------------------------------------------------------------------------------

HalfCheetahEnv::HalfCheetahEnv(const MujocoEnvOptions& options)
    : LocomotionEnv("HalfCheetah-v4", options,
                    task_config("HalfCheetah.xml", 17, 5, 0.1, 1000, {{8, 9}}),
                    {/*forward_reward_weight=*/1.0, /*healthy_reward=*/0.0,
                     /*ctrl_cost_weight=*/0.1}) {
  check_model_dims(9, 9, 6);
}

void HalfCheetahEnv::write_observation(const MujocoView& sim, float* out) const {
  copy_to(sim.qpos() + 1, sim.nq() - 1, out);
  copy_to(sim.qvel(), sim.nv(), out + sim.nq() - 1);
}

void HalfCheetahEnv::sample_reset_state(torch::Generator& generator, torch::Tensor& qpos,
                                        torch::Tensor& qvel) const {
  uniform_qpos_normal_qvel(generator, reset_noise_scale(), qpos, qvel);
}

// ---- Hopper -------------------------------------------------------------------------------------

HopperEnv::HopperEnv(const MujocoEnvOptions& options)
    : LocomotionEnv("Hopper-v4", options, task_config("Hopper.xml", 11, 4, 5e-3, 1000, {{5, 6}}),
                    {/*forward_reward_weight=*/1.0, /*healthy_reward=*/1.0,
                     /*ctrl_cost_weight=*/1e-3}) {
  check_model_dims(6, 6, 3);
}

void HopperEnv::write_observation(const MujocoView& sim, float* out) const {
  planar_walker_observation(sim, out);
}

bool HopperEnv::is_healthy(const MujocoView& sim) const {
  const double* qpos = sim.qpos();
  const double z = qpos[1];
  const double angle = qpos[2];
  bool healthy = z > 0.7 && angle > -0.2 && angle < 0.2;
  for (int i = 2; i < sim.nq() && healthy; ++i) healthy = std::abs(qpos[i]) < 100.0;
  for (int i = 0; i < sim.nv() && healthy; ++i) healthy = std::abs(sim.qvel()[i]) < 100.0;
  return healthy;
}

// ---- Walker2d -----------------------------------------------------------------------------------

Walker2dEnv::Walker2dEnv(const MujocoEnvOptions& options)
    : LocomotionEnv("Walker2d-v4", options,
                    task_config("Walker2d.xml", 17, 4, 5e-3, 1000, {{8, 9}}),
                    {/*forward_reward_weight=*/1.0, /*healthy_reward=*/1.0,
                     /*ctrl_cost_weight=*/1e-3}) {
  check_model_dims(9, 9, 6);
}

void Walker2dEnv::write_observation(const MujocoView& sim, float* out) const {
  planar_walker_observation(sim, out);
}

bool Walker2dEnv::is_healthy(const MujocoView& sim) const {
  const double z = sim.qpos()[1];
  const double angle = sim.qpos()[2];
  return z > 0.8 && z < 2.0 && angle > -1.0 && angle < 1.0;
}

// ---- Ant ----------------------------------------------------------------------------------------

AntEnv::AntEnv(const MujocoEnvOptions& options)
    : LocomotionEnv("Ant-v4", options, task_config("Ant.xml", 27, 5, 0.1, 1000, {{13, 14}}),
                    {/*forward_reward_weight=*/1.0, /*healthy_reward=*/1.0,
                     /*ctrl_cost_weight=*/0.5}) {
  check_model_dims(15, 14, 8);
  torso_ = body_id("torso");
}

void AntEnv::write_observation(const MujocoView& sim, float* out) const {
  copy_to(sim.qpos() + 2, sim.nq() - 2, out);
  copy_to(sim.qvel(), sim.nv(), out + sim.nq() - 2);
}

double AntEnv::forward_position(const MujocoView& sim) const { return sim.xpos()[3 * torso_]; }

bool AntEnv::is_healthy(const MujocoView& sim) const {
  const double z = sim.qpos()[2];
  bool healthy = z >= 0.2 && z <= 1.0;
  for (int i = 0; i < sim.nq() && healthy; ++i) healthy = std::isfinite(sim.qpos()[i]);
  for (int i = 0; i < sim.nv() && healthy; ++i) healthy = std::isfinite(sim.qvel()[i]);
  return healthy;
}

void AntEnv::sample_reset_state(torch::Generator& generator, torch::Tensor& qpos,
                                torch::Tensor& qvel) const {
  uniform_qpos_normal_qvel(generator, reset_noise_scale(), qpos, qvel);
}

// ---- Humanoid -----------------------------------------------------------------------------------

namespace {

double mass_center_x(const MujocoView& sim) {
  const double* mass = sim.body_mass();
  const double* xipos = sim.xipos();
  double total = 0.0;
  double weighted = 0.0;
  for (int b = 0; b < sim.nbody(); ++b) {
    total += mass[b];
    weighted += mass[b] * xipos[3 * b];
  }
  return weighted / total;
}

}  // namespace

HumanoidEnv::HumanoidEnv(const MujocoEnvOptions& options)
    : LocomotionEnv("Humanoid-v4", options,
                    // Velocities: qvel after qpos[2:], and the bodies' cvel after their cinert.
                    task_config("Humanoid.xml", 22 + 23 + 14 * 10 + 14 * 6 + 23 + 14 * 6, 5, 1e-2,
                                1000, {{22, 23}, {22 + 23 + 14 * 10, 14 * 6}},
                                /*post_constraint=*/true),
                    {/*forward_reward_weight=*/1.25, /*healthy_reward=*/5.0,
                     /*ctrl_cost_weight=*/0.1}) {
  check_model_dims(24, 23, 17, 14);
}

void HumanoidEnv::write_observation(const MujocoView& sim, float* out) const {
  const int nbody = sim.nbody();
  copy_to(sim.qpos() + 2, sim.nq() - 2, out);
  out += sim.nq() - 2;
  copy_to(sim.qvel(), sim.nv(), out);
  out += sim.nv();
  copy_to(sim.cinert(), 10 * nbody, out);
  out += 10 * nbody;
  copy_to(sim.cvel(), 6 * nbody, out);
  out += 6 * nbody;
  copy_to(sim.qfrc_actuator(), sim.nv(), out);
  out += sim.nv();
  copy_to(sim.cfrc_ext(), 6 * nbody, out);
}

// The centre of mass's x: the forward position Humanoid-v4 rewards.
double HumanoidEnv::forward_position(const MujocoView& sim) const { return mass_center_x(sim); }

bool HumanoidEnv::is_healthy(const MujocoView& sim) const {
  const double z = sim.qpos()[2];
  return z > 1.0 && z < 2.0;
}

}  // namespace tdrl::envs
