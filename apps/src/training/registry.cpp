// The algorithm and transform registries: tensordict::Registry, as the env registry is.

#include <tdrl/apps/registry.h>

#include <tdrl/apps/env_parts.h>

#include <mutex>

#include <tdrl/envs/registry.h>
#include <tensordict/errors.h>
#include <tensordict/name_table.h>

#include "config/config_text.h"
#include "training/builtin.h"
#include "training/device_memory.h"

namespace tdrl::apps {

namespace {

tensordict::Registry<AlgorithmInfo>& algorithms() {
  static tensordict::Registry<AlgorithmInfo> registry(
      "algorithm", "call register_builtin_components() or load the plugin first");
  return registry;
}

tensordict::Registry<TransformInfo>& transforms() {
  static tensordict::Registry<TransformInfo> registry(
      "transform", "call register_builtin_components() or load the plugin first");
  return registry;
}

}  // namespace

void register_algorithm(AlgorithmInfo info) {
  TDRL_CHECK(info.make_config && info.make_recipe, tensordict::ValueError, "register_algorithm: '",
             info.name,
             "' needs make_config and make_recipe (or use register_algorithm<Config, "
             "Recipe>(name, doc))");
  const std::string name = info.name;
  algorithms().add(name, std::move(info), "register_algorithm");
}

const AlgorithmInfo* find_algorithm(const std::string& name) { return algorithms().find(name); }

std::vector<std::string> algorithm_names() { return algorithms().names(); }

namespace {

// replay.device resolved: "auto" is the training device when the full buffer (capacity times
// a step's bytes) takes at most a quarter of its memory, else the CPU.
torch::Device resolve_replay_device(const RunConfig& config, const EnvInfo& env) {
  const torch::Device device(config.device);
  const ReplaySection* replay = config.replay();
  if (!replay) return torch::kCPU;
  if (replay->device != "auto") return torch::Device(replay->device);
  if (device.is_cpu()) return torch::kCPU;
  const auto memory = detail::device_memory_bytes(device);
  const double full = static_cast<double>(replay->capacity) * static_cast<double>(env.frame_bytes);
  return memory && full <= static_cast<double>(*memory) / 4 ? device : torch::Device(torch::kCPU);
}

}  // namespace

RecipeContext recipe_context(const RunConfig& config, const EnvInfo& env) {
  return RecipeContext(env, config.model, config.optim, config.collector, config.replay(),
                       torch::Device(config.device), resolve_replay_device(config, env));
}

std::unique_ptr<Recipe> make_acting_recipe(const RunConfig& config, EnvParts& env) {
  auto recipe = make_acting_recipe(config, recipe_context(config, env.info));
  carry_policy_state(env, recipe->policy_state);
  return recipe;
}

std::unique_ptr<Recipe> make_acting_recipe(const RunConfig& config, const RecipeContext& context) {
  const AlgorithmInfo* info = find_algorithm(config.algo.name);
  if (!info || !config.algo.options)
    throw ConfigError("'algo.name' is '" + config.algo.name +
                      "', which is not a registered algorithm; register it (or load its plugin) "
                      "before loading the config");
  auto recipe = info->make_recipe(*config.algo.options);
  recipe->build_acting(context);
  // Evaluation and tdrl-eval run the actor: a recipe without one is refused here, not crashed on.
  TDRL_CHECK(recipe->actor, ConfigError, "the recipe of algorithm '", config.algo.name,
             "' built no actor (Recipe::actor is empty after build_acting); its build_acting "
             "must set actor, the policy that evaluation runs and tdrl-eval loads");
  return recipe;
}

void register_transform(TransformInfo info) {
  TDRL_CHECK(info.make_config && info.build, tensordict::ValueError, "register_transform: '",
             info.type, "' needs make_config and build");
  const std::string type = info.type;
  transforms().add(type, std::move(info), "register_transform");
}

const TransformInfo* find_transform(const std::string& type) { return transforms().find(type); }

std::vector<std::string> transform_types() { return transforms().names(); }

std::shared_ptr<envs::VecNormState> TransformContext::state(const std::string& name) const {
  for (const auto& [n, s] : *env_state)
    if (n == name) return s;
  auto created = std::make_shared<envs::VecNormState>();
  env_state->emplace_back(name, created);
  return created;
}

void register_builtin_components() {
  static std::once_flag once;
  std::call_once(once, [] {
    envs::register_builtin_envs();
    detail::register_builtin_transforms();
    detail::register_builtin_algorithms();
  });
}

}  // namespace tdrl::apps
