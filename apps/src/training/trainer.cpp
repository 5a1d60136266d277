#include <tdrl/apps/trainer.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/collectors/distributed_collector.h>
#include <tdrl/collectors/multi_collector.h>
#include <tdrl/envs/transforms/image.h>
#include <tdrl/modules/optimizer_state.h>
#include <tdrl/specs/keys.h>
#include <tensordict/errors.h>
#include <tensordict/nn/interaction_type.h>

#include <tdrl/apps/checkpoint.h>
#include <tdrl/apps/learning_curve.h>
#include <tdrl/apps/progress.h>
#include <tdrl/apps/registry.h>
#include <tdrl/apps/stop_signal.h>
#include <tdrl/apps/video.h>

#include "config/config_text.h"
#include "run/file_util.h"
#include "training/collector_modes.h"
#include "training/recipe_parts.h"
#include "training/replay_frames.h"
#include "training/update_step.h"

namespace tdrl::apps {

namespace fs = std::filesystem;
using tensordict::NestedKey;

std::vector<std::string> Trainer::metric_columns(const std::vector<MetricsPart>& parts) {
  std::vector<std::string> columns;
  for (const auto& part : parts) {
    for (const auto& column : part.columns) {
      if (std::find(columns.begin(), columns.end(), column) != columns.end())
        throw ConfigError("the metrics column '" + column + "' would be written twice (by " +
                          part.name + " and a part before it); rename the loss's out key '" +
                          column +
                          "' (the run's columns are frames, episodes, returns, timing, "
                          "lr, the loss's entries, grad_norm_<group>, updates_per_frame)");
      columns.push_back(column);
    }
  }
  return columns;
}

namespace {

// Each group minimises terms the loss declares (a misspelt term would silently train nothing).
// The learning part a recipe built: a loss, at least one optimiser group, each with an
// optimiser and terms the loss writes. A part left empty is refused naming the algorithm (a
// plugin's recipe would otherwise crash the loop).
void check_learning_parts(const RunConfig& config, const Recipe& recipe) {
  const std::string& algo = config.algo.name;
  const std::string who = "the recipe of algorithm '" + algo + "'";
  TDRL_CHECK(recipe.loss, ConfigError, who,
             " built no loss (Recipe::loss is empty after build_learning); its build_learning "
             "must set loss");
  TDRL_CHECK(!recipe.optimizers.empty(), ConfigError, who,
             " built no optimiser group (Recipe::optimizers is empty after build_learning); its "
             "build_learning must add one, e.g. {\"all\", optimiser over loss->parameters()}");
  const auto& groups = recipe.optimizers;
  for (const auto& g : groups) {
    TDRL_CHECK(g.optimizer, ConfigError, who, ": optimiser group '", g.name,
               "' has no optimizer; set OptimizerGroup::optimizer in build_learning");
    // Checkpoints store the optimiser's state as tensors: a kind without that layout is
    // refused now rather than at the first checkpoint.
    try {
      modules::optimizer_state(*g.optimizer);
    } catch (const tensordict::TypeError& e) {
      throw ConfigError(who + ": optimiser group '" + g.name + "': " + e.what());
    }
  }
  const auto declared = recipe.loss->loss_terms();
  for (const auto& g : groups)
    for (const auto& term : g.terms)
      TDRL_CHECK(std::find(declared.begin(), declared.end(), term) != declared.end(),
                 tensordict::KeyError, "Trainer: optimiser group '", g.name, "' minimises '", term,
                 "', which the loss does not write; its loss terms are ",
                 tensordict::closest_names(term, declared));
  // Replay options the recipe would ignore are refused rather than silently dropped.
  if (const ReplaySection* r = config.replay()) {
    TDRL_CHECK(recipe.replay, ConfigError, "the config has a 'replay' section for algorithm '",
               algo, "', but ", who,
               " built no replay buffer (Recipe::replay is empty after "
               "build_learning); build one (e.g. from the replay section) or declare no replay "
               "section for the algorithm");
    TDRL_CHECK(!r->prioritized || recipe.updates_priorities(), ConfigError,
               "'replay.prioritized' is true, but ", who,
               " never updates priorities (Recipe::updates_priorities() is false); set "
               "replay.prioritized: false, or make the recipe sample by priority and update them");
  }
}

// The running statistics of the envs (VecNorm) by name, as tdrl-eval reads them.
TensorDict env_state_dict(const EnvState& env_state) {
  TensorDict out = TensorDict::empty({});
  for (const auto& [name, s] : env_state) {
    const auto sd = s->state_dict();
    if (!sd.keys().empty()) out.set(name, sd);
  }
  return out;
}

// The model and optimiser keys a config sets for a recipe that never read that section would
// be ignored: refused, naming them. The optimiser's clipping and schedule are the Trainer's.
void check_sections_read(const RunConfig& config, const RecipeContext& context) {
  const std::string who = "the recipe of algorithm '" + config.algo.name + "'";
  std::vector<std::string> problems;
  const auto refuse = [&](std::vector<std::string> keys, const char* section, const char* how) {
    if (keys.empty()) return;
    problems.push_back(detail::word_list(keys, "and", true) + (keys.size() == 1 ? " is" : " are") +
                       " set, but " + who + " never reads the " + section + " section (" + how +
                       "), so " + (keys.size() == 1 ? "it" : "they") +
                       " would be ignored; remove " + (keys.size() == 1 ? "it" : "them") +
                       ", or have the recipe read it");
  };
  if (!context.read_model()) {
    ModelSection model = config.model, defaults;
    refuse(detail::changed_keys(model, defaults, "model."), "model", "RecipeContext::model()");
  }
  if (!context.read_optim()) {
    // Clipping and the schedule are the Trainer's own: compared at their defaults.
    OptimSection optim = config.optim, defaults;
    optim.max_grad_norm = defaults.max_grad_norm;
    optim.lr_schedule = defaults.lr_schedule;
    refuse(detail::changed_keys(optim, defaults, "optim."), "optim", "RecipeContext::optim()");
  }
  if (!problems.empty())
    throw ConfigError(
        detail::problems_message("the config sets options " + who + " does not read", problems));
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

void apply_threads(const RunConfig& config) {
  torch::set_num_threads(static_cast<int>(config.threads));
}

// ---- evaluate --------------------------------------------------------------------------------

EvalResult evaluate(envs::EnvBase& env, tensordict::nn::TensorDictModuleBase& actor,
                    int64_t episodes, int64_t max_steps, uint64_t seed, VideoWriter* video) {
  TDRL_CHECK(!(episodes < 1), tensordict::ValueError, "evaluate: episodes is ",
             std::to_string(episodes), "; it must be >= 1");
  torch::NoGradGuard no_grad;
  tensordict::nn::SetInteractionType deterministic(tensordict::nn::InteractionType::kDeterministic);
  env.set_seed(seed);
  const torch::Device env_device = env.device();
  std::optional<torch::Device> actor_device;
  for (const auto& p : actor.parameters()) {
    if (p.device() != env_device) actor_device = p.device();
    break;
  }
  const auto act = [&](const TensorDict& td) {
    return actor_device ? actor.forward(td.to(*actor_device)).to(env_device) : actor.forward(td);
  };
  const auto mdp = envs::StepMdpOptions().action_key(env.action_key()).reward_key(env.reward_key());
  const NestedKey next_done({specs::kNext, specs::kDone});
  const NestedKey next_reward({specs::kNext, env.reward_key()});
  const NestedKey next_env_return({specs::kNext, kEpisodeRewardKey});
  std::vector<double> returns;
  std::vector<double> transformed;
  std::vector<double> lengths;
  bool has_env_return = false;
  // The first episode's frames, when recorded: one picture of the (first) sub-env per state.
  const auto record = [&](int64_t e) {
    if (!video || e > 0) return;
    const auto frames = env.render();
    video->write(frames.reshape({-1, frames.size(-3), frames.size(-2), 3})[0]);
  };
  for (int64_t e = 0; e < episodes; ++e) {
    TensorDict td = env.reset();
    record(e);
    double total = 0;
    int64_t length = 0;
    std::optional<torch::Tensor> env_return;
    for (int64_t t = 0; max_steps < 0 || t < max_steps; ++t) {
      td = env.step(act(td));
      record(e);
      total += td.get(next_reward).sum().item<double>();
      ++length;
      env_return = td.find(next_env_return);
      if (td.get(next_done).any().item<bool>()) break;
      td = envs::step_mdp(td, mdp);
    }
    // The env's own return when a RewardSum ahead of the reward transforms carries it.
    has_env_return = env_return.has_value();
    returns.push_back(env_return ? env_return->sum().item<double>() : total);
    transformed.push_back(total);
    lengths.push_back(static_cast<double>(length));
    if (video && e == 0) video->close();
  }
  EvalResult result;
  result.episodes = episodes;
  result.mean = mean_of(returns);
  result.mean_length = mean_of(lengths);
  result.min = *std::min_element(returns.begin(), returns.end());
  result.max = *std::max_element(returns.begin(), returns.end());
  if (has_env_return) result.mean_transformed = mean_of(transformed);
  double ss = 0;
  for (double r : returns) ss += (r - result.mean) * (r - result.mean);
  result.std = std::sqrt(ss / static_cast<double>(returns.size()));
  return result;
}

// ---- Trainer ---------------------------------------------------------------------------------

RunSeeds derive_seeds(int64_t seed) {
  // Each stream from its own constant, so that changing one use never shifts another.
  const auto stream = [seed](uint64_t k) { return splitmix64(static_cast<uint64_t>(seed) ^ k); };
  RunSeeds s;
  s.networks = stream(0x6e6574776f726b73ULL);
  s.envs = stream(0x656e7673ULL);
  s.eval = stream(0x6576616cULL);
  s.sampling = stream(0x73616d706c696e67ULL);
  return s;
}

std::string to_yaml(const RunSeeds& s) {
  std::ostringstream os;
  os << "# Seeds derived from the config's seed (Trainer, derive_seeds)\n"
     << "networks: " << s.networks << "\nenvs: " << s.envs << "\neval: " << s.eval
     << "\nsampling: " << s.sampling << "\n";
  return os.str();
}

namespace {

// `td` on `device`: itself when it is there already (the single collector's batches, a replay
// buffer on the training device), else one copy; a CPU batch bound for a GPU (worker
// collectors' batches, samples of a CPU buffer) through pinned memory without blocking, so the
// host goes on while it travels.
TensorDict on_device(const TensorDict& td, torch::Device device) {
  if (td.device() == std::optional<torch::Device>(device)) return td;
  bool on_cpu = device.is_cuda();
  for (const auto& [key, value] : td.items(true, true))
    if (const auto* t = std::get_if<torch::Tensor>(&value)) on_cpu = on_cpu && t->is_cpu();
  return on_cpu ? td.pin_memory().to(device, /*non_blocking=*/true) : td.to(device);
}

// The device keys together (each was checked alone when the config loaded): the replay buffer
// lives on the CPU or the training device, the distributed collector's weights travel over Gloo
// on the CPU, and train.cuda_graph needs a GPU, a CUDA build and adam.
void check_devices(const RunConfig& config) {
  const torch::Device device(config.device);
  std::vector<std::string> problems;
  if (const ReplaySection* replay = config.replay()) {
    if (replay->device != "auto" && replay->device != "cpu" &&
        torch::Device(replay->device) != device)
      problems.push_back("'replay.device' is '" + replay->device + "' and 'device' is '" +
                         config.device +
                         "'; the buffer lives on the CPU or the training device: "
                         "set replay.device to cpu, auto or " +
                         config.device);
  }
  if (config.collector.mode == "distributed" && !device.is_cpu())
    problems.push_back("'collector.mode' is distributed and 'device' is '" + config.device +
                       "'; the distributed collector sends the policy's weights over Gloo on the "
                       "CPU and runs with device: cpu only for now; use mode single, sync or "
                       "async on a GPU");
  if (config.train.cuda_graph) {
    if (!device.is_cuda())
      problems.push_back("'train.cuda_graph' is true and 'device' is '" + config.device +
                         "'; CUDA graphs need device: cuda (set train.cuda_graph: false)");
    else if (!detail::cuda_graphs_available())
      problems.push_back(
          "'train.cuda_graph' is true and this build of tdrl has no CUDA graphs "
          "(its LibTorch was built without CUDA); set train.cuda_graph: false");
    if (config.optim.optimizer.name() != "adam")
      problems.push_back("'train.cuda_graph' is true and 'optim.name' is '" +
                         config.optim.optimizer.name() +
                         "'; a captured update needs optim.name: adam (CapturableAdam keeps its "
                         "step on the device), or set train.cuda_graph: false");
  }
  if (config.collector.limits.total_frames() < 0 && config.optim.lr_schedule == "linear")
    problems.push_back(
        "'optim.lr_schedule' is linear, which decays to 0 at collector.total_frames, and "
        "'collector.total_frames' is -1 (never end); set collector.total_frames, or "
        "optim.lr_schedule: constant");
  if (!problems.empty())
    throw ConfigError(detail::problems_message(
        "the config's devices and train options do not fit together", problems));
}

}  // namespace

std::unique_ptr<Recipe> Trainer::check_and_build(const RunConfig& config, EnvParts& env) {
  check_devices(config);
  // A collector key the chosen mode would ignore (num_workers for single) is refused.
  if (const auto problems = detail::collector_mode_problems(config.collector); !problems.empty())
    throw ConfigError(
        detail::problems_message("the collector section does not fit its mode", problems));
  env = build_env_parts(config.env);
  check_task_fit(config, env.info);
  // The recipe, seeded as the run is: what it refuses (a part left empty, a replay option it
  // would ignore) is refused before the run folder holds anything.
  torch::manual_seed(derive_seeds(config.seed).networks);
  RecipeContext context = recipe_context(config, env.info);
  auto recipe = make_acting_recipe(config, context);
  // The envs carry the policy's state; the replay device is chosen again from frames counting it.
  carry_policy_state(env, recipe->policy_state);
  context.replay_device = recipe_context(config, env.info).replay_device;
  recipe->build_learning(context);
  check_learning_parts(config, *recipe);
  if (recipe->replay) {
    const auto probe = env.probe ? env.probe : env.eval_env_factory();
    const auto problems =
        detail::ReplayFrames::of(*probe).problems(config, recipe->sequence_length());
    if (!problems.empty())
      throw ConfigError(detail::problems_message(
          "the frame stacks (cat_frames) do not fit the replay buffer", problems));
  }
  check_sections_read(config, context);
  metric_columns(metrics_parts(config, *recipe));  // a loss entry named like a run column
  return recipe;
}

EnvParts Trainer::check(const RunConfig& config) {
  EnvParts env;
  check_and_build(config, env);
  return env;
}

Trainer::Trainer(RunConfig config, RunDir run, bool resume)
    : config_(std::move(config)), run_(std::move(run)), seeds_(derive_seeds(config_.seed)) {
  apply_threads(config_);
  // Everything that can be refused is, before a file of the run is written.
  recipe_ = check_and_build(config_, env_);
  if (!resume) {
    write_file_atomically(run_.file("config.yaml"), to_yaml(config_));
    write_file_atomically(run_.file("seeds.yaml"), to_yaml(seeds_));
  }
  auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(run_.file("train.log"));
  logger_ = std::make_shared<spdlog::logger>("tdrl.train." + run_.path(), sink);
  logger_->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  logger_->flush_on(spdlog::level::info);
  // Built on the CPU, the networks move to the training device before any optimiser step.
  device_ = torch::Device(config_.device);
  if (!device_.is_cpu()) {
    recipe_->loss->to(device_);
    recipe_->actor->to(device_);
    for (auto& [name, module] : recipe_->exploration_modules) module->to(device_);
  }
  update_ = std::make_unique<detail::UpdateStep>(*recipe_, config_.optim.max_grad_norm,
                                                 config_.train.cuda_graph);
  if (const int64_t pad = config_.train.random_shift.pad; pad > 0)
    random_shift_ = std::make_shared<envs::RandomShift>(envs::RandomShiftOptions(pad).in_keys(
        {NestedKey(specs::kPixels), NestedKey({specs::kNext, specs::kPixels})}));
  collector_ = detail::make_collector(config_.collector, env_, *recipe_, run_, device_);
  collector_->set_seed(seeds_.envs);
  // Minibatches, replay samples and the policy's own sampling draw from this stream.
  torch::manual_seed(seeds_.sampling);
  // The env probed for the task's shapes is an evaluation env: it is the one used.
  eval_env_ = env_.probe ? std::move(env_.probe) : env_.eval_env_factory();
  if (recipe_->replay) {
    replay_keys_ = eval_env_->fake_tensordict().keys(true, true);
    replay_keys_.push_back(collectors::traj_ids_key());
    if (recipe_->sequence_length() > 0) replay_keys_.push_back(stream_end_key());
    replay_frames_ = std::make_unique<detail::ReplayFrames>(detail::ReplayFrames::of(*eval_env_));
    if (!replay_frames_->empty()) {
      const auto streams = detail::collector_streams(config_.collector, config_.env.num_envs);
      TORCH_INTERNAL_ASSERT(streams, "the config check refuses cat_frames with async batches");
      replay_frames_->install(*recipe_->replay, *streams);
    }
  }
  checkpoints_ = std::make_unique<CheckpointStore>(run_.file("checkpoints"));
  if (resume) {
    // The newest checkpoint whose files are as written; damaged ones are named and skipped.
    std::vector<std::string> why;
    const auto intact = checkpoints_->latest_intact(&why);
    if (!intact) {
      std::string reasons;
      for (const auto& w : why) reasons += "; " + w;
      throw std::runtime_error(
          "--resume " + run_.path() + ": the run has no " +
          (why.empty() ? std::string("checkpoint to resume from (checkpoints/latest is missing); "
                                     "start a new run instead")
                       : "intact checkpoint to resume from" + reasons));
    }
    for (const auto& passed : intact->passed_over)
      logger_->warn("passed over a damaged checkpoint: {}", passed);
    load_checkpoint_files(intact->folder);
    truncate_metrics();
    logger_->info("resumed from {} at {} frames", intact->folder, frames_);
  } else {
    logger_->info("run {} ({} on {}), config:\n{}", run_.path(), config_.algo.name,
                  config_.env.name, to_yaml(config_));
  }
  if (!learning_curves_available())
    logger_->info(
        "no learning_curve.svg/png: this build of tdrl draws no pictures (configured without "
        "cairo); metrics.csv holds the same data");
  metrics_parts_ = metrics_parts(config_, *recipe_);
  const std::vector<std::string> columns = metric_columns(metrics_parts_);
  metrics_writer_ = std::make_unique<MetricsWriter>(run_.file("metrics.csv"), columns);
  for (const auto& name : config_.logger.backends)
    if (auto backend = make_metrics_backend(name, run_.path()))
      metrics_backends_.push_back(std::move(backend));
}

Trainer::~Trainer() {
  if (collector_) collector_->shutdown();
}

void Trainer::add_hook(HookPoint point, std::function<void(Trainer&)> hook) {
  hooks_[point].push_back(std::move(hook));
}

void Trainer::run_hooks(HookPoint point) {
  auto it = hooks_.find(point);
  if (it == hooks_.end()) return;
  for (auto& hook : it->second) hook(*this);
}

void Trainer::truncate_metrics() {
  // Rows written after the checkpoint describe batches that are collected again now.
  const auto path = run_.file("metrics.csv");
  if (!fs::exists(path)) return;
  apps::truncate_metrics(path, frames_);
  for (const auto& row : read_metrics(path)) {
    auto frames = row.find("frames");
    if (frames == row.end()) continue;
    auto train = row.find("train_return");
    if (train != row.end()) train_curve_.emplace_back(frames->second, train->second);
    auto eval = row.find("eval_return");
    if (eval != row.end()) {
      eval_curve_.emplace_back(frames->second, eval->second);
      auto std_dev = row.find("eval_std");
      eval_std_.push_back(std_dev == row.end() ? 0.0 : std_dev->second);
    }
  }
}

void Trainer::record_episodes(const TensorDict& batch) {
  // Read on the host: one copy of three small tensors per batch when training on a GPU.
  const auto rewards =
      batch.get({specs::kNext, specs::kReward}).reshape({-1}).to(torch::kCPU, torch::kFloat64);
  const auto done = batch.get({specs::kNext, specs::kDone}).reshape({-1}).cpu();
  const auto ids = batch.get(collectors::traj_ids_key()).reshape({-1}).cpu();
  const auto n = ids.numel();
  TDRL_CHECK(!(rewards.numel() != n || done.numel() != n), tensordict::ShapeError,
             "Trainer: the batch's (\"next\", \"reward\") / (\"next\", \"done\") do not have one "
             "value per step; the recipes expect a single reward per env step");
  const auto r = rewards.contiguous();
  const auto d = done.to(torch::kBool).contiguous();
  const auto id = ids.contiguous();
  const double* rp = r.data_ptr<double>();
  const bool* dp = d.data_ptr<bool>();
  const int64_t* ip = id.data_ptr<int64_t>();
  // The env's own running return, when a RewardSum ahead of the reward transforms writes it.
  torch::Tensor env_sums;
  if (auto sums = batch.find({specs::kNext, kEpisodeRewardKey})) {
    env_sums = sums->reshape({-1}).to(torch::kCPU, torch::kFloat64).contiguous();
    TDRL_CHECK(env_sums.numel() == n, tensordict::ShapeError, "Trainer: the batch's (\"next\", \"",
               kEpisodeRewardKey, "\") has ", std::to_string(env_sums.numel()), " values for ",
               std::to_string(n), " steps; it must hold one per step");
  }
  const double* sp = env_sums.defined() ? env_sums.data_ptr<double>() : nullptr;
  batch_episodes_.clear();
  for (int64_t i = 0; i < n; ++i) {
    EpisodeTally& running = running_[ip[i]];
    running.transformed += rp[i];
    running.env_return = sp ? sp[i] : running.transformed;
    ++running.length;
    if (dp[i]) {
      batch_episodes_.push_back(running);
      recent_returns_.push_back(running.env_return);
      running_.erase(ip[i]);
      ++episodes_;
    }
  }
  if (recent_returns_.size() > 20) {
    recent_returns_.erase(recent_returns_.begin(), recent_returns_.end() - 20);
  }
}

TensorDict Trainer::loss_input(const TensorDict& minibatch) const {
  if (!random_shift_) return minibatch;
  // Shifted copies: the batch (and the replay buffer) keep the frames as collected.
  return random_shift_->forward(minibatch.clone(/*recurse=*/false));
}

void Trainer::update_on(const TensorDict& minibatch) {
  std::vector<size_t> active;
  for (size_t i = 0; i < recipe_->optimizers.size(); ++i)
    if (updates_ % recipe_->optimizers[i].period == 0) active.push_back(i);
  const TensorDict seen = update_->run(loss_input(minibatch), active);
  if (recipe_->replay && recipe_->updates_priorities())
    recipe_->replay->update_tensordict_priority(seen);
  ++updates_;
  run_hooks(HookPoint::kUpdate);
}

void Trainer::check_finite(int64_t first_update) {
  const auto bad = update_->first_nonfinite();
  if (!bad) return;
  diverged_ = true;
  const auto last = checkpoints_->latest();
  throw tensordict::ValueError(
      "Trainer: the loss term '" + bad->first + "' is " + std::to_string(bad->second) +
      " (non-finite) in an update of the batch at " + std::to_string(frames_) +
      " frames (updates " + std::to_string(first_update) + " to " + std::to_string(updates_ - 1) +
      "); the run stops without writing a checkpoint. The last good checkpoint is " +
      (last ? *last : std::string("none")) +
      ". Lower optim.lr, set optim.max_grad_norm, or check the env's rewards");
}

void Trainer::optimize(const TensorDict& batch) {
  const int64_t first_update = updates_;
  optimize_batch(batch);
  check_finite(first_update);
}

void Trainer::optimize_batch(const TensorDict& batch) {
  if (recipe_->replay) {
    auto& replay = *recipe_->replay;
    // Only what the env wrote: random warm-up batches carry no policy outputs, and the storage
    // keeps the structure of its first write.
    auto data = batch.select(replay_keys_, /*strict=*/false);
    if (recipe_->sequence_length() > 0) {
      // Each env's stretch ends at the batch's last step (time is the last batch dim).
      auto end =
          torch::zeros(batch.batch_size(),
                       torch::dtype(torch::kBool).device(batch.device().value_or(torch::kCPU)));
      end.select(-1, -1).fill_(true);
      data.set(stream_end_key(), end);
    }
    replay.extend(replay_frames_->empty() ? data.reshape({-1}) : replay_frames_->to_rows(data));
    const auto learning_starts =
        std::max(config_.collector.limits.init_random_frames(), config_.replay()->batch_size);
    if (replay.size() < learning_starts) return;
    // Sequences (a recurrent network's) come flat from the sampler, slice after slice.
    const int64_t length = recipe_->sequence_length();
    for (int64_t u = 0; u < recipe_->updates_per_batch(); ++u) {
      auto sample = replay.sample();
      if (length > 0) sample = sample.reshape({-1, length});
      update_on(on_device(sample, device_));
    }
    return;
  }
  // The units a minibatch is drawn from: frames, or sequences of `length` steps.
  const int64_t time = batch.batch_size().back();
  int64_t length = recipe_->sequence_length();
  if (length < 0) length = time;
  if (length > 0 && time % length != 0)
    throw tensordict::ValueError("Trainer: the collected batch has " + std::to_string(time) +
                                 " steps per env, which sequences of " + std::to_string(length) +
                                 " steps do not divide; set algo.sequence_length to a divisor of " +
                                 std::to_string(time) +
                                 " (collector.frames_per_batch / env.num_envs)");
  const int64_t per_unit = std::max<int64_t>(length, 1);
  for (int64_t epoch = 0; epoch < recipe_->epochs_per_batch(); ++epoch) {
    recipe_->before_epoch(batch);
    const TensorDict units = length > 0 ? batch.reshape({-1, length}) : batch.reshape({-1});
    const int64_t n = units.batch_size()[0];
    const int64_t wanted = recipe_->minibatch_size() > 0 ? recipe_->minibatch_size() / per_unit : n;
    const int64_t size = std::clamp<int64_t>(wanted, 1, n);
    const auto perm = torch::randperm(n, torch::kInt64);
    for (int64_t start = 0; start + size <= n; start += size) {
      update_on(units.index({perm.slice(0, start, start + size)}));
    }
  }
}

void Trainer::apply_lr_schedule() {
  const double fraction =
      detail::lr_schedule_factor(config_.optim.lr_schedule, frames_, collector_->total_frames());
  for (auto& g : recipe_->optimizers) {
    for (auto& pg : g.optimizer->param_groups()) pg.options().set_lr(g.base_lr * fraction);
  }
}

EvalResult Trainer::evaluate_now() {
  // eval.video: the first episode of each evaluation, as videos/eval-<frames>.mp4 (and a GIF of
  // it in TensorBoard, with that backend).
  std::optional<VideoWriter> video;
  if (config_.eval.video) {
    const std::string dir = run_.file("videos");
    fs::create_directories(dir);
    char name[48];
    std::snprintf(name, sizeof(name), "eval-%012lld.mp4", static_cast<long long>(frames_));
    video.emplace(dir + "/" + name, config_.eval.video_fps);
    // TensorBoard shows videos as GIFs: a preview of the first kPreviewFrames frames.
    constexpr int64_t kPreviewWidth = 320;
    constexpr int64_t kPreviewFrames = 1000;
    for (const auto& backend : metrics_backends_)
      if (backend->takes_videos()) {
        video->keep_preview(kPreviewWidth, kPreviewFrames);
        break;
      }
  }
  auto result = evaluate(*eval_env_, *recipe_->actor, config_.eval.episodes, config_.eval.max_steps,
                         seeds_.eval, video ? &*video : nullptr);
  if (video && !video->preview_gif().empty()) {
    for (const auto& backend : metrics_backends_)
      backend->write_video(frames_, "eval/video", video->preview_gif(), video->preview_width(),
                           video->preview_height());
  }
  eval_curve_.emplace_back(static_cast<double>(frames_), result.mean);
  eval_std_.push_back(result.std);
  logger_->info("eval at {} frames: return {:.2f} +- {:.2f} over {} episodes of {:.1f} steps{}",
                frames_, result.mean, result.std, result.episodes, result.mean_length,
                result.mean_transformed ? fmt::format(" (after the reward transforms: {:.2f})",
                                                      *result.mean_transformed)
                                        : std::string());
  keep_if_best(result);
  return result;
}

void Trainer::keep_if_best(const EvalResult& result) {
  const std::string dir = run_.file("checkpoints") + "/best";
  if (!best_eval_) {
    // A resumed run continues from the best it saved, if that is intact.
    best_eval_ = -std::numeric_limits<double>::infinity();
    if (fs::exists(fs::path(dir) / "state" / "meta.json")) {
      try {
        if (const auto damaged = CheckpointStore::damage(dir)) throw std::runtime_error(*damaged);
        best_eval_ = BestState::from_tensordict(load_checkpoint_state(dir))
                         .trainer()
                         .eval_return()
                         .item<double>();
      } catch (const std::exception& e) {
        logger_->warn("checkpoints/best cannot be read ({}); the next evaluation replaces it",
                      e.what());
      }
    }
  }
  if (!(result.mean > *best_eval_)) return;
  best_eval_ = result.mean;
  const BestState state = BestState::make(
      {{"actor", module_state(*recipe_->actor)},
       {"env", env_state_dict(*env_.env_state)},
       {"trainer",
        BestCounters::make({{"frames", torch::tensor(frames_, torch::kInt64)},
                            {"eval_return", torch::tensor(result.mean, torch::kFloat64)}})}});
  // Written as the store writes checkpoints: complete or not at all, with its MANIFEST.
  checkpoints_->write_named("best", [&](const std::string& folder) {
    save_checkpoint_state(state.tensordict(), folder);
  });
  logger_->info("checkpoints/best: eval return {:.2f} at {} frames", result.mean, frames_);
}

void Trainer::write_curve() {
  if (!learning_curves_available()) return;
  // Evaluations as measured points with their spread over episodes; the per-batch training
  // returns are noisy, so their moving average is the line to read.
  const std::string title = config_.algo.name + " on " + config_.env.name;
  std::vector<std::pair<double, double>> eval_band;
  for (size_t i = 0; i < eval_curve_.size() && i < eval_std_.size(); ++i)
    eval_band.emplace_back(eval_curve_[i].second - eval_std_[i],
                           eval_curve_[i].second + eval_std_[i]);
  const std::vector<CurveSeries> series = {{"train", train_curve_, {}, false, 10},
                                           {"eval +- std", eval_curve_, eval_band, true, 0}};
  write_learning_curve_svg(run_.file("learning_curve.svg"), title, series, "return (env units)");
  write_learning_curve_png(run_.file("learning_curve.png"), title, series, "return (env units)");
}

void Trainer::save_checkpoint_files(const std::string& dir) {
  auto& recipe = *recipe_;
  TensorDict optim = TensorDict::empty({});
  for (auto& g : recipe.optimizers) optim.set(g.name, modules::optimizer_state(*g.optimizer));
  TensorDict exploration = TensorDict::empty({});
  for (auto& [name, module] : recipe.exploration_modules)
    exploration.set(name, module_state(*module));
  // The tallies of the episodes in flight (id, env return, transformed return, length), which
  // a resumed collector continues, and the returns the progress line averages.
  std::vector<double> tallies;
  for (const auto& [id, tally] : running_) {
    tallies.insert(tallies.end(), {static_cast<double>(id), tally.env_return, tally.transformed,
                                   static_cast<double>(tally.length)});
  }
  const auto counters = RunCounters::make(
      {{"frames", torch::tensor(frames_, torch::kInt64)},
       {"updates", torch::tensor(updates_, torch::kInt64)},
       {"episodes", torch::tensor(episodes_, torch::kInt64)},
       {"wall_time", torch::tensor(wall_time(), torch::kFloat64)},
       {"rng", at::detail::getDefaultCPUGenerator().get_state()},
       {"episodes_in_flight", torch::tensor(tallies, torch::kFloat64).view({-1, 4})},
       {"recent_returns", torch::tensor(recent_returns_, torch::kFloat64)}});
  const auto state = RunState::make({{"actor", module_state(*recipe.actor)},
                                     {"loss", module_state(*recipe.loss)},
                                     {"optim", optim},
                                     {"exploration", exploration},
                                     {"collector", collector_->state_dict()},
                                     {"env", env_state_dict(*env_.env_state)},
                                     {"trainer", counters}});
  save_checkpoint_state(state.tensordict(), dir);
  if (recipe.replay && config_.checkpoint.save_replay) recipe.replay->dumps(dir + "/replay");
}

void Trainer::load_checkpoint_files(const std::string& dir) {
  auto& recipe = *recipe_;
  const RunState state = load_run_state(dir);
  load_module_state(*recipe.loss, state.loss(), "loss");
  for (auto& g : recipe.optimizers) {
    TDRL_CHECK(state.optim().contains(g.name), tensordict::KeyError, "--resume: ", dir,
               " has no state of the optimiser group '", g.name,
               "'; it was written by another algorithm (check algo.name)");
    modules::load_optimizer_state(*g.optimizer, state.optim().get_tensordict(g.name),
                                  "the checkpoint's optimiser '" + g.name + "'");
  }
  for (auto& [name, module] : recipe.exploration_modules)
    load_module_state(*module, state.exploration().get_tensordict(name), name);
  if (recipe.replay && config_.checkpoint.save_replay) {
    // A run that saves its buffer resumes with it, never silently with an empty one.
    TDRL_CHECK(fs::exists(dir + "/replay"), tensordict::Error, "--resume: the checkpoint ", dir,
               " has no replay/ folder although checkpoint.save_replay is on; it is incomplete");
    recipe.replay->loads(dir + "/replay");
  }
  collector_->load_state_dict(state.collector());
  load_env_state(*env_.env_state, state.env());
  const RunCounters counters = state.trainer();
  frames_ = counters.frames().item<int64_t>();
  updates_ = counters.updates().item<int64_t>();
  episodes_ = counters.episodes().item<int64_t>();
  wall_offset_ = counters.wall_time().item<double>();
  running_.clear();
  const auto rows = counters.episodes_in_flight().to(torch::kFloat64).contiguous().view({-1, 4});
  const double* t = rows.data_ptr<double>();
  for (int64_t i = 0; i < rows.size(0); ++i, t += 4)
    running_[static_cast<int64_t>(t[0])] = {t[1], t[2], static_cast<int64_t>(t[3])};
  const auto recent = counters.recent_returns().to(torch::kFloat64).contiguous();
  recent_returns_.assign(recent.data_ptr<double>(), recent.data_ptr<double>() + recent.numel());
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  generator.set_state(counters.rng());
  recipe.on_resume(frames_);
  collector_->update_policy_weights_();
}

void load_env_state(const EnvState& env_state, const TensorDict& env) {
  for (const auto& [name, s] : env_state)
    if (env.contains(name)) s->load_state_dict(env.get_tensordict(name));
}

double Trainer::wall_time() const {
  return wall_offset_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - session_start_).count();
}

std::string Trainer::checkpoint() {
  const auto dir =
      checkpoints_->write(frames_, [this](const std::string& d) { save_checkpoint_files(d); });
  write_curve();
  logger_->info("checkpoint {} at {} frames", dir, frames_);
  run_hooks(HookPoint::kCheckpoint);
  return dir;
}

std::vector<Trainer::MetricsPart> Trainer::metrics_parts(const RunConfig& config,
                                                         const Recipe& recipe) {
  std::vector<MetricsPart> parts;
  const bool transformed = !config.env.transforms.items.empty();
  // Progress, then the training episodes of the batch and the evaluation, if any.
  parts.push_back({"progress", {"frames", "episodes"}, [](Trainer& t, MetricsRow& row) {
                     row.values["frames"] = static_cast<double>(t.frames_);
                     row.values["episodes"] = static_cast<double>(t.episodes_);
                   }});
  parts.push_back({"training episodes",
                   {"train_return", "train_episode_length"},
                   [](Trainer& t, MetricsRow& row) {
                     if (t.batch_episodes_.empty()) return;
                     std::vector<double> returns, lengths;
                     for (const auto& e : t.batch_episodes_) {
                       returns.push_back(e.env_return);
                       lengths.push_back(static_cast<double>(e.length));
                     }
                     row.values["train_return"] = mean_of(returns);
                     row.values["train_episode_length"] = mean_of(lengths);
                     t.train_curve_.emplace_back(static_cast<double>(t.frames_),
                                                 row.values["train_return"]);
                   }});
  parts.push_back({"evaluation",
                   {"eval_return", "eval_std", "eval_episode_length"},
                   [](Trainer&, MetricsRow& row) {
                     if (!row.eval) return;
                     row.values["eval_return"] = row.eval->mean;
                     row.values["eval_std"] = row.eval->std;
                     row.values["eval_episode_length"] = row.eval->mean_length;
                   }});
  // The returns after the reward transforms, when the env has any.
  if (transformed) {
    parts.push_back({"reward transforms",
                     {"train_return_transformed", "eval_return_transformed"},
                     [](Trainer& t, MetricsRow& row) {
                       if (!t.batch_episodes_.empty()) {
                         std::vector<double> transformed_returns;
                         for (const auto& e : t.batch_episodes_)
                           transformed_returns.push_back(e.transformed);
                         row.values["train_return_transformed"] = mean_of(transformed_returns);
                       }
                       if (row.eval && row.eval->mean_transformed)
                         row.values["eval_return_transformed"] = *row.eval->mean_transformed;
                     }});
  }
  // Where the time went.
  parts.push_back({"timing",
                   {"updates", "fps", "wall_time", "collect_s", "optimize_s", "eval_s"},
                   [](Trainer& t, MetricsRow& row) {
                     row.values["updates"] = static_cast<double>(t.updates_);
                     row.values["fps"] = row.fps;
                     row.values["wall_time"] = t.wall_time();
                     row.values["collect_s"] = t.times_.collect;
                     row.values["optimize_s"] = t.times_.optimize;
                     row.values["eval_s"] = t.times_.eval;
                   }});
  // The first optimiser's learning rate (the schedule scales every group alike).
  parts.push_back({"optimisers", {"lr"}, [](Trainer& t, MetricsRow& row) {
                     if (t.recipe_->optimizers.empty()) return;
                     const auto& pg = t.recipe_->optimizers.front().optimizer->param_groups();
                     if (!pg.empty()) row.values["lr"] = pg.front().options().get_lr();
                   }});
  // The loss's terms and diagnostics and the gradient norms, as the update step declares them.
  parts.push_back(
      {"updates of the loss", detail::UpdateStep::columns(recipe), [](Trainer& t, MetricsRow& row) {
         for (const auto& [name, mean] : t.update_->take_means()) row.values[name] = mean;
       }});
  parts.push_back({"update-to-data ratio", {"updates_per_frame"}, [](Trainer& t, MetricsRow& row) {
                     if (t.frames_ > 0)
                       row.values["updates_per_frame"] =
                           static_cast<double>(t.updates_) / static_cast<double>(t.frames_);
                   }});
  return parts;
}

void Trainer::log_row(double fps, const std::optional<EvalResult>& eval) {
  MetricsRow row{{}, fps, eval ? &*eval : nullptr};
  for (const auto& part : metrics_parts_) part.fill(*this, row);
  metrics_ = std::move(row.values);
  metrics_writer_->write(metrics_);
  for (auto& backend : metrics_backends_) backend->write(frames_, metrics_);
  run_hooks(HookPoint::kLog);
}

void Trainer::keep_after_error(const std::exception& error) {
  // The error goes to train.log too (not only to the caller), and the state reached is kept
  // unless it is what failed: after a non-finite loss the last good checkpoint is the one to
  // resume from, and weights that are not finite are not worth keeping.
  logger_->error("training stopped by an error at {} frames: {}", frames_, error.what());
  bool finite = !diverged_;
  for (const auto& p : recipe_->loss->parameters()) {
    finite = finite && torch::isfinite(p).all().item<bool>();
  }
  try {
    if (finite && frames_ > 0) {
      const auto dir = checkpoint();
      logger_->error("kept the state at the error in {}; resume with --resume {}", dir,
                     run_.path());
    } else {
      const auto last = checkpoints_->latest();
      logger_->error("no checkpoint of the state at the error; the last good one is {}",
                     last ? *last : std::string("none"));
    }
  } catch (const std::exception& e) {
    logger_->error("the checkpoint after the error failed too: {}", e.what());
  }
  try {
    collector_->shutdown();
  } catch (const std::exception& e) {
    logger_->error("stopping the collector after the error failed: {}", e.what());
  }
}

bool Trainer::train() {
  // Schedules: the next evaluation and checkpoint frame counts, from where a resumed run is.
  StopSignal::install();
  StopSignal::reset();  // a signal handled by an earlier train() in this process is done with
  session_start_ = std::chrono::steady_clock::now();
  const auto total = collector_->total_frames();
  ProgressDisplay display(config_.logger.progress, total,
                          std::chrono::duration<double>(config_.logger.interval_s));
  const int64_t eval_every = config_.eval.interval_frames;
  const int64_t ckpt_every = config_.checkpoint.interval_frames;
  int64_t next_eval = eval_every > 0 ? (frames_ / eval_every + 1) * eval_every : -1;
  int64_t next_ckpt = ckpt_every > 0 ? (frames_ / ckpt_every + 1) * ckpt_every : -1;
  const int64_t frames_at_start = frames_;
  bool completed = true;
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  try {
    auto collect_start = Clock::now();
    while (auto batch = collector_->next()) {
      // One batch: record its episodes, optimise on it, hand the new weights to the collector.
      const auto collected = Clock::now();
      times_.collect += seconds(collect_start, collected);
      // Worker collectors hand over CPU batches: one copy to the training device.
      batch_ = on_device(*batch, device_);
      frames_ = collector_->frames();
      record_episodes(batch_);
      run_hooks(HookPoint::kBatch);
      optimize(batch_);
      recipe_->after_batch(frames_);
      collector_->update_policy_weights_();
      apply_lr_schedule();
      const auto optimized = Clock::now();
      times_.optimize += seconds(collected, optimized);
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - session_start_).count();
      const double fps = static_cast<double>(frames_ - frames_at_start) / std::max(elapsed, 1e-9);
      // Evaluate on schedule and at the end, then log the batch's row.
      std::optional<EvalResult> eval;
      if (next_eval > 0 && frames_ >= next_eval && frames_ < total) {
        eval = evaluate_now();
        next_eval += eval_every;
        run_hooks(HookPoint::kEval);
      }
      if (frames_ >= total && total > 0) {
        eval = evaluate_now();
        run_hooks(HookPoint::kEval);
      }
      if (eval)
        display.message(
            fmt::format("eval at {} frames: return {:.2f} +- {:.2f} over {} episodes "
                        "of {:.1f} steps",
                        frames_, eval->mean, eval->std, eval->episodes, eval->mean_length));
      times_.eval += seconds(optimized, Clock::now());
      log_row(fps, eval);
      display.update(frames_, fps, mean_of(recent_returns_), wall_time());
      // A signal stops after this batch; otherwise checkpoint on schedule.
      if (StopSignal::requested()) {
        logger_->warn("signal {} received at {} frames: checkpointing and stopping",
                      StopSignal::signal_number(), frames_);
        completed = total > 0 && frames_ >= total;
        break;
      }
      if (next_ckpt > 0 && frames_ >= next_ckpt && frames_ < total) {
        const auto start = Clock::now();
        checkpoint();
        times_.eval += seconds(start, Clock::now());
        next_ckpt += ckpt_every;
      }
      collect_start = Clock::now();
    }
  } catch (const std::exception& e) {
    keep_after_error(e);
    throw;
  }
  // The final checkpoint, then where the session's time went.
  checkpoint();
  display.finish();
  collector_->shutdown();
  logger_->info("{} at {} frames, {} episodes, {} updates, wall time {}",
                completed ? "finished" : "stopped", frames_, episodes_, updates_,
                detail::format_duration(wall_time()));
  const double session = seconds(session_start_, Clock::now());
  const auto share = [session](double t) { return 100.0 * t / std::max(session, 1e-9); };
  logger_->info(
      "time this session: collection {:.1f} s ({:.0f}%), optimisation {:.1f} s ({:.0f}%), "
      "evaluation and checkpoints {:.1f} s ({:.0f}%), other {:.1f} s",
      times_.collect, share(times_.collect), times_.optimize, share(times_.optimize), times_.eval,
      share(times_.eval), session - times_.collect - times_.optimize - times_.eval);
  run_hooks(HookPoint::kEnd);
  return completed;
}

}  // namespace tdrl::apps
