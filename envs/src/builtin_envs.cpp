// register_builtin_envs: the registry entries of the built-in tasks (classic control, MuJoCo). A
// task's options are its Options struct's declared fields (Options::fields), read from
// EnvOptions by read_task_options.

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

// A built-in task: its name, and the registration of its Env with its declared Options
// (register_env<O>: the registry reads the given task options into O; the factory adds the
// batch size and device).
struct Entry {
  std::string name;
  std::function<void()> add;
};

template <class Env, class O>
Entry task_entry(const std::string& name) {
  return {name, [name] {
            register_env<O>(name, [](const O& task, const EnvOptions& given) {
              O options = task;
              return std::make_shared<Env>(
                  options.batch_size(given.batch_size()).device(given.device()));
            });
          }};
}

std::vector<Entry> builtin_entries() {
  return {
      task_entry<CartPoleEnv, CartPoleEnvOptions>("CartPole-v1"),
      task_entry<PendulumEnv, PendulumEnvOptions>("Pendulum-v1"),
      task_entry<MountainCarEnv, MountainCarEnvOptions>("MountainCar-v0"),
      task_entry<MountainCarContinuousEnv, MountainCarContinuousEnvOptions>(
          "MountainCarContinuous-v0"),
      task_entry<AcrobotEnv, AcrobotEnvOptions>("Acrobot-v1"),
      task_entry<InvertedPendulumEnv, MujocoEnvOptions>("InvertedPendulum-v4"),
      task_entry<InvertedDoublePendulumEnv, MujocoEnvOptions>("InvertedDoublePendulum-v4"),
      task_entry<ReacherEnv, MujocoEnvOptions>("Reacher-v4"),
      task_entry<HalfCheetahEnv, MujocoEnvOptions>("HalfCheetah-v4"),
      task_entry<HopperEnv, MujocoEnvOptions>("Hopper-v4"),
      task_entry<Walker2dEnv, MujocoEnvOptions>("Walker2d-v4"),
      task_entry<AntEnv, MujocoEnvOptions>("Ant-v4"),
      task_entry<HumanoidEnv, MujocoEnvOptions>("Humanoid-v4"),
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
  for (const auto& entry : entries) {
    entry.add();
  }
  registered = true;
}

}  // namespace tdrl::envs
