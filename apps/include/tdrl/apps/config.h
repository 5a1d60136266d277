#pragma once

/// The training configuration: one typed struct per YAML section, each declaring its fields
/// once (config_fields.h). Loading turns a YAML file plus `--set` overrides into a RunConfig,
/// validating everything at once; `to_yaml` writes the resolved config.yaml; docs/config.md is
/// generated from the same declarations (`config_reference_markdown`).
///
/// Validation on load, every problem reported together in one ConfigError, each naming the
/// full key path and where the value came from ("cfg.yaml line 12" or "--set a.b=c"):
/// - an unknown key, with the closest known keys ("did you mean 'algo.gamma'?"), and for a key
///   of another algorithm, which one ("an option of td3 only");
/// - a wrong type ("'optim.lr' (line 20) must be a float, got 'fast'");
/// - a value out of its range ("'collector.frames_per_batch' (line 9) is -64; it must be
///   >= 1") or not among its choices (the choices, closest first);
/// - a missing required key; a key given twice; an unknown algorithm, env or transform (the
///   registered names, closest first).
/// Values by type: bool takes true/false (True, TRUE, False, FALSE); int a whole number
/// ("1e6" and "2.0" are refused, with the integer to write; never narrowed); float any finite
/// number; string any scalar; numbers and bools in quotes are strings. An empty value of a
/// list or map means the empty list or map.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tdrl/apps/config_fields.h>
#include <tdrl/collectors/collection_limits.h>
#include <tdrl/collectors/distributed_options.h>
#include <tdrl/modules/convnet_options.h>
#include <tdrl/modules/mlp_options.h>
#include <tdrl/modules/optimizer_choice.h>
#include <tdrl/modules/recurrent_options.h>
#include <tdrl/replay/prioritized_sampler_options.h>

namespace tdrl::apps {

/// `replay:` (algorithms with a replay buffer only).
struct ReplaySection : Section {
  int64_t capacity = 1'000'000;
  int64_t batch_size = 256;
  bool prioritized = false;
  /// The prioritized sampler's options (alpha, beta, eps, max_priority: its declared fields).
  replay::PrioritizedSamplerOptions priority{0.6, 0.4};
  /// "auto": the training device when the full buffer takes at most a quarter of its memory
  /// (the CPU for a CPU run), else the CPU; or a device ("cpu", the training device).
  std::string device = "auto";
  void fields(FieldVisitor& v) override;
};

/// The `algo:` options of one algorithm (registered with register_algorithm). The section's
/// `name` selects which.
class AlgoConfig : public Section {
 public:
  /// The replay section the algorithm reads (it then appears in the config as `replay:`), or
  /// null for algorithms without a replay buffer.
  virtual ReplaySection* replay() { return nullptr; }
};

/// `algo:`: `name` chooses the registered algorithm, whose AlgoConfig holds the other keys.
struct AlgoSection : ChoiceSection {
  std::string name;
  std::shared_ptr<AlgoConfig> options;
  void fields(FieldVisitor& v) override;
  bool choose(const std::string& choice) override;
  const char* choice_key() const override { return "name"; }
  std::vector<std::string> choices() const override;
  std::unique_ptr<ChoiceSection> make_empty() const override {
    return std::make_unique<AlgoSection>();
  }
};

/// One element of `env.transforms`: `type` chooses the registered transform, whose options
/// section holds the other keys.
struct TransformSection : ChoiceSection {
  std::string type;
  std::shared_ptr<Section> options;
  void fields(FieldVisitor& v) override;
  bool choose(const std::string& choice) override;
  const char* choice_key() const override { return "type"; }
  std::vector<std::string> choices() const override;
  std::unique_ptr<ChoiceSection> make_empty() const override {
    return std::make_unique<TransformSection>();
  }
};

/// `env:`. `name` chooses the registered env; `options` are the task options it declares
/// (envs::register_env with a declaration: the built-in tasks' Options structs), parsed,
/// range-checked and documented from that declaration. An env registered with option names only
/// takes `options` as a free map of scalars instead (`free_options`), checked by its factory.
struct EnvSection : ChoiceSection {
  std::string name;
  int64_t num_envs = 1;
  bool parallel = false;
  /// The declared task options of `name` (null: none declared, see free_options).
  std::shared_ptr<Section> options;
  /// `env.options` of an env registered without a declaration.
  ScalarMap free_options;
  SectionListOf<TransformSection> transforms;
  void fields(FieldVisitor& v) override;
  bool choose(const std::string& choice) override;
  const char* choice_key() const override { return "name"; }
  std::vector<std::string> choices() const override;
  std::unique_ptr<ChoiceSection> make_empty() const override {
    return std::make_unique<EnvSection>();
  }
};

/// `model.convnet:` the pixel encoder's convolutions (ConvNetOptions' declared fields; the
/// input channels come from the images). The default is the Nature DQN / SB3 NatureCNN
/// stack: 32, 64, 64 channels, kernels 8, 4, 3, strides 4, 2, 1, ReLU.
struct ConvNetSection : Section {
  modules::ConvNetOptions options = modules::ConvNetOptions(1)
                                        .num_cells({32, 64, 64})
                                        .kernel_sizes({8, 4, 3})
                                        .strides({4, 2, 1})
                                        .activation("relu");
  void fields(FieldVisitor& v) override { options.fields(v); }
};

/// `model:`.
struct ModelSection : Section {
  std::vector<int64_t> actor_cells{64, 64};
  std::vector<int64_t> critic_cells{64, 64};
  /// The hidden layers' settings (activation, layer_norm: MLPOptions' declared fields); the
  /// sizes are set per network.
  modules::MLPOptions layers{1, 1};
  std::string init = "default";
  /// "mlp": the networks read the observation; "lstm" / "gru": a recurrent core reads it and
  /// the networks read its output (make_recurrent_core), one for the actor and one for the
  /// critic.
  std::string core = "mlp";
  /// The recurrent core's settings (hidden_size, num_layers: RecurrentModuleOptions' declared
  /// fields); the input size and keys are set per network.
  modules::RecurrentModuleOptions recurrent{1, 64};
  /// "none": the networks (or the core) read the flat "observation"; "convnet": each network
  /// has a ConvNet (`convnet`) reading the `[C, H, W]` "pixels" entry, whose features the
  /// network (or the core) reads (see network_input in models.h).
  std::string encoder = "none";
  /// ppo, a2c: the actor and the critic read one encoder (SB3's share_features_extractor,
  /// TorchRL's ActorValueOperator), trained by both losses; false: one encoder each.
  bool share_encoder = false;
  ConvNetSection convnet;
  void fields(FieldVisitor& v) override;
};

/// `collector:`.
struct CollectorSection : Section {
  /// The collector's own limits (frames_per_batch, total_frames, init_random_frames,
  /// max_frames_per_traj), total_frames required.
  collectors::CollectionLimits limits = collectors::CollectionLimits().frames_per_batch(1000);
  std::string mode = "single";
  /// The workers (num_workers, also of the sync and async modes) and where the distributed
  /// mode's trainer and workers meet (address, port, timeout_s): the collector's own options.
  collectors::DistributedOptions workers;
  bool launch_workers = true;
  void fields(FieldVisitor& v) override;
};

/// `optim:`.
struct OptimSection : Section {
  /// The optimiser and its shared options (name, lr, weight_decay, eps): modules::make_optimizer
  /// builds it.
  modules::OptimizerChoice optimizer;
  double actor_lr = -1;
  double critic_lr = -1;
  double max_grad_norm = 0;
  std::string lr_schedule = "constant";
  void fields(FieldVisitor& v) override;
};

/// `logger:`.
struct LoggerSection : Section {
  std::string dir = "runs";
  std::string progress = "auto";
  double interval_s = 10;
  std::vector<std::string> backends{"csv"};
  void fields(FieldVisitor& v) override;
};

/// `eval:`.
struct EvalSection : Section {
  int64_t interval_frames = 0;
  int64_t episodes = 10;
  int64_t max_steps = -1;
  bool video = false;
  int64_t video_fps = 30;
  void fields(FieldVisitor& v) override;
};

/// `checkpoint:`.
struct CheckpointSection : Section {
  int64_t interval_frames = 0;
  bool save_replay = true;
  void fields(FieldVisitor& v) override;
};

/// `train.random_shift:` DrQ's random shift of each minibatch's pixels (envs::RandomShift;
/// its options' declared fields, kept here as values so that this header stays light).
struct RandomShiftSection : Section {
  /// envs::RandomShiftOptions::pad; 0 (the default here): no augmentation.
  int64_t pad = 0;
  void fields(FieldVisitor& v) override;
};

/// `train:`: how the updates run.
struct TrainSection : Section {
  bool cuda_graph = false;
  RandomShiftSection random_shift;
  void fields(FieldVisitor& v) override;
};

/// The whole run: top-level keys and sections.
struct RunConfig : Section {
  std::string name;
  int64_t seed = 0;
  int64_t threads = 1;
  std::string device = "cpu";
  /// Shared libraries loaded before the config is read (tdrl-train --plugin); recorded so that
  /// --resume and tdrl-eval load them again.
  std::vector<std::string> plugins;
  EnvSection env;
  ModelSection model;
  AlgoSection algo;
  CollectorSection collector;
  OptimSection optim;
  TrainSection train;
  LoggerSection logger;
  EvalSection eval;
  CheckpointSection checkpoint;
  void fields(FieldVisitor& v) override;

  /// The algorithm's replay section (null when it has none).
  const ReplaySection* replay() const { return algo.options ? algo.options->replay() : nullptr; }
  /// `name`, or `<algo>_<env>` when empty.
  std::string run_name() const;
  /// The `plugins:` field, declared once for fields() and for plugins_of (which reads it alone,
  /// before the plugins are loaded).
  static void declare_plugins(FieldVisitor& v, std::vector<std::string>& plugins);
};

/// Loads and validates a YAML file, then applies `overrides` ("path=value"; the value is YAML:
/// "model.actor_cells=[256, 256]", "algo={name: ppo, gamma: 0.9}"). The last override of a key
/// wins. Names (algorithms, transforms, envs) are checked against the registries, so register
/// user components (and load plugins) first. Throws ConfigError when the file cannot be read,
/// is not valid YAML, or has any problem (all of them, one per line).
RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});
/// As load_config, from YAML text; `source` names it in messages.
RunConfig load_config_string(const std::string& yaml,
                             const std::vector<std::string>& overrides = {},
                             const std::string& source = "<string>");

/// A shared library listed in a config file's `plugins:`, and the line listing it (1-based).
struct ListedPlugin {
  std::string path;
  int64_t line = 0;
};

/// The `plugins:` list of a config file, read without validating the rest (plugins must load
/// before the file's algorithm names can be checked). Empty when absent. Throws ConfigError
/// when the file cannot be read or the list is not a list of strings.
std::vector<ListedPlugin> plugins_of(const std::string& path);

/// The resolved config (every key, defaults included) as YAML; loading it back gives the same
/// RunConfig. Each value carries its doc as a trailing comment.
std::string to_yaml(const RunConfig& config);

/// docs/config.md: every section and key with type, default, range and doc, including each
/// registered algorithm's section and each registered transform's keys.
std::string config_reference_markdown();

}  // namespace tdrl::apps
