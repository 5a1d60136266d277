#pragma once

/// Trainer: the one generic training loop of every algorithm.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tdrl/apps/checkpoint_store.h>
#include <tdrl/apps/config.h>
#include <tdrl/apps/env_parts.h>
#include <tdrl/apps/metrics.h>
#include <tdrl/apps/metrics_backends.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/apps/run_dir.h>
#include <tdrl/collectors/collector.h>

namespace spdlog {
class logger;
}  // namespace spdlog

namespace tdrl::envs {
class RandomShift;
}  // namespace tdrl::envs

namespace tdrl::apps {

namespace detail {
class UpdateStep;
class ReplayFrames;
}  // namespace detail
class VideoWriter;

/// Evaluation episodes: mean and standard deviation of their returns in the env's own units
/// (before reward transforms; see kEpisodeRewardKey), their mean length in steps, and the mean
/// return after the reward transforms when the env carries kEpisodeRewardKey.
struct EvalResult {
  double mean = 0;
  double std = 0;
  double min = 0;
  double max = 0;
  int64_t episodes = 0;
  double mean_length = 0;
  std::optional<double> mean_transformed;
};

/// Sets LibTorch's intra-op threads to the config's `threads`: the one place the tools (training,
/// evaluation, collector workers) apply it, before they build networks.
void apply_threads(const RunConfig& config);

/// Runs `episodes` episodes of `actor` on `env` (unbatched) with
/// InteractionType::kDeterministic (categorical mode, TanhNormal's squashed mean) and no
/// gradient, each up to `max_steps` steps (-1: until done), the env seeded with `seed` first;
/// the same seed and weights give the same result. The actor runs where its parameters are (a
/// GPU): each observation goes there and the action comes back to the env's device. With
/// `video`, the first episode's frames (env.render() after the reset and after each step) are
/// written into it and it is closed. Throws ValueError for episodes < 1, and what render() and
/// the video throw (an env that does not draw, a file that cannot be written).
EvalResult evaluate(envs::EnvBase& env, tensordict::nn::TensorDictModuleBase& actor,
                    int64_t episodes, int64_t max_steps, uint64_t seed,
                    VideoWriter* video = nullptr);

/// The seeds of one run, all derived from the config's `seed` (derive_seeds) and recorded in
/// the run folder as seeds.yaml.
struct RunSeeds {
  /// Seeds the generator before the recipe builds its networks (initial weights).
  uint64_t networks = 0;
  /// The training envs (collector.set_seed).
  uint64_t envs = 0;
  /// The evaluation env at each evaluation (and tdrl-eval's default).
  uint64_t eval = 0;
  /// Seeds the generator after the build: minibatches, replay samples, policy sampling.
  uint64_t sampling = 0;
};

/// Every sub-seed of a run from its one seed, each from a stream of its own (splitmix64), so
/// the same seed gives the same run and changing one use never shifts another.
RunSeeds derive_seeds(int64_t seed);

/// Loads a checkpoint's "env" entry (RunState::env, BestState::env; checkpoint.h: running
/// statistics by name) into the envs' shared statistics; statistics without an entry keep
/// their values.
void load_env_state(const EnvState& env_state, const TensorDict& env);

/// When hooks run (see Trainer::add_hook).
enum class HookPoint {
  kBatch,       ///< after a batch is collected, before the optimisation
  kUpdate,      ///< after each gradient step
  kLog,         ///< after a metrics row is written (metrics() holds it)
  kEval,        ///< after an evaluation
  kCheckpoint,  ///< after a checkpoint is committed
  kEnd,         ///< when the run ends (also when stopped by a signal)
};

/// The generic loop: collector → (replay buffer) → epochs/minibatches of loss → backward →
/// gradient clipping → optimiser steps → target updates → priority updates; then policy
/// weights to the collector, exploration annealing, the learning-rate schedule, metrics,
/// periodic evaluation and checkpoints, until collector.total_frames.
///
/// A run writes into its RunDir: config.yaml (the resolved config), train.log (spdlog),
/// metrics.csv (frames, episodes, train_return and train_episode_length, eval_return,
/// eval_std and eval_episode_length, with env.transforms also train_return_transformed and
/// eval_return_transformed; then updates, fps, wall_time, the session's seconds spent collecting /
/// optimising / evaluating and checkpointing, lr, then one column per entry the loss declares in
/// out_keys(), each the mean over the updates since the last row), learning_curve.svg and .png (at
/// each checkpoint and at the end) and checkpoints/ (checkpoint.h). The Trainer throws KeyError at
/// construction when an optimiser group names a term the loss does not declare.
///
/// Reliability: SIGINT/SIGTERM (StopSignal) end the run after the current batch with a
/// checkpoint; resume() continues from the last checkpoint (frames, buffer, optimisers,
/// normalisation, metrics rows after it are dropped). A non-finite loss stops the run with a
/// tensordict::ValueError naming the term and the frame count; the last checkpoint is kept
/// (no checkpoint is written after it).
///
/// Example:
/// ```
/// tdrl::apps::register_builtin_components();
/// auto config = load_config("configs/ppo_cartpole.yaml");
/// Trainer::check(config);  // before the run folder exists
/// Trainer trainer(config, RunDir::create("runs", config.run_name()));
/// trainer.add_hook(HookPoint::kLog, [](Trainer& t) { my_logger(t.metrics()); });
/// trainer.train();
/// ```
class Trainer {
 public:
  /// Builds the envs and the recipe (seeding LibTorch's generator with the run's network seed,
  /// as the Trainer does) and checks that the config suits the task and that the recipe built
  /// every part and uses the options it was given, without touching the disk: call it before
  /// creating the run folder. Throws ConfigError naming the keys (or the algorithm).
  static EnvParts check(const RunConfig& config);
  /// Builds the envs, the recipe (acting then learning part, after seeding the generator with
  /// the networks seed) and the collector, and writes config.yaml and seeds.yaml. With
  /// `resume`, loads the last checkpoint of `run` (std::runtime_error when there is none).
  Trainer(RunConfig config, RunDir run, bool resume = false);
  ~Trainer();

  /// Runs until total_frames (or a stop signal). Returns true when total_frames was reached,
  /// false when stopped early by a signal. An error (a lost worker, an evaluation or hook that
  /// throws, a non-finite loss) is logged to train.log and rethrown; before that, the state
  /// reached is checkpointed unless the error is a non-finite loss or the weights are not
  /// finite (then the last good checkpoint stays the latest).
  bool train();
  /// Evaluates the current actor with the config's eval settings.
  EvalResult evaluate_now();
  /// Writes a checkpoint now; returns its folder.
  std::string checkpoint();

  void add_hook(HookPoint point, std::function<void(Trainer&)> hook);

  /// A minibatch as the losses read it: with train.random_shift, a shallow copy whose "pixels"
  /// and ("next", "pixels") (those present) are shifted, each image and key by its own draw
  /// (envs::RandomShift); else `minibatch` itself. `minibatch` is not changed.
  TensorDict loss_input(const TensorDict& minibatch) const;

  int64_t frames() const { return frames_; }
  int64_t updates() const { return updates_; }
  int64_t episodes() const { return episodes_; }
  const RunConfig& config() const { return config_; }
  const RunSeeds& seeds() const { return seeds_; }
  const RunDir& run_dir() const { return run_; }
  Recipe& recipe() { return *recipe_; }
  collectors::CollectorBase& collector() { return *collector_; }
  /// The last collected batch (during kBatch hooks).
  const TensorDict& batch() const { return batch_; }
  /// The last metrics row (during kLog hooks).
  const std::map<std::string, double>& metrics() const { return metrics_; }

 private:
  // What check() does, building the envs into `env` (the Trainer's own, so that the recipe is
  // built against the EnvInfo the run keeps) and returning the recipe with both parts checked.
  static std::unique_ptr<Recipe> check_and_build(const RunConfig& config, EnvParts& env);
  // The batch's updates (optimize_batch), then check_finite.
  void optimize(const TensorDict& batch);
  void optimize_batch(const TensorDict& batch);
  void update_on(const TensorDict& minibatch);
  // Throws when a minimised loss term was non-finite in an update of this batch (read once per
  // batch: the updates themselves never wait for the device).
  void check_finite(int64_t first_update);
  void record_episodes(const TensorDict& batch);
  void log_row(double fps, const std::optional<EvalResult>& eval);
  // One row being filled: the values so far, and what the row's call was given.
  struct MetricsRow {
    std::map<std::string, double> values;
    double fps = 0;
    const EvalResult* eval = nullptr;  // the evaluation of this row, if any
  };
  // A part of the run that writes metrics: the columns it declares, in order, and how it fills
  // them for a row of a trainer (a column it leaves out of a row is empty there).
  struct MetricsPart {
    std::string name;
    std::vector<std::string> columns;
    std::function<void(Trainer&, MetricsRow&)> fill;
  };
  // The parts of a run of `config` with `recipe` (a static declaration: Trainer::check reads
  // the columns before any run exists).
  static std::vector<MetricsPart> metrics_parts(const RunConfig& config, const Recipe& recipe);
  // The parts' columns in order; ConfigError when two parts declare the same column (a loss
  // entry named like a run column).
  static std::vector<std::string> metric_columns(const std::vector<MetricsPart>& parts);
  void truncate_metrics();
  double wall_time() const;
  void save_checkpoint_files(const std::string& dir);
  // Saves the actor and env statistics to checkpoints/best when `result` beats the best so far.
  void keep_if_best(const EvalResult& result);
  void load_checkpoint_files(const std::string& dir);
  void run_hooks(HookPoint point);
  void apply_lr_schedule();
  void write_curve();
  // After an error inside train(): logs it, keeps the state reached when it is sound, stops the
  // collector.
  void keep_after_error(const std::exception& error);

  RunConfig config_;
  torch::Device device_ = torch::kCPU;  // config_.device
  RunDir run_;
  RunSeeds seeds_;
  EnvParts env_;
  std::unique_ptr<Recipe> recipe_;
  std::unique_ptr<collectors::CollectorBase> collector_;
  std::unique_ptr<CheckpointStore> checkpoints_;
  std::unique_ptr<MetricsWriter> metrics_writer_;
  std::vector<std::unique_ptr<MetricsBackend>> metrics_backends_;  // logger.backends besides csv
  std::shared_ptr<envs::EnvBase> eval_env_;
  std::vector<tensordict::NestedKey> replay_keys_;  // the entries stored in the replay buffer
  // The env's frame stacks, stored single in the replay buffer and stacked again on sampling.
  std::unique_ptr<detail::ReplayFrames> replay_frames_;
  std::map<HookPoint, std::vector<std::function<void(Trainer&)>>> hooks_;
  TensorDict batch_;
  std::map<std::string, double> metrics_;
  std::vector<MetricsPart> metrics_parts_;
  std::unique_ptr<detail::UpdateStep> update_;  // the gradient update and its running sums
  // train.random_shift of "pixels" and ("next", "pixels"); null when off.
  std::shared_ptr<envs::RandomShift> random_shift_;
  // An episode's return in the env's units, its return after reward transforms, its length.
  struct EpisodeTally {
    double env_return = 0;
    double transformed = 0;
    int64_t length = 0;
  };
  std::map<int64_t, EpisodeTally> running_;   // by trajectory id
  std::vector<double> recent_returns_;        // the last 20 finished episodes (env units)
  std::vector<EpisodeTally> batch_episodes_;  // episodes finished in the last batch
  std::optional<double> best_eval_;  // the best evaluation return, once known (checkpoints/best)
  std::vector<std::pair<double, double>> train_curve_;
  std::vector<std::pair<double, double>> eval_curve_;
  std::vector<double> eval_std_;  // the std over episodes of each point of eval_curve_
  std::shared_ptr<spdlog::logger> logger_;
  std::chrono::steady_clock::time_point session_start_ = std::chrono::steady_clock::now();
  int64_t frames_ = 0;
  bool diverged_ = false;  // a loss term was non-finite: the state is not worth keeping
  int64_t updates_ = 0;
  int64_t episodes_ = 0;
  double wall_offset_ = 0;
  // Seconds of this session spent collecting (env + policy), optimising (loss, backward, steps,
  // targets, replay) and evaluating/checkpointing.
  struct {
    double collect = 0;
    double optimize = 0;
    double eval = 0;
  } times_;  // wall time of earlier sessions of a resumed run
};

}  // namespace tdrl::apps
