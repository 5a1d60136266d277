// register_builtin_envs: the registry entries of the built-in tasks (classic control, MuJoCo). Each
// entry maps the task's option fields (their C++ names are the config names) onto its Options
// struct.

#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <tdrl/envs/classic_control.h>
#include <tdrl/envs/mujoco_env.h>
#include <tdrl/envs/mujoco_tasks.h>
#include <tdrl/envs/registry.h>
#include <tensordict/errors.h>

namespace tdrl::envs {

namespace {

// How one task option is read from EnvOptions into the task's Options struct `O`.
template <class O>
using OptionSetter = std::function<void(O&, const EnvOptions&)>;

template <class O>
using OptionTable = std::vector<std::pair<std::string, OptionSetter<O>>>;

// A factory building `Env` from EnvOptions: batch size and device, then every option of
// `table` that is set (check_keys rejects the others).
template <class Env, class O>
RegisteredEnvFactory task_factory(const std::string& name, OptionTable<O> table) {
  return [name, table](const EnvOptions& options) -> std::shared_ptr<EnvBase> {
    std::vector<std::string> known;
    for (const auto& entry : table) known.push_back(entry.first);
    options.check_keys(name, known);
    O task_options;
    task_options.batch_size(options.batch_size());
    task_options.device(options.device());
    for (const auto& entry : table) {
      if (options.contains(entry.first)) entry.second(task_options, options);
    }
    return std::make_shared<Env>(task_options);
  };
}

OptionTable<CartPoleEnvOptions> cartpole_options() {
  using O = CartPoleEnvOptions;
  return {
      {"max_episode_steps",
       [](O& o, const EnvOptions& e) { o.max_episode_steps(e.get_int("max_episode_steps", 0)); }},
      {"sutton_barto_reward",
       [](O& o, const EnvOptions& e) {
         o.sutton_barto_reward(e.get_bool("sutton_barto_reward", false));
       }},
      {"gravity", [](O& o, const EnvOptions& e) { o.gravity(e.get_double("gravity", 0)); }},
      {"masscart", [](O& o, const EnvOptions& e) { o.masscart(e.get_double("masscart", 0)); }},
      {"masspole", [](O& o, const EnvOptions& e) { o.masspole(e.get_double("masspole", 0)); }},
      {"length", [](O& o, const EnvOptions& e) { o.length(e.get_double("length", 0)); }},
      {"force_mag", [](O& o, const EnvOptions& e) { o.force_mag(e.get_double("force_mag", 0)); }},
      {"tau", [](O& o, const EnvOptions& e) { o.tau(e.get_double("tau", 0)); }},
      {"theta_threshold_radians",
       [](O& o, const EnvOptions& e) {
         o.theta_threshold_radians(e.get_double("theta_threshold_radians", 0));
       }},
      {"x_threshold",
       [](O& o, const EnvOptions& e) { o.x_threshold(e.get_double("x_threshold", 0)); }},
  };
}

OptionTable<PendulumEnvOptions> pendulum_options() {
  using O = PendulumEnvOptions;
  return {
      {"max_episode_steps",
       [](O& o, const EnvOptions& e) { o.max_episode_steps(e.get_int("max_episode_steps", 0)); }},
      {"g", [](O& o, const EnvOptions& e) { o.g(e.get_double("g", 0)); }},
      {"m", [](O& o, const EnvOptions& e) { o.m(e.get_double("m", 0)); }},
      {"l", [](O& o, const EnvOptions& e) { o.l(e.get_double("l", 0)); }},
      {"dt", [](O& o, const EnvOptions& e) { o.dt(e.get_double("dt", 0)); }},
      {"max_speed", [](O& o, const EnvOptions& e) { o.max_speed(e.get_double("max_speed", 0)); }},
      {"max_torque",
       [](O& o, const EnvOptions& e) { o.max_torque(e.get_double("max_torque", 0)); }},
  };
}

OptionTable<MountainCarEnvOptions> mountain_car_options() {
  using O = MountainCarEnvOptions;
  return {
      {"max_episode_steps",
       [](O& o, const EnvOptions& e) { o.max_episode_steps(e.get_int("max_episode_steps", 0)); }},
      {"goal_velocity",
       [](O& o, const EnvOptions& e) { o.goal_velocity(e.get_double("goal_velocity", 0)); }},
      {"goal_position",
       [](O& o, const EnvOptions& e) { o.goal_position(e.get_double("goal_position", 0)); }},
      {"force", [](O& o, const EnvOptions& e) { o.force(e.get_double("force", 0)); }},
      {"gravity", [](O& o, const EnvOptions& e) { o.gravity(e.get_double("gravity", 0)); }},
  };
}

OptionTable<MountainCarContinuousEnvOptions> mountain_car_continuous_options() {
  using O = MountainCarContinuousEnvOptions;
  return {
      {"max_episode_steps",
       [](O& o, const EnvOptions& e) { o.max_episode_steps(e.get_int("max_episode_steps", 0)); }},
      {"goal_velocity",
       [](O& o, const EnvOptions& e) { o.goal_velocity(e.get_double("goal_velocity", 0)); }},
      {"goal_position",
       [](O& o, const EnvOptions& e) { o.goal_position(e.get_double("goal_position", 0)); }},
      {"power", [](O& o, const EnvOptions& e) { o.power(e.get_double("power", 0)); }},
  };
}

OptionTable<AcrobotEnvOptions> acrobot_options() {
  using O = AcrobotEnvOptions;
  return {
      {"max_episode_steps",
       [](O& o, const EnvOptions& e) { o.max_episode_steps(e.get_int("max_episode_steps", 0)); }},
      {"torque_noise_max",
       [](O& o, const EnvOptions& e) { o.torque_noise_max(e.get_double("torque_noise_max", 0)); }},
      {"book_or_nips",
       [](O& o, const EnvOptions& e) { o.book_or_nips(e.get_string("book_or_nips", "")); }},
  };
}

OptionTable<MujocoEnvOptions> mujoco_options() {
  using O = MujocoEnvOptions;
  return {
      {"model_path",
       [](O& o, const EnvOptions& e) { o.model_path(e.get_string("model_path", "")); }},
      {"asset_dir", [](O& o, const EnvOptions& e) { o.asset_dir(e.get_string("asset_dir", "")); }},
      {"num_threads",
       [](O& o, const EnvOptions& e) { o.num_threads(e.get_int("num_threads", 1)); }},
      {"frame_skip", [](O& o, const EnvOptions& e) { o.frame_skip(e.get_int("frame_skip", 1)); }},
      {"reset_noise_scale",
       [](O& o, const EnvOptions& e) {
         o.reset_noise_scale(e.get_double("reset_noise_scale", 0));
       }},
      {"max_episode_steps",
       [](O& o, const EnvOptions& e) { o.max_episode_steps(e.get_int("max_episode_steps", 0)); }},
      {"terminate_when_unhealthy",
       [](O& o, const EnvOptions& e) {
         o.terminate_when_unhealthy(e.get_bool("terminate_when_unhealthy", true));
       }},
  };
}

std::vector<std::pair<std::string, RegisteredEnvFactory>> builtin_entries() {
  return {
      {"CartPole-v1", task_factory<CartPoleEnv>("CartPole-v1", cartpole_options())},
      {"Pendulum-v1", task_factory<PendulumEnv>("Pendulum-v1", pendulum_options())},
      {"MountainCar-v0", task_factory<MountainCarEnv>("MountainCar-v0", mountain_car_options())},
      {"MountainCarContinuous-v0",
       task_factory<MountainCarContinuousEnv>("MountainCarContinuous-v0",
                                              mountain_car_continuous_options())},
      {"Acrobot-v1", task_factory<AcrobotEnv>("Acrobot-v1", acrobot_options())},
      {"InvertedPendulum-v4",
       task_factory<InvertedPendulumEnv>("InvertedPendulum-v4", mujoco_options())},
      {"InvertedDoublePendulum-v4",
       task_factory<InvertedDoublePendulumEnv>("InvertedDoublePendulum-v4", mujoco_options())},
      {"Reacher-v4", task_factory<ReacherEnv>("Reacher-v4", mujoco_options())},
      {"HalfCheetah-v4", task_factory<HalfCheetahEnv>("HalfCheetah-v4", mujoco_options())},
      {"Hopper-v4", task_factory<HopperEnv>("Hopper-v4", mujoco_options())},
      {"Walker2d-v4", task_factory<Walker2dEnv>("Walker2d-v4", mujoco_options())},
      {"Ant-v4", task_factory<AntEnv>("Ant-v4", mujoco_options())},
      {"Humanoid-v4", task_factory<HumanoidEnv>("Humanoid-v4", mujoco_options())},
  };
}

}  // namespace

void register_builtin_envs() {
  static std::mutex mutex;
  static bool registered = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (registered) return;
  auto entries = builtin_entries();
  // All or nothing: check every name before registering any.
  for (const auto& entry : entries) {
    TDRL_CHECK(!is_env_registered(entry.first), tensordict::ValueError, "register_builtin_envs: '",
               entry.first,
               "' is already registered by someone else; built-in names "
               "cannot be replaced (register yours under another name)");
  }
  for (auto& entry : entries) register_env(entry.first, std::move(entry.second));
  registered = true;
}

}  // namespace tdrl::envs
