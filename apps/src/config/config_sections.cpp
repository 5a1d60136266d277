// The declarations of the training config's sections: every key, its range and its doc, once.
// docs/config.md is generated from these (tdrl-train --config-reference).

#include <tdrl/apps/config.h>

#include <tdrl/apps/metrics_backends.h>
#include <tdrl/apps/progress.h>
#include <tdrl/apps/registry.h>
#include <tdrl/envs/registry.h>
#include <tdrl/envs/transforms/image.h>
#include <tdrl/modules/mlp_options.h>

#include "config/config_text.h"
#include "training/collector_modes.h"
#include "training/recipe_parts.h"

namespace tdrl::apps {

namespace {
// Far above any real run, far below what a conversion to milliseconds or frames overflows.
constexpr double kMaxSeconds = 1e7;
constexpr double kMaxThreads = 1024;

// model.core's choices: "mlp", then the recurrent cores.
std::vector<std::string> core_names() {
  std::vector<std::string> names{"mlp"};
  for (const auto& n : modules::recurrent_core_names()) names.push_back(n);
  return names;
}

// A choice section's choose(): the registered component `info` (null when `choice` names
// none, which leaves the section empty) sets the section's name and fresh options.
template <class Info, class Options>
bool choose_registered(const Info* info, const std::string& choice, std::string& name,
                       std::shared_ptr<Options>& options) {
  options.reset();
  if (!info) return false;
  name = choice;
  options = info->make_config();
  return true;
}

}  // namespace

void ReplaySection::fields(FieldVisitor& v) {
  v("capacity", capacity, at_least(1), "transitions kept");
  v("batch_size", batch_size, at_least(1), "transitions per gradient step");
  v("prioritized", prioritized, "prioritized replay (priorities from td_error)");
  priority.fields(v);
  v("device", device, torch_device({"auto"}),
    "where the buffer lives: the training device or cpu; auto: the training device when the "
    "full buffer takes at most a quarter of its memory, else cpu");
}

namespace {

// Why a registered name may be missing: it comes from a plugin not loaded yet.
std::string plugin_hint(const std::string& what) {
  return "did you forget --plugin? the " + what +
         "s of a plugin are there once it is loaded: --plugin libyours.so, or plugins: "
         "[libyours.so] in the config";
}

}  // namespace

void AlgoSection::fields(FieldVisitor& v) {
  v.required()("name", name, one_of(algorithm_names()).because(plugin_hint("algorithm")),
               "the algorithm");
  if (options) options->fields(v);
}

bool AlgoSection::choose(const std::string& choice) {
  return choose_registered(find_algorithm(choice), choice, name, options);
}

std::vector<std::string> AlgoSection::choices() const { return algorithm_names(); }

void TransformSection::fields(FieldVisitor& v) {
  v.required()("type", type, one_of(transform_types()).because(plugin_hint("transform")),
               "the transform");
  if (options) options->fields(v);
}

bool TransformSection::choose(const std::string& choice) {
  return choose_registered(find_transform(choice), choice, type, options);
}

std::vector<std::string> TransformSection::choices() const { return transform_types(); }

void EnvSection::fields(FieldVisitor& v) {
  v.required()("name", name, one_of(envs::list_envs()).because(plugin_hint("env")),
               "registered env name (tdrl-envs lists them)");
  v("num_envs", num_envs, in_range(1, 65536), "sub-envs stepped as one batched env");
  v("parallel", parallel, "step sub-envs on threads (ParallelEnv) instead of one after the other");
  if (options) {
    v.section("options", *options, "the task's options (the env's own declaration, see below)");
  } else {
    v("options", free_options,
      "task options passed to make_env (an env that declares none: a map of scalars)");
  }
  v.section_list("transforms", transforms,
                 "transforms applied in order, each {type: <name>, ...} (see below)");
}

bool EnvSection::choose(const std::string& choice) {
  options.reset();
  if (!envs::is_env_registered(choice)) return false;
  name = choice;
  options = envs::env_options_declaration(choice);
  return true;
}

std::vector<std::string> EnvSection::choices() const { return envs::list_envs(); }

void ModelSection::fields(FieldVisitor& v) {
  v("actor_cells", actor_cells, at_least(1), "hidden widths of the actor (or Q-network for dqn)");
  v("critic_cells", critic_cells, at_least(1), "hidden widths of the critic");
  layers.fields(v);
  v("init", init, one_of(detail::init_names()),
    "weights: LibTorch's default, or orthogonal (gain sqrt(2) for the hidden layers; 0.01 for a "
    "policy's last layer, 1 otherwise) with zero biases, as SB3 and CleanRL initialise PPO");
  v("core", core, one_of(core_names()),
    "mlp, or a recurrent core (lstm, gru) that reads the observation before the networks, one "
    "for the actor and one for the critic (ppo, a2c)");
  recurrent.fields(v);
  v("encoder", encoder, one_of({"none", "convnet"}),
    "none: the networks read the flat observation; convnet: each network has a ConvNet "
    "(model.convnet) reading the [C, H, W] 'pixels' entry (uint8 scaled by 1/255) and reads its "
    "features");
  v("share_encoder", share_encoder,
    "ppo, a2c: one encoder for the actor and the critic, trained by both losses (SB3's "
    "share_features_extractor); false: one each");
  v.section("convnet", convnet, "the pixel encoder's convolutions (model.encoder: convnet)");
}

void CollectorSection::fields(FieldVisitor& v) {
  v.requiring({"total_frames"}, [&] { limits.fields(v); });
  v("mode", mode, one_of(detail::collector_mode_names()),
    "one Collector, MultiSync/MultiAsync worker threads, or worker processes");
  workers.fields(v);
  v("launch_workers", launch_workers,
    "distributed: start the workers on this host (else start them by hand)");
}

void OptimSection::fields(FieldVisitor& v) {
  optimizer.fields(v);
  v("actor_lr", actor_lr, greater_than(0).or_exactly(-1),
    "actor learning rate of ddpg, td3, sac (-1: lr)");
  v("critic_lr", critic_lr, greater_than(0).or_exactly(-1),
    "critic learning rate of ddpg, td3, sac (-1: lr)");
  v("max_grad_norm", max_grad_norm, at_least(0), "clip the gradient norm (0: off)");
  v("lr_schedule", lr_schedule, one_of(detail::lr_schedule_names()),
    "linear: decay to 0 at total_frames");
}

void TrainSection::fields(FieldVisitor& v) {
  v("cuda_graph", cuda_graph,
    "capture each gradient update (loss, backward, clipping, optimiser steps, soft target "
    "update) once as a CUDA graph and replay it: device cuda and optim.name adam only");
  v.section("random_shift", random_shift,
            "DrQ's random shift of the pixels (and next pixels) of every minibatch the losses "
            "read (envs::RandomShift; model.encoder convnet)");
}

void RandomShiftSection::fields(FieldVisitor& v) {
  // The library's options declare the field; the visitor reads and writes it through them.
  envs::RandomShiftOptions options(pad);
  options.fields(v);
  pad = options.pad();
}

void LoggerSection::fields(FieldVisitor& v) {
  v("dir", dir, non_empty(), "folder of the run folders");
  v("progress", progress, one_of(progress_mode_names()),
    "terminal output: a progress bar on a TTY, periodic lines otherwise");
  v("interval_s", interval_s, in_range(0.01, kMaxSeconds), "seconds between log lines");
  v("backends", backends, one_of(metrics_backend_names()),
    "where the metrics go: metrics.csv (always written), metrics.jsonl, TensorBoard event "
    "files in the run folder");
}

void EvalSection::fields(FieldVisitor& v) {
  v("interval_frames", interval_frames, at_least(0),
    "evaluate every this many frames (0: only at the end)");
  v("episodes", episodes, in_range(1, 100000), "deterministic evaluation episodes");
  v("max_steps", max_steps, at_least(1).or_exactly(-1),
    "step limit per evaluation episode (-1: the env's)");
  v("video", video,
    "record each evaluation's first episode as videos/eval-<frames>.mp4 (the env must draw); "
    "the tensorboard backend also gets a GIF of it (eval/video)");
  v("video_fps", video_fps, in_range(1, 1000), "frames per second of the videos");
}

void CheckpointSection::fields(FieldVisitor& v) {
  v("interval_frames", interval_frames, at_least(0),
    "checkpoint every this many frames (0: only at the end and on SIGINT/SIGTERM)");
  v("save_replay", save_replay, "include the replay buffer in checkpoints");
}

void RunConfig::fields(FieldVisitor& v) {
  v("name", name, "run name (default: <algo>_<env>); the run folder is runs/<name>-<time>");
  v("seed", seed, at_least(0),
    "the one seed of the run: networks, envs, evaluation and sampling seeds derive from it");
  v("threads", threads, in_range(1, kMaxThreads), "LibTorch intra-op threads");
  v("device", device, torch_device(),
    "where training runs: the networks, the loss and its target networks, the optimisers' "
    "state, advantages and TD targets, and the collector's policy (envs step on the CPU)");
  declare_plugins(v, plugins);
  v.section("env", env, "the task");
  v.section("model", model, "the networks");
  v.section("algo", algo, "the algorithm; its keys depend on algo.name (see below)");
  v.section("collector", collector, "data collection");
  if (ReplaySection* r = algo.options ? algo.options->replay() : nullptr)
    v.section("replay", *r, "the replay buffer (algorithms with one)");
  v.section("optim", optim, "the optimisers");
  v.section("train", train, "the gradient updates");
  v.section("logger", logger, "terminal output and the run folder");
  v.section("eval", eval, "deterministic evaluation");
  v.section("checkpoint", checkpoint, "checkpoints");
}

void RunConfig::declare_plugins(FieldVisitor& v, std::vector<std::string>& plugins) {
  v("plugins", plugins, non_empty(),
    "shared libraries that register components (tdrl-train --plugin adds to it)");
}

std::string RunConfig::run_name() const { return name.empty() ? algo.name + "_" + env.name : name; }

}  // namespace tdrl::apps
