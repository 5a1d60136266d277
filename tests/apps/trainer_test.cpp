// Tests of the generic training loop: every recipe end to end on a tiny budget, hooks,
// deterministic evaluation, non-finite losses, stop signals, and resuming (in process, and for
// real: tdrl-train killed with SIGKILL or stopped with SIGTERM, then run with --resume).

#include "tdrl/apps/trainer.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tdrl/apps/checkpoint.h>
#include <tdrl/apps/main.h>
#include <tdrl/apps/registry.h>
#include <tdrl/apps/stop_signal.h>
#include <tdrl/modules/egreedy.h>
#include <tensordict/errors.h>

#include <tdrl/apps/checkpoint_store.h>

#include "support/error_message.h"
#include "support/temp_dir.h"

extern char** environ;

namespace tdrl::apps {
namespace {

namespace fs = std::filesystem;
using tensordict::testing::read_file_bytes;
using tensordict::testing::TempDir;
using tensordict::testing::write_file_bytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kBatchFrames = 64;
constexpr int64_t kTotalFrames = 256;

bool is_on_policy(const std::string& algo) { return algo == "ppo" || algo == "a2c"; }

/// A tiny run of `algo`: 4 batches of 64 frames on CartPole-v1 (ppo, a2c, dqn) or Pendulum-v1
/// (ddpg, td3, sac). On-policy: 2 epochs of 2 minibatches per batch (4 updates). Off-policy: 2
/// updates per batch once the buffer holds init_random_frames = 128 (from the second batch).
std::string tiny_yaml(const std::string& algo) {
  const bool discrete = is_on_policy(algo) || algo == "dqn";
  std::ostringstream y;
  y << "seed: 0\n"
    << "env:\n  name: " << (discrete ? "CartPole-v1" : "Pendulum-v1") << "\n"
    << "model:\n  actor_cells: [16, 16]\n  critic_cells: [16, 16]\n"
    << "algo:\n  name: " << algo << "\n";
  if (is_on_policy(algo)) {
    y << "  num_epochs: 2\n  minibatch_size: 32\n";
  } else {
    y << "  updates_per_batch: 2\n";
  }
  y << "collector:\n  frames_per_batch: " << kBatchFrames << "\n  total_frames: " << kTotalFrames
    << "\n";
  if (!is_on_policy(algo)) {
    y << "  init_random_frames: 128\nreplay:\n  capacity: 1000\n  batch_size: 32\n";
  }
  y << "logger:\n  progress: none\n"
    << "eval:\n  episodes: 1\n  max_steps: 20\n";
  return y.str();
}

RunConfig tiny_config(const std::string& algo, const std::vector<std::string>& overrides = {}) {
  register_builtin_components();
  return load_config_string(tiny_yaml(algo), overrides);
}

/// The acting part of `config`'s recipe, as tdrl-eval builds it.
struct Acting {
  EnvParts env;
  std::unique_ptr<Recipe> recipe;
};

Acting acting_of(const RunConfig& config) {
  Acting a;
  a.env = build_env_parts(config.env);
  a.recipe = make_acting_recipe(config, a.env.info);
  return a;
}

using tdrl::test_util::error_message;

std::string first_line(const std::string& path) {
  const auto text = read_file_bytes(path);
  return text.substr(0, text.find('\n'));
}

std::vector<double> column(const std::vector<std::map<std::string, double>>& rows,
                           const std::string& name) {
  std::vector<double> out;
  for (const auto& row : rows) {
    auto it = row.find(name);
    out.push_back(it == row.end() ? std::numeric_limits<double>::quiet_NaN() : it->second);
  }
  return out;
}

/// The names in a folder, sorted.
std::set<std::string> entries_of(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename());
  return names;
}

std::string ckpt_name(int64_t frames) {
  std::string digits = std::to_string(frames);
  return "ckpt-" + std::string(12 - digits.size(), '0') + digits;
}

/// The latest committed checkpoint folder of a run (empty when none).
std::string latest_checkpoint(const std::string& run_path) {
  return CheckpointStore(run_path + "/checkpoints").latest().value_or("");
}

/// The trainer's frame counter stored in a checkpoint folder.
int64_t checkpoint_frames(const std::string& ckpt) {
  return load_checkpoint_state(ckpt).get({"trainer", "frames"}).item<int64_t>();
}

void expect_strictly_increasing(const std::vector<double>& v) {
  for (size_t i = 1; i < v.size(); ++i) {
    EXPECT_LT(v[i - 1], v[i]) << "rows " << i - 1 << " and " << i;
  }
}

/// Resets the stop flag (and re-arms the handlers) when the test starts and ends.
class StopSignalGuard {
 public:
  StopSignalGuard() { StopSignal::reset(); }
  ~StopSignalGuard() { StopSignal::reset(); }
};

// ---------------------------------------------------------------- TrainerTest: recipes

// The run's own columns; each loss's out_keys follow them.
const std::string kRunColumns =
    "frames,episodes,train_return,train_episode_length,eval_return,eval_std,eval_episode_length,"
    "updates,fps,wall_time,collect_s,optimize_s,eval_s,lr";

// The gradient norm of each optimiser group, then the update-to-data ratio.
const std::map<std::string, std::string> kDiagnosticColumns{
    {"ppo", "grad_norm_all,updates_per_frame"},
    {"a2c", "grad_norm_all,updates_per_frame"},
    {"dqn", "grad_norm_all,updates_per_frame"},
    {"ddpg", "grad_norm_actor,grad_norm_critic,updates_per_frame"},
    {"td3", "grad_norm_actor,grad_norm_critic,updates_per_frame"},
    {"sac", "grad_norm_actor,grad_norm_critic,grad_norm_alpha,updates_per_frame"}};

const std::map<std::string, std::string> kLossColumns{
    {"ppo", "loss_objective,loss_critic,ESS,kl_approx,clip_fraction"},
    {"a2c", "loss_objective,loss_critic"},
    {"dqn", "loss_value,pred_value,target_value"},
    {"ddpg", "loss_actor,loss_value,pred_value,target_value,pred_value_max,target_value_max"},
    {"td3",
     "loss_actor,loss_qvalue,pred_value,state_action_value_actor,next_state_value,target_value"},
    {"sac", "loss_actor,loss_qvalue,loss_alpha,alpha,entropy"}};

/// Trains `algo` on the tiny budget and checks the counters, metrics.csv, the checkpoints and
/// the learning curve.
void expect_runs_end_to_end(const std::string& algo, const std::vector<std::string>& loss_columns,
                            const std::set<std::string>& checkpoint_files,
                            const std::set<std::string>& optimizer_groups) {
  TempDir tmp;
  Trainer trainer(tiny_config(algo, {"checkpoint.interval_frames=128"}),
                  RunDir::create(tmp.path().string(), "t"));
  ASSERT_TRUE(trainer.train());
  EXPECT_EQ(trainer.config().algo.name, algo);
  EXPECT_EQ(trainer.collector().total_frames(), kTotalFrames);
  EXPECT_EQ(trainer.frames(), kTotalFrames);
  EXPECT_GT(trainer.episodes(), 0);
  // On-policy: 2 epochs x 2 minibatches per batch; off-policy: 2 per batch after the first.
  const std::vector<double> updates_per_row =
      is_on_policy(algo) ? std::vector<double>{4, 8, 12, 16} : std::vector<double>{0, 2, 4, 6};
  EXPECT_EQ(trainer.updates(), static_cast<int64_t>(updates_per_row.back()));

  const RunDir& run = trainer.run_dir();
  EXPECT_EQ(first_line(run.file("metrics.csv")),
            kRunColumns + "," + kLossColumns.at(algo) + "," + kDiagnosticColumns.at(algo));
  const auto rows = read_metrics(run.file("metrics.csv"));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_THAT(column(rows, "frames"), ElementsAre(64, 128, 192, 256));
  EXPECT_EQ(column(rows, "updates"), updates_per_row);
  // Diagnostics: the update-to-data ratio, and each optimiser's gradient norm where it stepped.
  EXPECT_DOUBLE_EQ(rows.back().at("updates_per_frame"),
                   updates_per_row.back() / static_cast<double>(kTotalFrames));
  for (const auto& [name, value] : rows.back())
    if (name.rfind("grad_norm_", 0) == 0) EXPECT_TRUE(std::isfinite(value) && value > 0) << name;
  EXPECT_EQ(rows.back().at("episodes"), static_cast<double>(trainer.episodes()));
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    EXPECT_GT(rows[i].at("fps"), 0);
    EXPECT_GE(rows[i].at("wall_time"), 0);
    EXPECT_DOUBLE_EQ(rows[i].at("lr"), 3e-4);
    // eval.interval_frames is 0: only the last row holds an evaluation.
    EXPECT_EQ(rows[i].count("eval_return"), i + 1 == rows.size() ? 1u : 0u);
    for (const auto& name : loss_columns) {
      if (updates_per_row[i] == (i == 0 ? 0 : updates_per_row[i - 1])) {
        EXPECT_EQ(rows[i].count(name), 0u) << name << " without an update";
      } else {
        ASSERT_EQ(rows[i].count(name), 1u) << name;
        EXPECT_TRUE(std::isfinite(rows[i].at(name))) << name;
      }
    }
  }

  const auto latest = latest_checkpoint(run.path());
  EXPECT_EQ(fs::path(latest).filename(), ckpt_name(kTotalFrames));
  EXPECT_EQ(checkpoint_frames(latest), kTotalFrames);
  auto files = checkpoint_files;
  files.insert("MANIFEST");  // each file's checksum and size (CheckpointStore)
  EXPECT_EQ(entries_of(latest), files);
  const auto state = load_checkpoint_state(latest);
  std::set<std::string> groups;
  for (const auto& key : state.get_tensordict("optim").keys()) groups.insert(key.front());
  EXPECT_EQ(groups, optimizer_groups);
  for (const char* entry : {"actor", "loss", "collector", "trainer"})
    EXPECT_TRUE(state.contains(entry)) << entry;
  EXPECT_EQ(checkpoint_frames(run.file("checkpoints/" + ckpt_name(128))), 128);
  if (checkpoint_files.count("replay")) {
    EXPECT_FALSE(entries_of(latest + "/replay").empty());
  }
  EXPECT_THAT(read_file_bytes(run.file("learning_curve.svg")), HasSubstr("<svg"));
  EXPECT_THAT(read_file_bytes(run.file("config.yaml")), HasSubstr("name: " + algo));
  EXPECT_THAT(read_file_bytes(run.file("train.log")), HasSubstr("finished at 256 frames"));
}

TEST(TrainerTest, PpoRunsEndToEndOnATinyBudget) {
  expect_runs_end_to_end("ppo", {"loss_objective", "loss_critic"}, {"state"}, {"all"});
}

TEST(TrainerTest, A2cRunsEndToEndOnATinyBudget) {
  expect_runs_end_to_end("a2c", {"loss_objective", "loss_critic"}, {"state"}, {"all"});
}

TEST(TrainerTest, DqnRunsEndToEndOnATinyBudget) {
  expect_runs_end_to_end("dqn", {"loss_value"}, {"replay", "state"}, {"all"});
}

TEST(TrainerTest, DdpgRunsEndToEndOnATinyBudget) {
  expect_runs_end_to_end("ddpg", {"loss_actor", "loss_value"}, {"replay", "state"},
                         {"actor", "critic"});
}

TEST(TrainerTest, Td3RunsEndToEndOnATinyBudget) {
  expect_runs_end_to_end("td3", {"loss_actor", "loss_qvalue"}, {"replay", "state"},
                         {"actor", "critic"});
}

TEST(TrainerTest, SacRunsEndToEndOnATinyBudget) {
  expect_runs_end_to_end("sac", {"loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"},
                         {"replay", "state"}, {"actor", "alpha", "critic"});
}

TEST(TrainerTest, SaveReplayFalseLeavesTheBufferOutOfCheckpoints) {
  TempDir tmp;
  Trainer trainer(tiny_config("sac", {"checkpoint.save_replay=false"}),
                  RunDir::create(tmp.path().string(), "t"));
  ASSERT_TRUE(trainer.train());
  EXPECT_EQ(entries_of(latest_checkpoint(trainer.run_dir().path())).count("replay"), 0u);
}

TEST(TrainerTest, SyncWorkersAndBatchedEnvsRunTheSameLoop) {
  TempDir tmp;
  Trainer trainer(
      tiny_config("ppo", {"collector.mode=sync", "collector.num_workers=2", "env.num_envs=2"}),
      RunDir::create(tmp.path().string(), "t"));
  std::vector<int64_t> batch_sizes;
  trainer.add_hook(HookPoint::kBatch, [&batch_sizes](Trainer& t) {
    batch_sizes.push_back(t.batch().get({"next", "reward"}).numel());
  });
  ASSERT_TRUE(trainer.train());
  EXPECT_EQ(trainer.frames(), kTotalFrames);
  EXPECT_EQ(trainer.updates(), 16);
  EXPECT_EQ(batch_sizes, std::vector<int64_t>(4, kBatchFrames));
  EXPECT_THAT(column(read_metrics(trainer.run_dir().file("metrics.csv")), "frames"),
              ElementsAre(64, 128, 192, 256));
}

TEST(TrainerTest, LinearScheduleDecaysTheLearningRateToZeroAtTotalFrames) {
  TempDir tmp;
  Trainer trainer(tiny_config("ppo", {"optim.lr=0.001", "optim.lr_schedule=linear"}),
                  RunDir::create(tmp.path().string(), "t"));
  ASSERT_TRUE(trainer.train());
  const auto lr = column(read_metrics(trainer.run_dir().file("metrics.csv")), "lr");
  ASSERT_EQ(lr.size(), 4u);
  EXPECT_DOUBLE_EQ(lr[0], 0.00075);
  EXPECT_DOUBLE_EQ(lr[1], 0.0005);
  EXPECT_DOUBLE_EQ(lr[2], 0.00025);
  EXPECT_DOUBLE_EQ(lr[3], 0.0);
}

// ---------------------------------------------------------------- TrainerTest: hooks

TEST(TrainerTest, HooksRunAtTheirPointsTheExpectedNumberOfTimes) {
  TempDir tmp;
  Trainer trainer(tiny_config("ppo", {"eval.interval_frames=64", "checkpoint.interval_frames=128"}),
                  RunDir::create(tmp.path().string(), "t"));
  std::vector<std::string> events;
  std::map<std::string, std::vector<int64_t>> frames_at;
  auto record = [&](const std::string& name) {
    return [&events, &frames_at, name](Trainer& t) {
      events.push_back(name);
      frames_at[name].push_back(t.frames());
    };
  };
  trainer.add_hook(HookPoint::kBatch, record("batch"));
  trainer.add_hook(HookPoint::kUpdate, record("update"));
  trainer.add_hook(HookPoint::kLog, record("log"));
  trainer.add_hook(HookPoint::kEval, record("eval"));
  trainer.add_hook(HookPoint::kCheckpoint, record("checkpoint"));
  trainer.add_hook(HookPoint::kEnd, record("end"));
  std::vector<int64_t> batch_sizes;
  std::vector<double> logged_frames;
  trainer.add_hook(HookPoint::kBatch, [&batch_sizes](Trainer& t) {
    batch_sizes.push_back(t.batch().get({"next", "reward"}).numel());
  });
  trainer.add_hook(HookPoint::kLog, [&logged_frames](Trainer& t) {
    logged_frames.push_back(t.metrics().at("frames"));
  });
  ASSERT_TRUE(trainer.train());

  EXPECT_THAT(frames_at["batch"], ElementsAre(64, 128, 192, 256));
  EXPECT_EQ(batch_sizes, std::vector<int64_t>(4, kBatchFrames));
  EXPECT_EQ(static_cast<int64_t>(frames_at["update"].size()), trainer.updates());
  EXPECT_EQ(frames_at["update"].size(), 16u);
  EXPECT_THAT(frames_at["log"], ElementsAre(64, 128, 192, 256));
  EXPECT_THAT(logged_frames, ElementsAre(64, 128, 192, 256));
  // Every eval.interval_frames before the end, and once at the end.
  EXPECT_THAT(frames_at["eval"], ElementsAre(64, 128, 192, 256));
  // Every checkpoint.interval_frames before the end, and once at the end.
  EXPECT_THAT(frames_at["checkpoint"], ElementsAre(128, 256));
  EXPECT_THAT(frames_at["end"], ElementsAre(256));
  ASSERT_GE(events.size(), 7u);
  EXPECT_EQ(events.front(), "batch");
  EXPECT_EQ(events.back(), "end");
  // Per batch: the batch, its updates, the evaluation, then the metrics row.
  const std::vector<std::string> first_batch(events.begin(), events.begin() + 7);
  EXPECT_THAT(first_batch,
              ElementsAre("batch", "update", "update", "update", "update", "eval", "log"));
  const auto rows = read_metrics(trainer.run_dir().file("metrics.csv"));
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) EXPECT_EQ(row.count("eval_return"), 1u);
}

TEST(TrainerTest, HooksOfOnePointRunInTheOrderAdded) {
  TempDir tmp;
  Trainer trainer(tiny_config("ppo"), RunDir::create(tmp.path().string(), "t"));
  std::vector<int> order;
  trainer.add_hook(HookPoint::kEnd, [&order](Trainer&) { order.push_back(1); });
  trainer.add_hook(HookPoint::kEnd, [&order](Trainer&) { order.push_back(2); });
  ASSERT_TRUE(trainer.train());
  EXPECT_THAT(order, ElementsAre(1, 2));
}

// ---------------------------------------------------------------- TrainerTest: failures

TEST(TrainerTest, NonFiniteLossStopsTheRunAndWritesNoNewerCheckpoint) {
  TempDir tmp;
  // 1 epoch of 2 minibatches per batch: after the first update at 128 frames the critic is
  // poisoned; the second update's loss_critic is NaN (the advantages were computed before).
  Trainer trainer(tiny_config("ppo", {"algo.num_epochs=1", "checkpoint.interval_frames=64"}),
                  RunDir::create(tmp.path().string(), "t"));
  bool poisoned = false;
  trainer.add_hook(HookPoint::kUpdate, [&poisoned](Trainer& t) {
    if (t.frames() != 128 || poisoned) return;
    poisoned = true;
    torch::NoGradGuard no_grad;
    for (auto& p : t.recipe().loss->network("critic_network")->parameters()) {
      p.fill_(std::numeric_limits<float>::quiet_NaN());
    }
  });
  int checkpoints = 0;
  trainer.add_hook(HookPoint::kCheckpoint, [&checkpoints](Trainer&) { ++checkpoints; });
  const auto message = error_message<tensordict::ValueError>([&] { trainer.train(); });
  EXPECT_THAT(message, HasSubstr("'loss_critic' is nan"));
  EXPECT_THAT(message, HasSubstr("at 128 frames"));
  EXPECT_THAT(message, HasSubstr(ckpt_name(64)));
  EXPECT_TRUE(poisoned);
  EXPECT_EQ(checkpoints, 1);
  const auto run = trainer.run_dir().path();
  EXPECT_EQ(fs::path(latest_checkpoint(run)).filename(), ckpt_name(64));
  EXPECT_EQ(entries_of(run + "/checkpoints"), (std::set<std::string>{ckpt_name(64), "latest"}));
  // The last good checkpoint holds finite weights.
  Trainer resumed(load_config(run + "/config.yaml"), RunDir::open(run), /*resume=*/true);
  EXPECT_EQ(resumed.frames(), 64);
  for (const auto& p : resumed.recipe().loss->parameters()) {
    EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  }
}

TEST(TrainerTest, StopSignalEndsTheRunAfterTheBatchWithACheckpoint) {
  StopSignalGuard guard;
  TempDir tmp;
  Trainer trainer(tiny_config("ppo"), RunDir::create(tmp.path().string(), "t"));
  trainer.add_hook(HookPoint::kBatch, [](Trainer& t) {
    if (t.frames() == 128) ::raise(SIGINT);
  });
  int ends = 0;
  trainer.add_hook(HookPoint::kEnd, [&ends](Trainer&) { ++ends; });
  EXPECT_FALSE(trainer.train());
  EXPECT_EQ(StopSignal::signal_number(), SIGINT);
  EXPECT_EQ(trainer.frames(), 128);
  EXPECT_EQ(trainer.updates(), 8);  // the batch was optimised before stopping
  EXPECT_EQ(ends, 1);
  const auto run = trainer.run_dir().path();
  const auto latest = latest_checkpoint(run);
  EXPECT_EQ(fs::path(latest).filename(), ckpt_name(128));
  EXPECT_EQ(checkpoint_frames(latest), 128);
  EXPECT_THAT(column(read_metrics(run + "/metrics.csv"), "frames"), ElementsAre(64, 128));
  EXPECT_THAT(read_file_bytes(run + "/train.log"), HasSubstr("signal 2 received at 128 frames"));

  StopSignal::reset();
  Trainer resumed(load_config(run + "/config.yaml"), RunDir::open(run), /*resume=*/true);
  EXPECT_TRUE(resumed.train());
  EXPECT_EQ(resumed.frames(), kTotalFrames);
  EXPECT_EQ(resumed.updates(), 16);
}

TEST(TrainerTest, AnErrorInTrainIsLoggedAndTheStateReachedIsKept) {
  TempDir tmp;
  // No periodic checkpoints (the default): before this, an error lost the whole run.
  Trainer trainer(tiny_config("ppo"), RunDir::create(tmp.path().string(), "t"));
  trainer.add_hook(HookPoint::kBatch, [](Trainer& t) {
    if (t.frames() == 128) throw std::runtime_error("the evaluation env went away");
  });
  EXPECT_THAT(error_message<std::runtime_error>([&] { trainer.train(); }),
              HasSubstr("the evaluation env went away"));
  const auto run = trainer.run_dir().path();
  EXPECT_EQ(fs::path(latest_checkpoint(run)).filename(), ckpt_name(128));
  const auto log = read_file_bytes(run + "/train.log");
  EXPECT_THAT(log, HasSubstr("training stopped by an error at 128 frames: the evaluation env "
                             "went away"));
  EXPECT_THAT(log, HasSubstr("resume with --resume " + run));
  Trainer resumed(load_config(run + "/config.yaml"), RunDir::open(run), /*resume=*/true);
  EXPECT_EQ(resumed.frames(), 128);
}

// ---------------------------------------------------------------- EvaluateTest

TEST(EvaluateTest, SameSeedAndActorGiveTheSameResult) {
  for (const std::string algo : {"ppo", "sac"}) {
    SCOPED_TRACE(algo);
    auto acting = acting_of(tiny_config(algo));
    auto& recipe = acting.recipe;
    auto env = acting.env.eval_env_factory();
    const auto a = evaluate(*env, *recipe->actor, 2, 50, 7);
    const auto b = evaluate(*env, *recipe->actor, 2, 50, 7);
    auto other_env = acting.env.eval_env_factory();
    const auto c = evaluate(*other_env, *recipe->actor, 2, 50, 7);
    EXPECT_EQ(a.episodes, 2);
    EXPECT_TRUE(std::isfinite(a.mean));
    EXPECT_EQ(a.mean, b.mean);
    EXPECT_EQ(a.std, b.std);
    EXPECT_EQ(a.mean, c.mean);
    EXPECT_EQ(a.std, c.std);
  }
}

TEST(EvaluateTest, MaxStepsEndsEachEpisode) {
  auto acting = acting_of(tiny_config("ppo"));
  auto& recipe = acting.recipe;
  auto env = acting.env.eval_env_factory();
  // CartPole pays 1 per step and cannot fall within 5 steps.
  const auto result = evaluate(*env, *recipe->actor, 3, 5, 0);
  EXPECT_EQ(result.episodes, 3);
  EXPECT_DOUBLE_EQ(result.mean, 5.0);
  EXPECT_DOUBLE_EQ(result.std, 0.0);
}

// tiny_config(algo) with a reward_scaling transform (scale 0.1) on the env.
RunConfig scaled_reward_config(const std::string& algo) {
  register_builtin_components();
  std::string yaml = tiny_yaml(algo);
  const std::string env_line = "  name: Pendulum-v1\n";
  yaml.insert(yaml.find(env_line) + env_line.size(),
              "  transforms:\n    - type: reward_scaling\n      scale: 0.1\n");
  return load_config_string(yaml, {});
}

TEST(EvaluateTest, ReturnsAreInTheEnvsUnitsWhateverTheRewardTransforms) {
  // The same actor (same initial weights) on the same episodes, with and without a reward
  // scaled by 0.1.
  torch::manual_seed(5);
  auto plain = acting_of(tiny_config("sac"));
  torch::manual_seed(5);
  auto scaled = acting_of(scaled_reward_config("sac"));
  auto plain_env = plain.env.eval_env_factory();
  auto scaled_env = scaled.env.eval_env_factory();
  const auto a = evaluate(*plain_env, *plain.recipe->actor, 2, 20, 3);
  const auto b = evaluate(*scaled_env, *scaled.recipe->actor, 2, 20, 3);
  EXPECT_NEAR(b.mean, a.mean, 1e-4 * std::abs(a.mean));
  EXPECT_NEAR(b.std, a.std, 1e-3 * std::abs(a.mean));
  ASSERT_TRUE(b.mean_transformed.has_value());
  EXPECT_NEAR(*b.mean_transformed, 0.1 * a.mean, 1e-4 * std::abs(a.mean));
  EXPECT_FALSE(a.mean_transformed.has_value());
  EXPECT_DOUBLE_EQ(a.mean_length, 20.0);
  EXPECT_DOUBLE_EQ(b.mean_length, 20.0);
}

TEST(TrainerTest, MetricsReportTheEnvsReturnsAndTheTransformedOnesBeside) {
  TempDir tmp;
  RunConfig config = scaled_reward_config("sac");
  Trainer trainer(config, RunDir::create(tmp.path().string(), "t"));
  trainer.train();
  const std::string path = trainer.run_dir().file("metrics.csv");
  EXPECT_THAT(first_line(path),
              HasSubstr("train_return,train_episode_length,eval_return,eval_std,"
                        "eval_episode_length,train_return_transformed,eval_return_transformed,"));
  const auto rows = read_metrics(path);
  const auto env_units = column(rows, "train_return");
  const auto transformed = column(rows, "train_return_transformed");
  const auto lengths = column(rows, "train_episode_length");
  int ended = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (std::isnan(env_units[i])) continue;
    ++ended;
    EXPECT_NEAR(transformed[i], 0.1 * env_units[i], 1e-4 * std::abs(env_units[i]));
    EXPECT_DOUBLE_EQ(lengths[i], 200.0);  // Pendulum's episodes
  }
  EXPECT_EQ(ended, 1);  // 256 frames: one 200-step episode
  const auto last = rows.back();
  EXPECT_NEAR(last.at("eval_return_transformed"), 0.1 * last.at("eval_return"),
              1e-4 * std::abs(last.at("eval_return")));
  EXPECT_DOUBLE_EQ(last.at("eval_episode_length"), 20.0);
}

// eval_main on `args` (after the program name), with its stdout.
std::pair<int, std::string> run_eval_main(std::vector<std::string> args) {
  args.insert(args.begin(), "tdrl-eval");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  const int code = eval_main(static_cast<int>(argv.size()), argv.data());
  return {code, testing::internal::GetCapturedStdout()};
}

TEST(TrainerTest, TheBestEvaluationIsKeptAndTdrlEvalEvaluatesAnyCheckpoint) {
  TempDir tmp;
  Trainer trainer(tiny_config("ppo", {"eval.interval_frames=64", "checkpoint.interval_frames=128"}),
                  RunDir::create(tmp.path().string(), "t"));
  trainer.train();
  const std::string run = trainer.run_dir().path();
  // checkpoints/best holds the best evaluation of the run, with its frame count.
  const auto rows = read_metrics(trainer.run_dir().file("metrics.csv"));
  double best = -std::numeric_limits<double>::infinity();
  double best_frames = 0;
  for (const auto& row : rows) {
    auto it = row.find("eval_return");
    if (it != row.end() && it->second > best) {
      best = it->second;
      best_frames = row.at("frames");
    }
  }
  const auto state = load_checkpoint_state(run + "/checkpoints/best");
  EXPECT_EQ(state.get({"trainer", "eval_return"}).item<double>(), best);
  EXPECT_EQ(state.get({"trainer", "frames"}).item<int64_t>(), static_cast<int64_t>(best_frames));
  EXPECT_TRUE(state.contains("actor"));

  // tdrl-eval: the best checkpoint, a named one, and the last intact one by default.
  const auto [code, out] = run_eval_main({"--run", run, "--checkpoint", "best", "--episodes", "2"});
  EXPECT_EQ(code, 0);
  EXPECT_THAT(out, AllOf(HasSubstr("CartPole-v1: return "), HasSubstr("(min "), HasSubstr(", max "),
                         HasSubstr("over 2 episodes of "), HasSubstr("checkpoints/best)")));
  EXPECT_EQ(run_eval_main({"--run", run, "--checkpoint", "ckpt-000000000128"}).first, 0);
  EXPECT_THAT(run_eval_main({"--run", run}).second, HasSubstr("ckpt-000000000256)"));
  EXPECT_EQ(run_eval_main({"--run", run, "--checkpoint", "ckpt-000000000999"}).first, 2);
}

TEST(ModelTest, OrthogonalInitGivesOrthogonalLayersWithThePolicysSmallLastGain) {
  auto acting = acting_of(tiny_config("ppo", {"model.init=orthogonal"}));
  std::vector<torch::Tensor> weights;
  std::vector<torch::Tensor> biases;
  for (const auto& m : acting.recipe->actor->modules(/*include_self=*/false)) {
    if (auto linear = std::dynamic_pointer_cast<torch::nn::LinearImpl>(m)) {
      weights.push_back(linear->weight);
      biases.push_back(linear->bias);
    }
  }
  ASSERT_EQ(weights.size(), 3u);  // 4 -> 16 -> 16 -> 2 logits
  for (size_t i = 0; i < weights.size(); ++i) {
    SCOPED_TRACE(i);
    const auto& w = weights[i];
    const double gain = i + 1 < weights.size() ? std::sqrt(2.0) : 0.01;
    // Orthonormal rows (or columns, whichever are fewer), scaled by the gain.
    const auto gram = w.size(0) <= w.size(1) ? w.matmul(w.t()) : w.t().matmul(w);
    EXPECT_TRUE(torch::allclose(gram, gain * gain * torch::eye(gram.size(0)), 1e-4, 1e-5));
    EXPECT_EQ(biases[i].abs().max().item<float>(), 0.0f);
  }
}

TEST(EvaluateTest, FewerThanOneEpisodeThrowsValueError) {
  auto acting = acting_of(tiny_config("ppo"));
  auto& recipe = acting.recipe;
  auto env = acting.env.eval_env_factory();
  EXPECT_THAT(
      error_message<tensordict::ValueError>([&] { evaluate(*env, *recipe->actor, 0, 10, 0); }),
      HasSubstr("episodes is 0; it must be >= 1"));
  EXPECT_THAT(
      error_message<tensordict::ValueError>([&] { evaluate(*env, *recipe->actor, -3, 10, 0); }),
      HasSubstr("episodes is -3"));
}

TEST(EvaluateTest, EvaluateNowTwiceGivesEqualResults) {
  TempDir tmp;
  Trainer trainer(tiny_config("sac", {"eval.episodes=2"}),
                  RunDir::create(tmp.path().string(), "t"));
  const auto a = trainer.evaluate_now();
  const auto b = trainer.evaluate_now();
  EXPECT_EQ(a.episodes, 2);
  EXPECT_TRUE(std::isfinite(a.mean));
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.std, b.std);
  EXPECT_THAT(read_file_bytes(trainer.run_dir().file("train.log")), HasSubstr("eval at 0 frames"));
}

// ---------------------------------------------------------------- ResumeTest: in process

/// Trains the tiny PPO run with a checkpoint every 64 frames and a crash at 192 frames (an
/// exception from a hook at `crash_point`, with the checkpoint the error writes removed, as
/// after a kill); returns the run folder. With kLog the 192 row is written and its checkpoint
/// is not; with kBatch neither is.
std::string crashed_run(const TempDir& tmp, const std::string& algo, HookPoint crash_point,
                        const std::vector<std::string>& overrides = {}) {
  auto all = overrides;
  all.push_back("checkpoint.interval_frames=64");
  Trainer trainer(tiny_config(algo, all), RunDir::create(tmp.path().string(), "t"));
  trainer.add_hook(crash_point, [](Trainer& t) {
    if (t.frames() == 192) throw std::runtime_error("simulated crash");
  });
  EXPECT_THAT(error_message<std::runtime_error>([&] { trainer.train(); }),
              HasSubstr("simulated crash"));
  // An error keeps the state it reached in a checkpoint of its own (see
  // TrainerTest.AnErrorInTrainIsLoggedAndTheStateReachedIsKept); a kill would not have written
  // it. It is removed, so that these tests resume from the periodic checkpoint before, as
  // after a kill.
  const std::string run = trainer.run_dir().path();
  const auto kept = latest_checkpoint(run);
  EXPECT_EQ(fs::path(kept).filename(), ckpt_name(192));
  fs::remove_all(kept);
  write_file_bytes(run + "/checkpoints/latest", ckpt_name(128) + "\n");
  return run;
}

TEST(ResumeTest, ResumedTrainerContinuesFromTheLastCheckpoint) {
  TempDir tmp;
  const auto run = crashed_run(tmp, "ppo", HookPoint::kLog);
  EXPECT_EQ(fs::path(latest_checkpoint(run)).filename(), ckpt_name(128));
  EXPECT_THAT(column(read_metrics(run + "/metrics.csv"), "frames"), ElementsAre(64, 128, 192));

  Trainer resumed(load_config(run + "/config.yaml"), RunDir::open(run), /*resume=*/true);
  EXPECT_EQ(resumed.frames(), 128);
  EXPECT_EQ(resumed.updates(), 8);
  EXPECT_EQ(resumed.collector().frames(), 128);
  // The row written after the checkpoint is dropped: those frames are collected again.
  EXPECT_THAT(column(read_metrics(run + "/metrics.csv"), "frames"), ElementsAre(64, 128));
  ASSERT_TRUE(resumed.train());
  EXPECT_EQ(resumed.frames(), kTotalFrames);
  EXPECT_EQ(resumed.updates(), 16);
  const auto rows = read_metrics(run + "/metrics.csv");
  const auto frames = column(rows, "frames");
  EXPECT_THAT(frames, ElementsAre(64, 128, 192, 256));
  expect_strictly_increasing(frames);
  EXPECT_THAT(column(rows, "updates"), ElementsAre(4, 8, 12, 16));
  EXPECT_EQ(checkpoint_frames(latest_checkpoint(run)), kTotalFrames);
  EXPECT_THAT(read_file_bytes(run + "/train.log"), HasSubstr("resumed from"));
}

TEST(ResumeTest, ResumedOffPolicyRunRestoresItsReplayBuffer) {
  TempDir tmp;
  const auto run = crashed_run(tmp, "sac", HookPoint::kLog);
  Trainer resumed(load_config(run + "/config.yaml"), RunDir::open(run), /*resume=*/true);
  EXPECT_EQ(resumed.frames(), 128);
  EXPECT_EQ(resumed.updates(), 2);
  EXPECT_EQ(resumed.recipe().replay->size(), 128);
  ASSERT_TRUE(resumed.train());
  EXPECT_EQ(resumed.recipe().replay->size(), kTotalFrames);
  EXPECT_EQ(resumed.updates(), 6);
  EXPECT_THAT(column(read_metrics(run + "/metrics.csv"), "frames"), ElementsAre(64, 128, 192, 256));
}

TEST(ResumeTest, ResumeDropsAMetricsRowCutShortByACrash) {
  TempDir tmp;
  // Killed while writing the 192 row: rows 64 and 128, then the first character of the next.
  const auto run = crashed_run(tmp, "ppo", HookPoint::kBatch);
  EXPECT_EQ(fs::path(latest_checkpoint(run)).filename(), ckpt_name(128));
  {
    std::ofstream out(run + "/metrics.csv", std::ios::app);
    out << "1";
  }
  std::unique_ptr<Trainer> resumed;
  ASSERT_NO_THROW(resumed = std::make_unique<Trainer>(load_config(run + "/config.yaml"),
                                                      RunDir::open(run), /*resume=*/true));
  ASSERT_TRUE(resumed->train());
  EXPECT_THAT(column(read_metrics(run + "/metrics.csv"), "frames"), ElementsAre(64, 128, 192, 256));
}

TEST(ResumeTest, ResumedDqnAnnealsEpsilonAsAnUninterruptedRun) {
  TempDir tmp;
  const std::vector<std::string> schedule{"algo.eps_init=1.0", "algo.eps_end=0.0",
                                          "algo.annealing_frames=1000"};
  auto eps_of = [](Trainer& t) {
    for (const auto& [name, module] : t.recipe().exploration_modules) {
      if (name == "exploration") {
        return std::dynamic_pointer_cast<modules::EGreedyModuleImpl>(module)->eps();
      }
    }
    ADD_FAILURE() << "no exploration module";
    return -1.0;
  };
  const auto run = crashed_run(tmp, "dqn", HookPoint::kLog, schedule);
  Trainer resumed(load_config(run + "/config.yaml"), RunDir::open(run), /*resume=*/true);
  EXPECT_EQ(resumed.frames(), 128);
  EXPECT_NEAR(eps_of(resumed), 1.0 - 128.0 / 1000.0, 1e-6);  // restored from the checkpoint
  ASSERT_TRUE(resumed.train());
  // eps falls by 1/1000 per collected frame, resumed or not: 256 frames in all.
  EXPECT_NEAR(eps_of(resumed), 1.0 - 256.0 / 1000.0, 1e-6);

  Trainer uninterrupted(tiny_config("dqn", schedule), RunDir::create(tmp.path().string(), "u"));
  ASSERT_TRUE(uninterrupted.train());
  EXPECT_NEAR(eps_of(uninterrupted), 1.0 - 256.0 / 1000.0, 1e-6);
}

TEST(ResumeTest, ADamagedCheckpointIsPassedOverAndTheOneBeforeResumed) {
  TempDir tmp;
  Trainer trainer(tiny_config("ppo", {"checkpoint.interval_frames=64"}),
                  RunDir::create(tmp.path().string(), "t"));
  ASSERT_TRUE(trainer.train());
  const auto run = trainer.run_dir().path();
  const auto newest = latest_checkpoint(run);
  EXPECT_EQ(checkpoint_frames(newest), kTotalFrames);
  // Damage one of its files, as a full disk or a bad copy would.
  std::string damaged;
  for (const auto& entry : fs::recursive_directory_iterator(newest + "/state"))
    if (entry.path().extension() == ".memmap" && fs::file_size(entry.path()) > 0)
      damaged = entry.path().string();
  ASSERT_FALSE(damaged.empty());
  fs::resize_file(damaged, fs::file_size(damaged) - 1);
  Trainer resumed(load_config(run + "/config.yaml"), RunDir::open(run), /*resume=*/true);
  EXPECT_EQ(resumed.frames(), kTotalFrames - 64);
  const auto log = read_file_bytes(run + "/train.log");
  EXPECT_THAT(log, HasSubstr("passed over a damaged checkpoint: " + newest + ": "));
  EXPECT_THAT(log, HasSubstr(damaged));
}

TEST(ResumeTest, ResumeWithoutACheckpointThrows) {
  TempDir tmp;
  const auto config = tiny_config("ppo");
  std::string run;
  {
    Trainer fresh(config, RunDir::create(tmp.path().string(), "t"));
    run = fresh.run_dir().path();
  }
  const auto message = error_message<std::runtime_error>(
      [&] { Trainer resumed(config, RunDir::open(run), /*resume=*/true); });
  EXPECT_THAT(message, HasSubstr("no checkpoint"));
  EXPECT_THAT(message, HasSubstr(run));
}

// ---------------------------------------------------------------- ResumeTest: real processes

/// A child process started with posix_spawn, stdout and stderr to `log`; killed (SIGKILL) and
/// reaped by the destructor when still running, so a failing test leaves no process behind.
class ChildProcess {
 public:
  /// `own_group`: the child leads a new process group, as a shell's foreground job does, so
  /// that signal_group reaches it and everything it started in that group (a terminal's Ctrl-C).
  ChildProcess(const std::vector<std::string>& args, const std::string& log,
               bool own_group = false) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    // The child starts with the default SIGINT/SIGTERM actions and no blocked signal, whatever
    // this process installed.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t defaults, none;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
                                        (own_group ? POSIX_SPAWN_SETPGROUP : 0));
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, argv[0], &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0)
      throw std::runtime_error("posix_spawn " + args[0] + " failed: " + std::to_string(rc));
  }
  ~ChildProcess() {
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  /// True while the child has not exited (reaps it when it has).
  bool running() {
    if (reaped_) return false;
    if (::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return !reaped_;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  /// Sends `sig` to the child's whole process group (built with own_group).
  void signal_group(int sig) { ::kill(-pid_, sig); }
  /// Waits for the exit up to `timeout`; kills the child then. Returns the wait status, or
  /// nullopt on timeout.
  std::optional<int> wait(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status_, 0);
        reaped_ = true;
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

constexpr auto kProcessTimeout = std::chrono::seconds(120);
// total_frames 40000 is rounded up to whole batches of 256.
constexpr int64_t kLongTotal = (40000 + 255) / 256 * 256;

/// A PPO CartPole config `file` in `tmp` with a checkpoint every 1024 frames, logging under
/// `tmp/runs`; `collector` holds the collector section's lines (indented by two spaces).
std::string write_ppo_config(const TempDir& tmp, const std::string& file, int num_envs,
                             const std::string& collector) {
  const auto path = tmp / file;
  std::ofstream out(path);
  out << "seed: 0\n"
      << "env:\n  name: CartPole-v1\n  num_envs: " << num_envs << "\n"
      << "model:\n  actor_cells: [32, 32]\n  critic_cells: [32, 32]\n"
      << "algo:\n  name: ppo\n  num_epochs: 1\n  minibatch_size: 256\n"
      << "collector:\n"
      << collector << "logger:\n  progress: none\n  dir: " << (tmp / "runs") << "\n"
      << "eval:\n  episodes: 1\n  max_steps: 50\n"
      << "checkpoint:\n  interval_frames: 1024\n";
  return path;
}

/// A PPO CartPole config of ~40k frames (a few seconds) with a checkpoint every 1024 frames.
std::string write_long_config(const TempDir& tmp) {
  return write_ppo_config(tmp, "ppo_long.yaml", 8,
                          "  frames_per_batch: 256\n  total_frames: 40000\n");
}

/// Polls until `logger.dir` holds a run folder with a committed checkpoint; returns the folder
/// (empty when the child exits or the timeout passes first).
std::string wait_for_first_checkpoint(ChildProcess& child, const std::string& runs_dir) {
  const auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
  while (std::chrono::steady_clock::now() < deadline && child.running()) {
    std::error_code ec;
    if (fs::is_directory(runs_dir, ec)) {
      for (const auto& entry : fs::directory_iterator(runs_dir, ec)) {
        if (!latest_checkpoint(entry.path().string()).empty()) return entry.path().string();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return "";
}

/// Frames of a checkpoint folder read from its name (ckpt-<frames>): the folder itself may
/// already be gone, replaced by newer ones, while the run goes on.
int64_t frames_from_name(const std::string& ckpt) {
  return std::stoll(fs::path(ckpt).filename().string().substr(5));
}

/// Runs `tdrl-train --resume run` to completion and checks the finished run.
void resume_to_completion(const TempDir& tmp, const std::string& run) {
  const auto log = tmp / "resume.log";
  ChildProcess resume({TDRL_TRAIN_EXE, "--resume", run}, log);
  const auto status = resume.wait(kProcessTimeout);
  ASSERT_TRUE(status.has_value()) << "tdrl-train --resume did not finish within 120 s";
  ASSERT_TRUE(WIFEXITED(*status)) << read_file_bytes(log);
  ASSERT_EQ(WEXITSTATUS(*status), 0) << read_file_bytes(log);
  EXPECT_THAT(read_file_bytes(log),
              HasSubstr("finished at " + std::to_string(kLongTotal) + " frames"));
  const auto latest = latest_checkpoint(run);
  EXPECT_EQ(fs::path(latest).filename(), ckpt_name(kLongTotal));
  EXPECT_EQ(checkpoint_frames(latest), kLongTotal);
  const auto frames = column(read_metrics(run + "/metrics.csv"), "frames");
  // One row per batch of 256, none twice, none missing.
  ASSERT_EQ(static_cast<int64_t>(frames.size()), kLongTotal / 256);
  expect_strictly_increasing(frames);
  EXPECT_EQ(frames.front(), 256);
  EXPECT_EQ(frames.back(), static_cast<double>(kLongTotal));
  EXPECT_THAT(read_file_bytes(run + "/train.log"), HasSubstr("resumed from"));
}

TEST(ResumeTest, KilledTrainProcessResumesToCompletion) {
  TempDir tmp;
  const auto config = write_long_config(tmp);
  std::string run;
  {
    ChildProcess train({TDRL_TRAIN_EXE, "--config", config}, tmp / "train.log");
    run = wait_for_first_checkpoint(train, tmp / "runs");
    ASSERT_FALSE(run.empty()) << "no checkpoint appeared: " << read_file_bytes(tmp / "train.log");
    train.signal(SIGKILL);
    const auto status = train.wait(kProcessTimeout);
    ASSERT_TRUE(status.has_value());
    ASSERT_TRUE(WIFSIGNALED(*status)) << "the run ended before it was killed";
    EXPECT_EQ(WTERMSIG(*status), SIGKILL);
  }
  const auto killed_at = latest_checkpoint(run);
  ASSERT_FALSE(killed_at.empty());
  EXPECT_LT(checkpoint_frames(killed_at), kLongTotal);
  resume_to_completion(tmp, run);
}

// tdrl-train killed (SIGKILL) at random moments, resumed after each kill, many times: every kill
// leaves `latest` naming an intact checkpoint (its files as its MANIFEST says, none passed over),
// checkpoints never go back, and the run then completes.
TEST(ResumeTest, KillsAtRandomMomentsAlwaysLeaveAnIntactLatestCheckpoint) {
  TempDir tmp;
  const auto config = write_long_config(tmp);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> delay_ms(0, 600);
  std::string run;
  int64_t last = -1;
  int kills = 0;
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
       kills < 8 && std::chrono::steady_clock::now() < deadline;) {
    const std::vector<std::string> args =
        run.empty() ? std::vector<std::string>{TDRL_TRAIN_EXE, "--config", config}
                    : std::vector<std::string>{TDRL_TRAIN_EXE, "--resume", run};
    ChildProcess train(args, tmp / "train.log");
    if (run.empty()) {
      run = wait_for_first_checkpoint(train, tmp / "runs");
      ASSERT_FALSE(run.empty()) << read_file_bytes(tmp / "train.log");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    if (!train.running()) break;  // the run finished first
    train.signal(SIGKILL);
    ASSERT_TRUE(train.wait(kProcessTimeout).has_value());
    ++kills;
    const auto intact = CheckpointStore(run + "/checkpoints").latest_intact();
    ASSERT_TRUE(intact.has_value()) << "kill " << kills;
    EXPECT_TRUE(intact->passed_over.empty()) << "kill " << kills << ": " << intact->passed_over[0];
    EXPECT_EQ(intact->folder, latest_checkpoint(run)) << "kill " << kills;
    const int64_t frames = checkpoint_frames(intact->folder);
    EXPECT_GE(frames, last) << "kill " << kills;
    last = frames;
  }
  EXPECT_GE(kills, 3);
  resume_to_completion(tmp, run);
}

TEST(ResumeTest, SigtermStopsWithACheckpointAndStatus130ThenResumes) {
  TempDir tmp;
  const auto config = write_long_config(tmp);
  const auto log = tmp / "train.log";
  std::string run;
  {
    ChildProcess train({TDRL_TRAIN_EXE, "--config", config}, log);
    run = wait_for_first_checkpoint(train, tmp / "runs");
    ASSERT_FALSE(run.empty()) << "no checkpoint appeared: " << read_file_bytes(log);
    const int64_t first = frames_from_name(latest_checkpoint(run));
    train.signal(SIGTERM);
    const auto status = train.wait(kProcessTimeout);
    ASSERT_TRUE(status.has_value());
    ASSERT_TRUE(WIFEXITED(*status)) << read_file_bytes(log);
    EXPECT_EQ(WEXITSTATUS(*status), 130) << read_file_bytes(log);
    const auto stopped = latest_checkpoint(run);
    const int64_t frames = checkpoint_frames(stopped);
    EXPECT_GE(frames, first);
    EXPECT_LT(frames, kLongTotal);
    EXPECT_EQ(frames % 256, 0);
    EXPECT_EQ(fs::path(stopped).filename(), ckpt_name(frames));
    // The stop checkpoint is of the last logged batch.
    EXPECT_EQ(column(read_metrics(run + "/metrics.csv"), "frames").back(),
              static_cast<double>(frames));
    EXPECT_THAT(read_file_bytes(log), HasSubstr("stopped (resume with --resume " + run + ")"));
    EXPECT_THAT(read_file_bytes(run + "/train.log"), HasSubstr("signal 15 received"));
  }
  resume_to_completion(tmp, run);
}

// A terminal's Ctrl-C reaches the whole foreground process group. The workers a distributed
// run launched are in groups of their own, so the trainer alone gets the SIGINT: it finishes
// its batch, writes a checkpoint, stops the workers and exits with 130.
TEST(ResumeTest, CtrlCOnADistributedRunStopsWithACheckpointAndStatus130) {
  TempDir tmp;
  const auto config = write_ppo_config(tmp, "ppo_distributed.yaml", 4,
                                       "  mode: distributed\n  num_workers: 2\n"
                                       "  launch_workers: true\n  frames_per_batch: 256\n"
                                       "  total_frames: 400000\n");
  const auto log = tmp / "train.log";
  ChildProcess train({TDRL_TRAIN_EXE, "--config", config}, log, /*own_group=*/true);
  const auto run = wait_for_first_checkpoint(train, tmp / "runs");
  ASSERT_FALSE(run.empty()) << "no checkpoint appeared: " << read_file_bytes(log);
  const int64_t first = frames_from_name(latest_checkpoint(run));
  train.signal_group(SIGINT);
  const auto status = train.wait(kProcessTimeout);
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status)) << read_file_bytes(log);
  EXPECT_EQ(WEXITSTATUS(*status), 130) << read_file_bytes(log);
  const auto stopped = latest_checkpoint(run);
  EXPECT_GE(checkpoint_frames(stopped), first);
  EXPECT_THAT(read_file_bytes(run + "/train.log"), HasSubstr("signal 2 received"));
  EXPECT_THAT(read_file_bytes(log), Not(HasSubstr("lost worker")));
}

// Network namespaces for a distributed run across "hosts": the learner in one, each worker in
// its own, joined to the learner's by a veth pair (the learner forwards between the workers'
// links, which Gloo's worker-to-worker connections need). Removed, with their links, on
// destruction. `ok()` is false where they cannot be made (not root, no iproute2).
class NetnsHosts {
 public:
  explicit NetnsHosts(int workers) : suffix_(std::to_string(getpid() % 100000)) {
    if (geteuid() != 0 || !run("ip netns add " + learner())) {
      why_ = "cannot create network namespaces here (needs root and iproute2)";
      return;
    }
    made_.push_back(learner());
    bool ok = run(in(learner(), "ip link set lo up")) &&
              run(in(learner(), "sysctl -q -w net.ipv4.ip_forward=1"));
    for (int w = 1; ok && w <= workers; ++w) {
      const std::string ns = worker(w), a = "tl" + std::to_string(w) + "_" + suffix_,
                        b = "tw" + std::to_string(w) + "_" + suffix_;
      ok = run("ip netns add " + ns);
      if (ok) made_.push_back(ns);
      ok = ok &&
           run("ip link add " + a + " netns " + learner() + " type veth peer name " + b +
               " netns " + ns) &&
           run(in(learner(), "ip addr add " + learner_address(w) + "/24 dev " + a)) &&
           run(in(learner(), "ip link set " + a + " up")) &&
           run(in(ns, "ip addr add " + worker_address(w) + "/24 dev " + b)) &&
           run(in(ns, "ip link set " + b + " up")) && run(in(ns, "ip link set lo up")) &&
           run(in(ns, "ip route add default via " + learner_address(w)));
      links_.push_back(a);
    }
    if (!ok) why_ = "could not set up the namespaces' links";
  }
  ~NetnsHosts() {
    for (const auto& ns : made_) run("ip netns del " + ns);
  }
  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  std::string learner() const { return "tdrl_l" + suffix_; }
  std::string worker(int w) const { return "tdrl_w" + std::to_string(w) + "_" + suffix_; }
  static std::string learner_address(int w) { return "10.231." + std::to_string(w) + ".1"; }
  static std::string worker_address(int w) { return "10.231." + std::to_string(w) + ".2"; }
  /// Takes worker w's link down (a cut cable), or up again.
  bool set_link(int w, bool up) {
    return run(in(learner(), "ip link set " + links_[w - 1] + (up ? " up" : " down")));
  }

 private:
  static std::string in(const std::string& ns, const std::string& command) {
    return "ip netns exec " + ns + " " + command;
  }
  static bool run(const std::string& command) {
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
  }

  std::string suffix_;
  std::string why_;
  std::vector<std::string> made_;
  std::vector<std::string> links_;
};

// A learner and two workers on three network "hosts". Cutting a worker's link mid-run: the
// learner reports the lost worker within the configured timeout, keeps the state it reached in
// a checkpoint, exits 1; with the link back, the run resumes from that checkpoint.
TEST(DistributedAcrossHostsTest, ACutLinkIsReportedWithinTheTimeoutAndTheRunResumes) {
  NetnsHosts hosts(2);
  if (!hosts.ok()) GTEST_SKIP() << hosts.why();
  TempDir tmp;
  const int port = 29600 + getpid() % 300;
  const auto config = write_ppo_config(
      tmp, "ppo_hosts.yaml", 4,
      "  mode: distributed\n  num_workers: 2\n  launch_workers: false\n  address: " +
          NetnsHosts::learner_address(1) + "\n  port: " + std::to_string(port) +
          "\n  timeout_s: 5\n  frames_per_batch: 256\n  total_frames: 4000000\n");
  // The learner on its host; the workers, started on the run's config once it exists.
  auto start_workers = [&](const std::string& run_config, const std::string& tag) {
    std::vector<std::unique_ptr<ChildProcess>> workers;
    for (int w = 1; w <= 2; ++w) {
      workers.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{
              "/usr/sbin/ip", "netns", "exec", hosts.worker(w), "/usr/bin/env",
              "TDRL_COLLECTOR_RANK=" + std::to_string(w), "TDRL_COLLECTOR_WORLD_SIZE=3",
              "TDRL_COLLECTOR_ADDR=" + NetnsHosts::learner_address(1),
              "TDRL_COLLECTOR_PORT=" + std::to_string(port), "TDRL_COLLECTOR_TIMEOUT_MS=5000",
              "TDRL_COLLECTOR_GLOO_HOSTNAME=" + NetnsHosts::worker_address(w), TDRL_TRAIN_EXE,
              "--config", run_config},
          tmp / (tag + "_worker" + std::to_string(w) + ".log")));
    }
    return workers;
  };
  const auto learner_log = tmp / "learner.log";
  std::string run;
  {
    ChildProcess learner(
        {"/usr/sbin/ip", "netns", "exec", hosts.learner(), TDRL_TRAIN_EXE, "--config", config},
        learner_log);
    // The run folder (and its config.yaml) appears before the rendezvous.
    for (auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
         run.empty() && std::chrono::steady_clock::now() < deadline && learner.running();) {
      std::error_code ec;
      if (fs::is_directory(tmp / "runs", ec))
        for (const auto& e : fs::directory_iterator(tmp / "runs", ec)) run = e.path().string();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_FALSE(run.empty()) << read_file_bytes(learner_log);
    auto workers = start_workers(run + "/config.yaml", "first");
    ASSERT_FALSE(wait_for_first_checkpoint(learner, tmp / "runs").empty())
        << read_file_bytes(learner_log);
    ASSERT_TRUE(hosts.set_link(1, false));
    const auto status = learner.wait(std::chrono::seconds(60));
    ASSERT_TRUE(status.has_value()) << "the learner did not notice the cut link";
    ASSERT_TRUE(WIFEXITED(*status));
    EXPECT_EQ(WEXITSTATUS(*status), 1) << read_file_bytes(learner_log);
    const auto log = read_file_bytes(run + "/train.log");
    EXPECT_THAT(log, HasSubstr("training stopped by an error"));
    EXPECT_THAT(log, HasSubstr("worker rank 1"));
    EXPECT_THAT(log, HasSubstr("kept the state at the error"));
  }
  const int64_t kept = checkpoint_frames(latest_checkpoint(run));
  // Link back: the run resumes from the kept checkpoint and goes on.
  ASSERT_TRUE(hosts.set_link(1, true));
  ChildProcess resumed(
      {"/usr/sbin/ip", "netns", "exec", hosts.learner(), TDRL_TRAIN_EXE, "--resume", run},
      tmp / "resumed.log");
  auto workers = start_workers(run + "/config.yaml", "resumed");
  for (auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
       checkpoint_frames(latest_checkpoint(run)) <= kept &&
       std::chrono::steady_clock::now() < deadline && resumed.running();)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GT(checkpoint_frames(latest_checkpoint(run)), kept)
      << read_file_bytes(tmp / "resumed.log");
  resumed.signal(SIGTERM);
  const auto status = resumed.wait(kProcessTimeout);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 130)
      << read_file_bytes(tmp / "resumed.log");
  EXPECT_THAT(read_file_bytes(run + "/train.log"), HasSubstr("resumed from"));
}

// ---------------------------------------------------------------- Seeds and early refusal

// The columns that measure time differ between two runs; every other cell must not.
std::vector<std::map<std::string, double>> without_timing(
    std::vector<std::map<std::string, double>> rows) {
  for (auto& row : rows)
    for (const char* c : {"fps", "wall_time", "collect_s", "optimize_s", "eval_s"}) row.erase(c);
  return rows;
}

TEST(SeedTest, DeterministicConfigsReproduceTheirMetricsBitForBit) {
  for (const std::string algo : {"ppo", "a2c", "dqn"}) {
    SCOPED_TRACE(algo);
    TempDir tmp;
    std::vector<std::vector<std::map<std::string, double>>> runs;
    for (const char* name : {"a", "b"}) {
      Trainer trainer(tiny_config(algo, {"seed=3"}), RunDir::create(tmp.path().string(), name));
      ASSERT_TRUE(trainer.train());
      runs.push_back(without_timing(read_metrics(trainer.run_dir().file("metrics.csv"))));
    }
    ASSERT_EQ(runs[0].size(), 4u);
    EXPECT_EQ(runs[0], runs[1]);
  }
}

TEST(SeedTest, EverySubSeedDerivesFromTheOneSeedAndIsRecorded) {
  const RunSeeds a = derive_seeds(0);
  const RunSeeds b = derive_seeds(1);
  EXPECT_EQ(derive_seeds(0).networks, a.networks);
  const std::set<uint64_t> distinct{a.networks, a.envs, a.eval, a.sampling};
  EXPECT_EQ(distinct.size(), 4u);
  EXPECT_NE(a.networks, b.networks);
  EXPECT_NE(a.eval, b.eval);
  TempDir tmp;
  Trainer trainer(tiny_config("ppo", {"seed=1"}), RunDir::create(tmp.path().string(), "t"));
  const auto text = read_file_bytes(trainer.run_dir().file("seeds.yaml"));
  EXPECT_THAT(text, HasSubstr("networks: " + std::to_string(b.networks)));
  EXPECT_THAT(text, HasSubstr("eval: " + std::to_string(b.eval)));
  EXPECT_EQ(trainer.seeds().sampling, b.sampling);
}

TEST(TrainerCheckTest, AlgorithmThatDoesNotSuitTheTaskIsRefusedNamingTheKeys) {
  auto config = tiny_config("dqn", {"env.name=Pendulum-v1"});
  const auto message = error_message<ConfigError>([&] { Trainer::check(config); });
  EXPECT_THAT(message, HasSubstr("'algo.name' is dqn"));
  EXPECT_THAT(message, HasSubstr("'env.name' Pendulum-v1"));
  auto ppo = tiny_config("ppo", {"optim.actor_lr=0.001"});
  EXPECT_THAT(error_message<ConfigError>([&] { Trainer::check(ppo); }),
              HasSubstr("'optim.actor_lr' is set, but ppo trains one optimiser"));
}

TEST(TrainToolTest, BadConfigsAreRefusedBeforeAnyRunFolderExists) {
  TempDir tmp;
  const std::string config = tmp / "c.yaml";
  {
    std::ofstream out(config);
    out << tiny_yaml("ppo");
  }
  const std::string runs = tmp / "runs";
  const std::vector<std::vector<std::string>> bad{{"collector.total_frames=-1000"},
                                                  {"collector.frames_per_batch=-64"},
                                                  {"optim.lr=-0.001"},
                                                  {"algo.gamma=1.5"},
                                                  {"algo.num_epochs=-1"},
                                                  {"threads=-3"},
                                                  {"device=banana"},
                                                  {"env.name=NoSuchEnv-v0"},
                                                  {"collector.port=4294997796"},
                                                  {"optim.actor_lr=0.001"}};
  for (const auto& sets : bad) {
    SCOPED_TRACE(sets.front());
    std::vector<std::string> args{TDRL_TRAIN_EXE, "--config", config, "--set",
                                  "logger.dir=" + runs};
    for (const auto& s : sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    const std::string log = tmp / "log.txt";
    ChildProcess train(args, log);
    const auto status = train.wait(std::chrono::seconds(60));
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(WIFEXITED(*status));
    EXPECT_EQ(WEXITSTATUS(*status), 2) << read_file_bytes(log);
    const std::string key = sets.back().substr(0, sets.back().find('='));
    EXPECT_THAT(read_file_bytes(log), HasSubstr("'" + key + "'"));
    EXPECT_FALSE(fs::exists(runs)) << "a refused config left " << runs;
  }
}

TEST(TrainToolTest, ACommandLineThatCannotBeParsedExitsTwo) {
  TempDir tmp;
  const std::string log = tmp / "log.txt";
  ChildProcess train({TDRL_TRAIN_EXE, "--no-such-option"}, log);
  const auto status = train.wait(std::chrono::seconds(60));
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2) << read_file_bytes(log);
}
}  // namespace
}  // namespace tdrl::apps
