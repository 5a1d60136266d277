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

// A registry entry: the factory building `Env` from the task options its Options declare
// (read_task_options: unknown names and wrong kinds refused), with the batch size and device.
struct Entry {
  std::string name;
  RegisteredEnvFactory factory;
  OptionsDeclaration declaration;
};

template <class Env, class O>
Entry task_entry(const std::string& name) {
  auto factory = [name](const EnvOptions& given) -> std::shared_ptr<EnvBase> {
    DeclaredOptions<O> declared;
    read_task_options(name, given, declared);
    O options = declared.options;
    options.batch_size(given.batch_size());
    options.device(given.device());
    return std::make_shared<Env>(options);
  };
  return {name, std::move(factory), [] { return std::make_shared<DeclaredOptions<O>>(); }};
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
  for (auto& entry : entries) {
    register_env(entry.name, std::move(entry.factory), std::move(entry.declaration));
  }
  registered = true;
}

}  // namespace tdrl::envs
