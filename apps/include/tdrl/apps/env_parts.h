#pragma once

/// The envs of a run, built from the `env:` section (and the state the recipe's policy carries):
/// the training env (batched over env.num_envs, serial or on threads), the evaluation env (one,
/// unbatched) and the running statistics the two share, with the task's shapes.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tdrl/apps/config.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/envs/batched_envs.h>
#include <tdrl/envs/transforms/normalization.h>

namespace tdrl::apps {

/// The running statistics shared between the training and evaluation envs (VecNorm), by
/// name; saved in checkpoints.
using EnvState = std::vector<std::pair<std::string, std::shared_ptr<envs::VecNormState>>>;

/// Where the apps' envs carry each episode's return in the env's own units when env.transforms
/// is not empty: a RewardSum ahead of the configured transforms writes it (reset: 0; each
/// step: ("next", "episode_reward"), the running sum of the untransformed reward), so that
/// returns are reported in the task's units whatever the transforms do to "reward".
constexpr const char* kEpisodeRewardKey = "episode_reward";

struct EnvParts {
  /// Builds the training env: env.num_envs sub-envs with env.transforms (after a RewardSum
  /// writing kEpisodeRewardKey).
  envs::EnvFactory train_env_factory;
  /// Builds one unbatched evaluation env (same task and transforms; VecNorm frozen, sharing
  /// the training env's statistics).
  envs::EnvFactory eval_env_factory;
  /// Shared with every env the factories build.
  std::shared_ptr<EnvState> env_state;
  /// The task's shapes, from one evaluation env built here.
  EnvInfo info;
  /// That evaluation env (built by eval_env_factory), for the first user that needs one, so
  /// that it is not built twice; null once taken.
  std::shared_ptr<envs::EnvBase> probe;
};

/// Builds the env factories of `env` and probes one env for its shapes. Throws ConfigError
/// naming the key when the task cannot be built as configured (an unknown task option, no
/// flat "observation" entry), with the task's own message.
EnvParts build_env_parts(const EnvSection& env);

/// Makes every env `parts` builds (and its probe) end with an InitTracker ("is_init") and a
/// TensorDictPrimer of `policy_state` (Recipe::policy_state), so that a recurrent policy's
/// state is zero where an episode starts and runs on through steps and batches; the probe's
/// frame_bytes then count the state. Nothing for a null or empty `policy_state`.
void carry_policy_state(EnvParts& parts, const specs::CompositePtr& policy_state);

/// Checks that `config` suits the task (the algorithm's own check, e.g. dqn needs discrete
/// actions). Throws ConfigError naming the keys, listing every problem.
void check_task_fit(const RunConfig& config, const EnvInfo& info);

}  // namespace tdrl::apps
