#pragma once

// What the recipes share: building the envs from the config's env section and reading the
// task's shapes, the stochastic actor of PPO/A2C/SAC, and small config helpers. Included by
// recipes.cpp only.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <tdrl/apps/config.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/envs/batched_envs.h>
#include <tdrl/envs/registry.h>
#include <tdrl/envs/transforms/all.h>
#include <tdrl/losses/value_estimators.h>
#include <tdrl/modules/actors.h>
#include <tdrl/modules/mlp.h>
#include <tensordict/nn/distribution_class.h>
#include <tensordict/nn/normal_param_extractor.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>

namespace tdrl::apps {
namespace {

// The task's shapes, read from an unbatched evaluation env.
struct EnvInfo {
  std::string name;
  int64_t obs_dim = 0;
  envs::TensorSpecPtr action_spec;         // unbatched
  std::shared_ptr<envs::Bounded> bounded;  // when continuous
  std::optional<int64_t> num_actions;      // when discrete
  int64_t action_dim = 1;
};

[[noreturn]] void throw_unsuited(const Config& config, const EnvInfo& info,
                                 const std::string& need) {
  throw ConfigError("algo.name " + config.get_string("algo.name") + " needs " + need +
                    " action space, but " + info.name + "'s action spec is " +
                    info.action_spec->to_string() +
                    "; use ppo or a2c (any action space), dqn (discrete) or ddpg/td3/sac "
                    "(continuous)");
}

template <class Loss>
void set_gamma(Loss& loss, const Config& config) {
  loss.make_value_estimator(losses::ValueEstimatorType::kTD0,
                            losses::ValueEstimatorOptions().gamma(config.get_float("algo.gamma")));
}

int64_t updates_per_batch_of(const Config& config) {
  const auto v = config.get_int("algo.updates_per_batch");
  if (v == 0 || v < -1) {
    throw ConfigError("'algo.updates_per_batch' is " + std::to_string(v) +
                      "; it must be >= 1, or -1 for one update per collected frame");
  }
  return v > 0 ? v : config.get_int("collector.frames_per_batch");
}

double scalar_of(const YAML::Node& node, const std::string& where) {
  try {
    return node.as<double>();
  } catch (const YAML::Exception&) {
    throw ConfigError("'" + where + "' must be a number, got '" + YAML::Dump(node) + "'");
  }
}

// One transform of env.transforms; `eval` builds the evaluation env's copy (VecNorm frozen,
// sharing the training statistics).
envs::TransformPtr make_transform(const YAML::Node& node, size_t index, Recipe& recipe, bool eval) {
  const std::string where = "env.transforms[" + std::to_string(index) + "]";
  const auto type = node["type"].as<std::string>();
  static const std::map<std::string, std::set<std::string>> known{
      {"vec_norm", {"type", "keys", "decay", "eps"}},
      {"observation_norm", {"type", "loc", "scale", "keys"}},
      {"reward_scaling", {"type", "loc", "scale"}},
      {"reward_clipping", {"type", "min", "max"}},
      {"double_to_float", {"type"}},
      {"step_counter", {"type", "max_steps"}},
  };
  auto it = known.find(type);
  if (it == known.end()) {
    std::ostringstream names;
    for (const auto& [name, keys] : known) names << " " << name;
    throw ConfigError("'" + where + ".type' is '" + type + "' (line " +
                      std::to_string(node.Mark().line + 1) +
                      "); the transforms are:" + names.str());
  }
  for (const auto& entry : node) {
    const auto key = entry.first.as<std::string>();
    if (!it->second.count(key)) {
      std::ostringstream keys;
      for (const auto& k : it->second) keys << " " << k;
      throw ConfigError("unknown key '" + where + "." + key + "' (line " +
                        std::to_string(entry.first.Mark().line + 1) + ") for transform " + type +
                        "; its keys are:" + keys.str());
    }
  }
  auto keys_of = [&](std::vector<tensordict::NestedKey> fallback) {
    if (!node["keys"]) return fallback;
    std::vector<tensordict::NestedKey> keys;
    for (const auto& k : node["keys"]) keys.emplace_back(k.as<std::string>());
    return keys;
  };
  if (type == "vec_norm") {
    const std::string state_name = "vec_norm_" + std::to_string(index);
    std::shared_ptr<envs::VecNormState> state;
    for (const auto& [name, s] : recipe.env_state) {
      if (name == state_name) state = s;
    }
    if (!state) {
      state = std::make_shared<envs::VecNormState>();
      recipe.env_state.emplace_back(state_name, state);
    }
    auto options = envs::VecNormOptions().in_keys(keys_of({"observation"})).shared_state(state);
    if (node["decay"]) options.decay(scalar_of(node["decay"], where + ".decay"));
    if (node["eps"]) options.eps(scalar_of(node["eps"], where + ".eps"));
    auto t = std::make_shared<envs::VecNorm>(options);
    if (eval) t->freeze();
    return t;
  }
  if (type == "observation_norm") {
    return std::make_shared<envs::ObservationNorm>(
        envs::ObservationNormOptions()
            .loc(node["loc"] ? scalar_of(node["loc"], where + ".loc") : 0.0)
            .scale(node["scale"] ? scalar_of(node["scale"], where + ".scale") : 1.0)
            .in_keys(keys_of({"observation"})));
  }
  if (type == "reward_scaling") {
    return std::make_shared<envs::RewardScaling>(
        envs::RewardScalingOptions()
            .loc(node["loc"] ? scalar_of(node["loc"], where + ".loc") : 0.0)
            .scale(node["scale"] ? scalar_of(node["scale"], where + ".scale") : 1.0));
  }
  if (type == "reward_clipping") {
    auto options = envs::RewardClippingOptions();
    if (node["min"]) options.clamp_min(scalar_of(node["min"], where + ".min"));
    if (node["max"]) options.clamp_max(scalar_of(node["max"], where + ".max"));
    return std::make_shared<envs::RewardClipping>(options);
  }
  if (type == "double_to_float") return std::make_shared<envs::DoubleToFloat>();
  auto options = envs::StepCounterOptions();
  if (node["max_steps"]) {
    options.max_steps(static_cast<int64_t>(scalar_of(node["max_steps"], where + ".max_steps")));
  }
  return std::make_shared<envs::StepCounter>(options);
}

envs::EnvOptions env_options(const Config& config, std::vector<int64_t> batch_size) {
  auto options = envs::EnvOptions().batch_size(std::move(batch_size));
  for (const auto& entry : config.get_map("env.options")) {
    const auto key = entry.first.as<std::string>();
    const auto& value = entry.second;
    // The most specific YAML reading first: bool, integer, float, then string.
    bool b;
    int64_t i;
    double d;
    if (YAML::convert<bool>::decode(value, b)) {
      options.set(key, b);
    } else if (YAML::convert<int64_t>::decode(value, i)) {
      options.set(key, i);
    } else if (YAML::convert<double>::decode(value, d)) {
      options.set(key, d);
    } else {
      options.set(key, value.as<std::string>());
    }
  }
  const auto max_steps = config.get_int("env.max_episode_steps");
  if (max_steps > 0) options.set("max_episode_steps", max_steps);
  return options;
}

// Sets the recipe's train and eval env factories; returns the task's shapes.
EnvInfo build_envs(const Config& config, Recipe& recipe) {
  envs::register_builtin_envs();
  const auto name = config.get_string("env.name");
  const auto num_envs = config.get_int("env.num_envs");
  if (num_envs < 1) {
    throw ConfigError("'env.num_envs' is " + std::to_string(num_envs) + "; it must be >= 1");
  }
  const bool parallel = config.get_bool("env.parallel");
  const auto transforms = config.get_map_list("env.transforms");
  // Transforms are built now, once per env kind, so that config errors surface at start.
  auto wrap = [&recipe, transforms](std::shared_ptr<envs::EnvBase> env, bool eval) {
    if (transforms.empty()) return env;
    std::vector<envs::TransformPtr> built;
    for (size_t i = 0; i < transforms.size(); ++i) {
      built.push_back(make_transform(transforms[i], i, recipe, eval));
    }
    return std::static_pointer_cast<envs::EnvBase>(
        std::make_shared<envs::TransformedEnv>(env, std::make_shared<envs::Compose>(built)));
  };
  const auto single = env_options(config, {});
  recipe.eval_env_factory = [name, single, wrap] {
    return wrap(envs::make_env(name, single), true);
  };
  if (parallel) {
    recipe.train_env_factory = [name, single, num_envs, wrap] {
      auto env = std::make_shared<envs::ParallelEnv>(
          num_envs, [name, single] { return envs::make_env(name, single); });
      return wrap(env, false);
    };
  } else {
    const auto batched = env_options(config, {num_envs});
    recipe.train_env_factory = [name, batched, wrap] {
      return wrap(envs::make_env(name, batched), false);
    };
  }
  auto probe = recipe.eval_env_factory();
  EnvInfo info;
  info.name = name;
  const auto obs = probe->observation_spec()->find("observation");
  if (!obs || obs->shape().size() != 1) {
    throw ConfigError("env " + name +
                      " has no flat 'observation' entry; the recipes build MLPs on a 1-D "
                      "observation");
  }
  info.obs_dim = obs->shape()[0];
  info.action_spec = probe->action_spec();
  info.bounded = std::dynamic_pointer_cast<envs::Bounded>(info.action_spec);
  if (auto c = std::dynamic_pointer_cast<envs::Categorical>(info.action_spec))
    info.num_actions = c->n();
  if (auto o = std::dynamic_pointer_cast<envs::OneHot>(info.action_spec)) info.num_actions = o->n();
  info.action_dim = info.action_spec->numel();
  return info;
}

// PPO/A2C/SAC's actor: categorical logits for a discrete task, a TanhNormal on the action
// bounds for a continuous one; writes the action and its log-probability.
modules::ProbabilisticActor make_stochastic_actor(const Config& config, const EnvInfo& info) {
  namespace tdnn = tensordict::nn;
  const auto cells = config.get_int_list("model.actor_cells");
  auto mlp = [&](int64_t out) {
    return modules::MLP(modules::MLPOptions(info.obs_dim, out)
                            .num_cells(cells)
                            .activation(config.get_string("model.activation"))
                            .layer_norm(config.get_bool("model.layer_norm")));
  };
  if (info.num_actions) {
    tdnn::TensorDictModule logits(
        mlp(*info.num_actions),
        tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"logits"}));
    return modules::ProbabilisticActor(
        logits, info.action_spec,
        modules::ProbabilisticActorOptions()
            .in_keys({"logits"})
            .distribution_class(tdnn::DistributionClass::categorical())
            .return_log_prob(true));
  }
  if (!info.bounded) {
    throw ConfigError("env " + info.name + "'s action spec is " + info.action_spec->to_string() +
                      "; the stochastic actor needs a Categorical, OneHot or Bounded one");
  }
  tdnn::TensorDictSequential net(
      tdnn::TensorDictModule(
          mlp(2 * info.action_dim),
          tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"params"})),
      tdnn::TensorDictModule(
          tdnn::NormalParamExtractor(),
          tdnn::TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"})));
  return modules::ProbabilisticActor(
      net, info.action_spec,
      modules::ProbabilisticActorOptions()
          .distribution_class(tdnn::DistributionClass::tanh_normal(
              tdnn::TanhNormalOptions().low(info.bounded->low()).high(info.bounded->high())))
          .return_log_prob(true));
}

}  // namespace
}  // namespace tdrl::apps
