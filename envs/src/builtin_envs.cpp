// register_builtin_envs: the registry entries of the built-in tasks (classic control, MuJoCo). Each
// entry maps the task's option fields (their C++ names are the config names) onto its Options
// struct.

#include <functional>
#include <mutex>
#include <string>
#include <type_traits>
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

// Reads option `name` as the setter's type T (an optional's value type for optional
// fields); only called for options that are set, so the defaults are never used.
template <class T>
T read_option(const EnvOptions& options, const std::string& name) {
  if constexpr (std::is_same_v<T, bool>) {
    return options.get_bool(name, false);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(options.get_int(name, 0));
  } else if constexpr (std::is_floating_point_v<T>) {
    return options.get_double(name, 0);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return options.get_string(name, "");
  } else {
    return read_option<typename T::value_type>(options, name);
  }
}

// The table entry setting option `name` through the Options setter `set` (a TORCH_ARG setter
// of O, or of O's CRTP base C).
template <class O, class C, class T>
std::pair<std::string, OptionSetter<O>> option(const std::string& name, O& (C::*set)(const T&)) {
  return {name, [name, set](O& o, const EnvOptions& e) { (o.*set)(read_option<T>(e, name)); }};
}

// A registry entry: the factory building `Env` from EnvOptions (batch size and device, then
// every option of `table` that is set; check_keys rejects the others) and the option names.
struct Entry {
  std::string name;
  RegisteredEnvFactory factory;
  std::vector<std::string> option_names;
};

template <class Env, class O>
Entry task_entry(const std::string& name, OptionTable<O> table) {
  std::vector<std::string> known;
  for (const auto& entry : table) known.push_back(entry.first);
  auto factory = [name, table, known](const EnvOptions& options) -> std::shared_ptr<EnvBase> {
    options.check_keys(name, known);
    O task_options;
    task_options.batch_size(options.batch_size());
    task_options.device(options.device());
    for (const auto& entry : table) {
      if (options.contains(entry.first)) entry.second(task_options, options);
    }
    return std::make_shared<Env>(task_options);
  };
  return {name, std::move(factory), known};
}

OptionTable<CartPoleEnvOptions> cartpole_options() {
  using O = CartPoleEnvOptions;
  return {
      option("max_episode_steps", &O::max_episode_steps),
      option("sutton_barto_reward", &O::sutton_barto_reward),
      option("gravity", &O::gravity),
      option("masscart", &O::masscart),
      option("masspole", &O::masspole),
      option("length", &O::length),
      option("force_mag", &O::force_mag),
      option("tau", &O::tau),
      option("theta_threshold_radians", &O::theta_threshold_radians),
      option("x_threshold", &O::x_threshold),
  };
}

OptionTable<PendulumEnvOptions> pendulum_options() {
  using O = PendulumEnvOptions;
  return {
      option("max_episode_steps", &O::max_episode_steps),
      option("g", &O::g),
      option("m", &O::m),
      option("l", &O::l),
      option("dt", &O::dt),
      option("max_speed", &O::max_speed),
      option("max_torque", &O::max_torque),
  };
}

OptionTable<MountainCarEnvOptions> mountain_car_options() {
  using O = MountainCarEnvOptions;
  return {
      option("max_episode_steps", &O::max_episode_steps),
      option("goal_velocity", &O::goal_velocity),
      option("goal_position", &O::goal_position),
      option("force", &O::force),
      option("gravity", &O::gravity),
  };
}

OptionTable<MountainCarContinuousEnvOptions> mountain_car_continuous_options() {
  using O = MountainCarContinuousEnvOptions;
  return {
      option("max_episode_steps", &O::max_episode_steps),
      option("goal_velocity", &O::goal_velocity),
      option("goal_position", &O::goal_position),
      option("power", &O::power),
  };
}

OptionTable<AcrobotEnvOptions> acrobot_options() {
  using O = AcrobotEnvOptions;
  return {
      option("max_episode_steps", &O::max_episode_steps),
      option("torque_noise_max", &O::torque_noise_max),
      option("book_or_nips", &O::book_or_nips),
  };
}

OptionTable<MujocoEnvOptions> mujoco_options() {
  using O = MujocoEnvOptions;
  return {
      option("model_path", &O::model_path),
      option("asset_dir", &O::asset_dir),
      option("num_threads", &O::num_threads),
      option("frame_skip", &O::frame_skip),
      option("reset_noise_scale", &O::reset_noise_scale),
      option("max_episode_steps", &O::max_episode_steps),
      option("terminate_when_unhealthy", &O::terminate_when_unhealthy),
  };
}

std::vector<Entry> builtin_entries() {
  return {
      task_entry<CartPoleEnv>("CartPole-v1", cartpole_options()),
      task_entry<PendulumEnv>("Pendulum-v1", pendulum_options()),
      task_entry<MountainCarEnv>("MountainCar-v0", mountain_car_options()),
      task_entry<MountainCarContinuousEnv>("MountainCarContinuous-v0",
                                           mountain_car_continuous_options()),
      task_entry<AcrobotEnv>("Acrobot-v1", acrobot_options()),
      task_entry<InvertedPendulumEnv>("InvertedPendulum-v4", mujoco_options()),
      task_entry<InvertedDoublePendulumEnv>("InvertedDoublePendulum-v4", mujoco_options()),
      task_entry<ReacherEnv>("Reacher-v4", mujoco_options()),
      task_entry<HalfCheetahEnv>("HalfCheetah-v4", mujoco_options()),
      task_entry<HopperEnv>("Hopper-v4", mujoco_options()),
      task_entry<Walker2dEnv>("Walker2d-v4", mujoco_options()),
      task_entry<AntEnv>("Ant-v4", mujoco_options()),
      task_entry<HumanoidEnv>("Humanoid-v4", mujoco_options()),
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
    TDRL_CHECK(!is_env_registered(entry.name), tensordict::ValueError, "register_builtin_envs: '",
               entry.name,
               "' is already registered by someone else; built-in names "
               "cannot be replaced (register yours under another name)");
  }
  for (auto& entry : entries) {
    register_env(entry.name, std::move(entry.factory), std::move(entry.option_names));
  }
  registered = true;
}

}  // namespace tdrl::envs
