#pragma once

/// The registries of the training apps: algorithms (a recipe with its own `algo:` section) and
/// env transforms (a transform with its own keys in `env.transforms`); envs use tdrl::envs'
/// registry (register_env). The config's choices, "did you mean" suggestions, `--help` and
/// docs/config.md all come from these, so a registered component is a first-class citizen:
/// the stock tdrl-train trains a registered algorithm from a config like a built-in one.
///
/// Registration is explicit (static self-registration vanishes from static libraries): call
/// register_builtin_components() once, then register your own, before loading a config;
/// train_main does the first, a plugin's `tdrl_register_plugin` or your main does the second.
/// Names are never replaced silently. The registries are thread safe.
///
/// Example (a user's main):
/// ```
/// int main(int argc, char** argv) {
///   tdrl::envs::register_env("Drift-v0", make_drift_env);
///   tdrl::apps::register_algorithm<AWRConfig, AWRRecipe>("awr", "advantage-weighted regression");
///   return tdrl::apps::train_main(argc, argv);
/// }
/// ```

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <tdrl/apps/config.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/envs/transforms.h>
#include <tdrl/envs/transforms/normalization.h>

namespace tdrl::apps {

struct EnvParts;

/// A registered algorithm.
struct AlgorithmInfo {
  std::string name;
  /// One line for docs/config.md and --help.
  std::string doc;
  /// A config section with the defaults.
  std::function<std::shared_ptr<AlgoConfig>()> make_config;
  /// A recipe for a validated config section (of the kind make_config makes).
  std::function<std::unique_ptr<Recipe>(const AlgoConfig&)> make_recipe;
  /// Problems of the whole config with this task (e.g. a discrete-action algorithm on a
  /// continuous task), each naming the config key; optional.
  std::function<std::vector<std::string>(const RunConfig&, const EnvInfo&)> check;
};

/// Registers `info`. Throws tensordict::ValueError when the name is empty or taken, or a factory
/// is missing.
void register_algorithm(AlgorithmInfo info);

/// Registers the algorithm `name` whose section is `Config` (an AlgoConfig) and whose recipe
/// is `R`, constructed from `const Config&`. `check` as in AlgorithmInfo.
template <class Config, class R>
void register_algorithm(
    const std::string& name, const std::string& doc,
    std::function<std::vector<std::string>(const RunConfig&, const EnvInfo&)> check = nullptr) {
  AlgorithmInfo info;
  info.name = name;
  info.doc = doc;
  info.make_config = [] { return std::make_shared<Config>(); };
  info.make_recipe = [](const AlgoConfig& config) -> std::unique_ptr<Recipe> {
    return std::make_unique<R>(static_cast<const Config&>(config));
  };
  info.check = std::move(check);
  register_algorithm(std::move(info));
}

/// The algorithm registered as `name`, or null.
const AlgorithmInfo* find_algorithm(const std::string& name);

/// What `config`'s recipe builders read on the task `env`. `config` and `env` must outlive it.
RecipeContext recipe_context(const RunConfig& config, const EnvInfo& env);

/// The recipe of `config`'s algorithm with its acting part built on the task of `env` (what
/// tdrl-eval and collector workers need; the Trainer then calls build_learning), and `env`'s
/// envs made to carry the recipe's policy_state (carry_policy_state). Seed the generator first
/// for reproducible weights. Throws ConfigError when algo.name is not registered.
std::unique_ptr<Recipe> make_acting_recipe(const RunConfig& config, EnvParts& env);
/// The acting part alone, with `context` (recipe_context of `config`): the Trainer passes the
/// context it then builds the learning part with, so that it sees every section the recipe
/// read, and carries the policy state itself.
std::unique_ptr<Recipe> make_acting_recipe(const RunConfig& config, const RecipeContext& context);
/// The registered algorithm names, sorted.
std::vector<std::string> algorithm_names();

/// What a transform's builder may use besides its options.
struct TransformContext {
  /// True for the evaluation env's copy: statistics are shared with the training env, never
  /// updated (VecNorm frozen).
  bool eval = false;
  /// The running statistics shared between the training and evaluation envs, by name; a
  /// builder finds its own (`state(name)`) or adds it. Saved in checkpoints.
  std::vector<std::pair<std::string, std::shared_ptr<envs::VecNormState>>>* env_state = nullptr;
  /// The shared state `name`, created when missing.
  std::shared_ptr<envs::VecNormState> state(const std::string& name) const;
  /// The transform's position in env.transforms (names its state).
  size_t index = 0;
};

/// A registered env transform.
struct TransformInfo {
  std::string type;
  std::string doc;
  /// An options section with the defaults (the keys beside `type`).
  std::function<std::shared_ptr<Section>()> make_config;
  /// Builds the transform from validated options.
  std::function<envs::TransformPtr(const Section&, const TransformContext&)> build;
};

/// Registers `info`. Throws tensordict::ValueError when the type is empty or taken, or a factory
/// is missing.
void register_transform(TransformInfo info);

/// Registers the transform `type` whose options are `Config` (a Section), built by `build`.
template <class Config>
void register_transform(
    const std::string& type, const std::string& doc,
    std::function<envs::TransformPtr(const Config&, const TransformContext&)> build) {
  TransformInfo info;
  info.type = type;
  info.doc = doc;
  info.make_config = [] { return std::make_shared<Config>(); };
  info.build = [build](const Section& options, const TransformContext& context) {
    return build(static_cast<const Config&>(options), context);
  };
  register_transform(std::move(info));
}

/// The transform registered as `type`, or null.
const TransformInfo* find_transform(const std::string& type);
/// The registered transform types, sorted.
std::vector<std::string> transform_types();

/// Registers the built-in envs (tdrl::envs::register_builtin_envs), algorithms (ppo, a2c,
/// dqn, ddpg, td3, sac) and transforms (vec_norm, observation_norm, reward_scaling,
/// reward_clipping, double_to_float, step_counter). Calling it again does nothing.
void register_builtin_components();

}  // namespace tdrl::apps
