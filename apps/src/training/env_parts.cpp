#include <tdrl/apps/env_parts.h>

#include <tdrl/apps/registry.h>
#include <tdrl/envs/registry.h>
#include <tdrl/envs/transforms.h>
#include <tdrl/envs/transforms/episode.h>
#include <tdrl/envs/transforms/primer.h>
#include <tdrl/envs/transforms/reward.h>
#include <tdrl/modules/convnet.h>
#include <tdrl/specs.h>

#include "config/config_text.h"
#include "training/replay_frames.h"

namespace tdrl::apps {

namespace {

// The task options: the declared ones as they are typed; an undeclared env's free map read as
// YAML reads a scalar (bool, integer, float, then string).
envs::EnvOptions env_options(const EnvSection& env, std::vector<int64_t> batch_size) {
  auto options = envs::EnvOptions().batch_size(std::move(batch_size));
  if (env.options) envs::write_task_options(*env.options, options);
  for (const auto& [key, text] : env.free_options) {
    bool b = false;
    int64_t i = 0;
    double d = 0;
    if (detail::parse_bool(text, &b)) {
      options.set(key, b);
    } else if (detail::parse_int(text, &i)) {
      options.set(key, i);
    } else if (detail::parse_float(text, &d)) {
      options.set(key, d);
    } else {
      options.set(key, text);
    }
  }
  return options;
}

// Bytes of one step as a replay buffer keeps it: `env`'s tensor entries and "next", stacked
// frames counted once (the buffer stores single frames, ReplayFrames).
int64_t frame_bytes(envs::EnvBase& env) {
  const auto step = detail::ReplayFrames::of(env).newest_frames(env.fake_tensordict());
  const int64_t steps = std::max<int64_t>(1, step.numel());
  int64_t bytes = 0;
  for (const auto& [key, value] : step.items(true, true)) {
    if (const auto* t = std::get_if<torch::Tensor>(&value))
      bytes += t->numel() * static_cast<int64_t>(t->element_size()) / steps;
  }
  return bytes;
}

}  // namespace

EnvParts build_env_parts(const EnvSection& env) {
  EnvParts parts;
  parts.env_state = std::make_shared<EnvState>();
  const auto state = parts.env_state;
  // The transform sections are copied into the factories: they outlive the config.
  std::vector<TransformSection> transforms = env.transforms.items;
  auto wrap = [state, transforms](std::shared_ptr<envs::EnvBase> base, bool eval) {
    if (transforms.empty()) return base;
    // The episode's return in the env's units, summed before any transform changes "reward".
    std::vector<envs::TransformPtr> built{
        std::make_shared<envs::RewardSum>(envs::RewardSumOptions().out_keys({kEpisodeRewardKey}))};
    for (size_t i = 0; i < transforms.size(); ++i) {
      TransformContext context;
      context.eval = eval;
      context.env_state = state.get();
      context.index = i;
      built.push_back(find_transform(transforms[i].type)->build(*transforms[i].options, context));
    }
    return std::static_pointer_cast<envs::EnvBase>(
        std::make_shared<envs::TransformedEnv>(base, std::make_shared<envs::Compose>(built)));
  };
  // The factories: one env for evaluation, num_envs sub-envs (batched or on threads) to train.
  const std::string name = env.name;
  const auto single = env_options(env, {});
  parts.eval_env_factory = [name, single, wrap] {
    return wrap(envs::make_env(name, single), true);
  };
  const int64_t num_envs = env.num_envs;
  if (env.parallel) {
    parts.train_env_factory = [name, single, num_envs, wrap] {
      auto batched = std::make_shared<envs::ParallelEnv>(
          num_envs, [name, single] { return envs::make_env(name, single); });
      return wrap(batched, false);
    };
  } else {
    const auto batched = env_options(env, {num_envs});
    parts.train_env_factory = [name, batched, wrap] {
      return wrap(envs::make_env(name, batched), false);
    };
  }

  // One env built now: a config the env refuses fails here, and its specs describe the task.
  std::shared_ptr<envs::EnvBase> probe;
  try {
    probe = parts.eval_env_factory();
  } catch (const std::exception& e) {
    throw ConfigError("env '" + name + "' cannot be built from 'env.options' / " +
                      "'env.transforms': " + e.what());
  }
  EnvInfo& info = parts.info;
  info.name = name;
  const auto obs = probe->observation_spec()->find("observation");
  const auto pixels = probe->observation_spec()->find(specs::kPixels);
  if (obs && obs->shape().size() == 1) info.obs_dim = obs->shape()[0];
  if (pixels && pixels->shape().size() == 3) info.pixels_shape = pixels->shape();
  if (info.obs_dim == 0 && info.pixels_shape.empty())
    throw ConfigError("'env.name' is " + name +
                      ", which has neither a flat 'observation' entry nor a 3-D 'pixels' entry; "
                      "the built-in recipes build MLPs on a 1-D observation, or a ConvNet on "
                      "[C, H, W] pixels (env.options.from_pixels with the to_tensor_image "
                      "transform, model.encoder: convnet)");
  info.action_spec = probe->action_spec();
  info.bounded = std::dynamic_pointer_cast<specs::Bounded>(info.action_spec);
  if (auto c = std::dynamic_pointer_cast<specs::Categorical>(info.action_spec))
    info.num_actions = c->n();
  if (auto o = std::dynamic_pointer_cast<specs::OneHot>(info.action_spec))
    info.num_actions = o->n();
  info.action_dim = info.action_spec->numel();
  info.frame_bytes = frame_bytes(*probe);
  parts.probe = std::move(probe);
  return parts;
}

void carry_policy_state(EnvParts& parts, const specs::CompositePtr& policy_state) {
  if (!policy_state || policy_state->is_empty()) return;
  auto carry = [policy_state](std::shared_ptr<envs::EnvBase> env) {
    return envs::with_policy_state(std::move(env), policy_state);
  };
  parts.train_env_factory = [inner = parts.train_env_factory, carry] { return carry(inner()); };
  parts.eval_env_factory = [inner = parts.eval_env_factory, carry] { return carry(inner()); };
  parts.probe = parts.probe ? carry(parts.probe) : parts.eval_env_factory();
  parts.info.frame_bytes = frame_bytes(*parts.probe);
}

namespace {

// What the model reads against what the env gives: the observation or [C, H, W] pixels.
std::vector<std::string> model_input_problems(const RunConfig& config, const EnvInfo& info) {
  const auto& model = config.model;
  const std::string shape = tensordict::shape_str(info.pixels_shape);
  if (model.encoder == "none") {
    if (const int64_t pad = config.train.random_shift.pad; pad > 0)
      return {"'train.random_shift.pad' is " + std::to_string(pad) +
              ", but model.encoder is none: the networks read no [C, H, W] pixels to shift; set "
              "model.encoder: convnet, or remove train.random_shift"};
    if (model.share_encoder)
      return {
          "'model.share_encoder' is true, but model.encoder is none, which builds no encoder to "
          "share; set model.encoder: convnet, or remove model.share_encoder"};
    // model.convnet is read only by the encoder: set without it, it would be ignored.
    const auto& c = model.convnet.options;
    const auto& d = ConvNetSection().options;
    if (c.num_cells() != d.num_cells() || c.kernel_sizes() != d.kernel_sizes() ||
        c.strides() != d.strides() || c.paddings() != d.paddings() ||
        c.activation() != d.activation())
      return {
          "'model.convnet' is set, but model.encoder is none, which builds no ConvNet; set "
          "model.encoder: convnet, or remove model.convnet"};
    if (info.obs_dim > 0) return {};
    return {
        "'model.encoder' is none, but the env has no flat 'observation' entry (its 'pixels' "
        "are " +
        shape + "); set model.encoder: convnet"};
  }
  if (info.pixels_shape.empty())
    return {"'model.encoder' is " + model.encoder +
            ", but the env has no 3-D 'pixels' entry; set env.options.from_pixels: true and add "
            "the to_tensor_image transform to env.transforms"};
  // An env's own frames are [H, W, 3]: ToTensorImage turns them into [C, H, W].
  const auto& p = info.pixels_shape;
  if (p[2] <= 4 && p[0] > 4)
    return {"'model.encoder' is " + model.encoder +
            ", which reads [C, H, W] pixels, but the "
            "env's 'pixels' are " +
            shape +
            ", an [H, W, C] image; add the to_tensor_image "
            "transform to env.transforms"};
  try {
    auto options = model.convnet.options;
    modules::ConvNet(options.in_channels(p[0])).get()->output_shape(p[1], p[2]);
  } catch (const std::exception& e) {
    return {"'model.convnet' does not fit the env's " + shape + " pixels: " + e.what()};
  }
  return {};
}

}  // namespace

void check_task_fit(const RunConfig& config, const EnvInfo& info) {
  auto problems = model_input_problems(config, info);
  if (const AlgorithmInfo* algo = find_algorithm(config.algo.name); algo && algo->check)
    for (auto& p : algo->check(config, info)) problems.push_back(std::move(p));
  if (problems.empty()) return;
  throw ConfigError(
      detail::problems_message("the config does not suit the task " + info.name, problems));
}

}  // namespace tdrl::apps
