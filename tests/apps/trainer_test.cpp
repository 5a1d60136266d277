// Tests of the generic training loop: every recipe end to end on a tiny budget, hooks,
// deterministic evaluation, non-finite losses, stop signals, resuming in process, seeds, and
// configs refused before a run starts (resume_process_test.cpp kills and resumes real
// processes).

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
#include <ostream>
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
#include <tdrl/apps/learning_curve.h>
#include <tdrl/apps/main.h>
#include <tdrl/apps/registry.h>
#include <tdrl/apps/stop_signal.h>
#include <tdrl/envs/registry.h>
#include <tdrl/modules/egreedy.h>
#include <tensordict/errors.h>

#include <tdrl/apps/checkpoint_store.h>

#include "apps/trainer_test_util.h"
#include "support/error_message.h"
#include "support/mock_envs.h"
#include "support/temp_dir.h"

extern char** environ;

namespace tdrl::apps {
namespace {

using namespace tdrl::apps::trainer_testing;

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
    {"ppo", "loss_objective,entropy,loss_critic,explained_variance,ESS,kl_approx,clip_fraction"},
    {"a2c", "loss_objective,entropy,loss_critic,explained_variance"},
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
  for (const auto& [name, value] : rows.back()) {
    if (name.rfind("grad_norm_", 0) == 0) {
      EXPECT_TRUE(std::isfinite(value) && value > 0) << name;
    }
  }
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
  if (learning_curves_available()) {
    EXPECT_THAT(read_file_bytes(run.file("learning_curve.svg")), HasSubstr("<svg"));
    EXPECT_EQ(read_file_bytes(run.file("learning_curve.png")).substr(1, 3), "PNG");
  } else {
    EXPECT_FALSE(fs::exists(run.file("learning_curve.svg")));
    EXPECT_THAT(read_file_bytes(run.file("train.log")), HasSubstr("draws no pictures"));
  }
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

// collector.total_frames: -1 (the collector's own "never end") trains until a signal stops it,
// with the checkpoint a stop writes; a linear learning-rate decay, which needs an end, is
// refused before the run.
TEST(TrainerTest, AnEndlessRunTrainsUntilASignalStopsIt) {
  StopSignalGuard guard;
  TempDir tmp;
  const RunConfig endless = tiny_config("ppo", {"collector.total_frames=-1"});
  Trainer trainer(endless, RunDir::create(tmp.path().string(), "t"));
  trainer.add_hook(HookPoint::kBatch, [](Trainer& t) {
    if (t.frames() == 320) ::raise(SIGINT);
  });
  EXPECT_FALSE(trainer.train());
  EXPECT_EQ(trainer.frames(), 320);  // past the 256 frames tiny configs otherwise stop at
  EXPECT_EQ(checkpoint_frames(latest_checkpoint(trainer.run_dir().path())), 320);

  EXPECT_THAT(
      error_message<ConfigError>([] {
        Trainer::check(
            tiny_config("ppo", {"collector.total_frames=-1", "optim.lr_schedule=linear"}));
      }),
      HasSubstr("'optim.lr_schedule' is linear, which decays to 0 at collector.total_frames, and "
                "'collector.total_frames' is -1 (never end)"));
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
  EXPECT_EQ(CheckpointStore::damage(run + "/checkpoints/best"), std::nullopt);
  EXPECT_TRUE(fs::exists(run + "/checkpoints/best/MANIFEST"));
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

// tdrl-envs as a function: a user's own env is in its table; an unknown env exits 1 naming the
// closest names, and a usage error exits 2, as tdrl-train's does.
TEST(EnvsMainTest, ListsTheCallersEnvsAndRefusesBadInput) {
  const std::string name = "EnvsMainTestContinuous-v0";
  if (!tdrl::envs::is_env_registered(name))
    tdrl::envs::register_env(name, [](const tdrl::envs::EnvOptions& options) {
      return std::static_pointer_cast<tdrl::envs::EnvBase>(
          tdrl::testing::continuous(options.batch_size()));
    });
  const auto [listed, names] = run_tool_main(envs_main, "tdrl-envs", {"--names-only"});
  EXPECT_EQ(listed, 0);
  EXPECT_THAT(names, AllOf(HasSubstr("CartPole-v1\n"), HasSubstr(name + "\n")));
  const auto [table_code, table] = run_tool_main(envs_main, "tdrl-envs", {});
  EXPECT_EQ(table_code, 0);
  EXPECT_THAT(table, HasSubstr(name));

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_tool_main(envs_main, "tdrl-envs", {"--env", "CartPol-v1"}).first, 1);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("CartPole-v1"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_tool_main(envs_main, "tdrl-envs", {"--no-such-flag"}).first, 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("--no-such-flag"));
  // A plugin that is not there: a usage error naming it (a real plugin: the package test).
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_tool_main(envs_main, "tdrl-envs", {"--plugin", "no_such_plugin.so"}).first, 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("--plugin no_such_plugin.so: no such file"));
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

struct ResumeCase {
  std::string algo;
  std::vector<std::string> overrides;
};

std::ostream& operator<<(std::ostream& os, const ResumeCase& c) {
  os << c.algo;
  for (const auto& o : c.overrides) os << " " << o;
  return os;
}

class ResumeStreamTest : public ::testing::TestWithParam<ResumeCase> {};

// Stopped at 192 frames and resumed from the checkpoint at 128 (mid-episode: Pendulum's
// episodes last 200 steps), a run writes the same metrics as the run that never stopped: the
// envs, the episodes in flight, the replay buffer, the exploration and the RNGs all continue.
TEST_P(ResumeStreamTest, ResumedRunRepeatsTheUninterruptedRunBitForBit) {
  const auto& c = GetParam();
  TempDir tmp;
  auto overrides = c.overrides;
  overrides.push_back("eval.interval_frames=64");
  const auto run = crashed_run(tmp, c.algo, HookPoint::kLog, overrides);
  overrides.push_back("checkpoint.interval_frames=64");  // as crashed_run adds it
  Trainer uninterrupted(tiny_config(c.algo, overrides),
                        RunDir::create(tmp.path().string(), "whole"));
  ASSERT_TRUE(uninterrupted.train());

  Trainer resumed(load_config(run + "/config.yaml"), RunDir::open(run), /*resume=*/true);
  ASSERT_TRUE(resumed.train());
  EXPECT_EQ(resumed.frames(), kTotalFrames);
  const auto expected = untimed_metrics(uninterrupted.run_dir().path());
  const auto got = untimed_metrics(run);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "row " << i;
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, ResumeStreamTest,
    ::testing::Values(ResumeCase{"td3", {}}, ResumeCase{"sac", {}}, ResumeCase{"ddpg", {}},
                      ResumeCase{"dqn", {}}, ResumeCase{"ppo", {}},
                      ResumeCase{"sac", {"env.num_envs=2"}},
                      // Recurrent: the hidden states of the episodes in
                      // flight resume with them.
                      ResumeCase{"ppo",
                                 {"model.core=lstm", "model.hidden_size=8", "env.num_envs=2"}},
                      ResumeCase{"dqn",
                                 {"model.core=gru", "model.hidden_size=8", "algo.sequence_length=8",
                                  "algo.burn_in=2", "replay.batch_size=32"}}));

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
                                          "algo.annealing_num_steps=1000"};
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

// A collector key the mode does not read is refused instead of ignored, naming the modes that do.
TEST(TrainerCheckTest, ACollectorKeyItsModeDoesNotReadIsRefused) {
  auto single = tiny_config("ppo", {"collector.num_workers=4"});
  EXPECT_THAT(error_message<ConfigError>([&] { Trainer::check(single); }),
              HasSubstr("'collector.num_workers' is set, but collector.mode single does not read "
                        "it (sync, async and distributed do); remove it, or set collector.mode"));
  auto sync = tiny_config("ppo", {"collector.mode=sync", "collector.num_workers=2",
                                  "collector.port=5000", "collector.timeout_s=30"});
  const auto message = error_message<ConfigError>([&] { Trainer::check(sync); });
  EXPECT_THAT(message, HasSubstr("(2 problems)"));
  EXPECT_THAT(message, HasSubstr("'collector.port' is set, but collector.mode sync does not read "
                                 "it (distributed do)"));
  EXPECT_THAT(message, HasSubstr("'collector.timeout_s' is set"));
  Trainer::check(tiny_config("ppo", {"collector.mode=sync", "collector.num_workers=2"}));
}

// algo.entropy_coef weights a term that entropy_bonus turns on (the loss's own two options): a
// weight without the term would be ignored, so it is refused naming both keys.
TEST(TrainerCheckTest, EntropyCoefWithoutEntropyBonusIsRefused) {
  for (const std::string algo : {"ppo", "a2c"}) {
    SCOPED_TRACE(algo);
    auto config = tiny_config(algo, {"algo.entropy_coef=0.01"});
    const auto message = error_message<ConfigError>([&] { Trainer::check(config); });
    EXPECT_THAT(message, HasSubstr("'algo.entropy_coef' is 0.01, but 'algo.entropy_bonus' is "
                                   "false"));
    EXPECT_THAT(message, HasSubstr("set algo.entropy_bonus: true"));
    Trainer::check(tiny_config(algo, {"algo.entropy_coef=0.01", "algo.entropy_bonus=true"}));
  }
}

// A user's recipe that leaves parts empty: no loss and no optimiser, and an actor only when its
// section says so.
struct PartialAlgoConfig : AlgoConfig {
  bool with_actor = true;
  void fields(FieldVisitor& v) override { v("with_actor", with_actor, "build an actor"); }
};

class PartialRecipe : public Recipe {
 public:
  explicit PartialRecipe(const PartialAlgoConfig& config) : with_actor_(config.with_actor) {}
  void build_acting(const RecipeContext& context) override {
    const auto ppo = tiny_config("ppo");
    if (with_actor_) actor = make_acting_recipe(ppo, recipe_context(ppo, context.env))->actor;
  }
  void build_learning(const RecipeContext&) override {}

 private:
  bool with_actor_;
};

TEST(TrainerCheckTest, ARecipeThatLeavesARequiredPartEmptyIsRefusedNamingTheAlgorithm) {
  register_builtin_components();
  if (!find_algorithm("test_partial_algo"))
    register_algorithm<PartialAlgoConfig, PartialRecipe>("test_partial_algo", "parts missing");
  const auto yaml = [](bool with_actor) {
    return std::string("env: {name: CartPole-v1}\n") +
           "algo: {name: test_partial_algo, with_actor: " + (with_actor ? "true" : "false") +
           "}\ncollector: {frames_per_batch: 64, total_frames: 128}\nlogger: {progress: none}\n";
  };
  // Refused by the check tdrl-train makes before the run folder exists, and by the Trainer
  // before it writes a file of the run.
  TempDir tmp;
  EXPECT_THAT(error_message<ConfigError>([&] { Trainer::check(load_config_string(yaml(false))); }),
              HasSubstr("the recipe of algorithm 'test_partial_algo' built no actor"));
  const RunDir refused = RunDir::create(tmp.path().string(), "b");
  EXPECT_THAT(error_message<ConfigError>([&] { Trainer(load_config_string(yaml(true)), refused); }),
              HasSubstr("the recipe of algorithm 'test_partial_algo' built no loss"));
  EXPECT_FALSE(fs::exists(refused.file("config.yaml")));
  EXPECT_FALSE(fs::exists(refused.file("train.log")));
}

// User recipes of one weight: the built-in ppo actor (built from the task alone, reading no
// section), a loss writing `loss_x` and the entries `extra` names, and an optimiser of their
// own (SGD). Each variant below trips one check of Trainer::check.
class OneWeightLoss : public losses::LossModule {
 public:
  explicit OneWeightLoss(std::vector<std::string> extra)
      : LossModule("OneWeightLoss", {{"observation", tensordict::NestedKey("observation")}},
                   {"observation"}),
        extra_(std::move(extra)) {
    std::vector<std::string> out_keys = {"loss_x"};
    out_keys.insert(out_keys.end(), extra_.begin(), extra_.end());
    set_out_keys(out_keys);
    weight_ = register_parameter("weight", torch::ones({1}));
  }

 protected:
  TensorDict forward_impl(const TensorDict&) override {
    TensorDict out({}, {});
    out.set("loss_x", weight_.sum());
    for (const auto& key : extra_) out.set(key, weight_.detach().sum());
    return out;
  }

 private:
  std::vector<std::string> extra_;
  torch::Tensor weight_;
};

struct OneWeightConfig : AlgoConfig {
  void fields(FieldVisitor&) override {}
};

class OneWeightRecipe : public Recipe {
 public:
  explicit OneWeightRecipe(const OneWeightConfig&) {}
  void build_acting(const RecipeContext& context) override {
    const auto ppo = tiny_config("ppo");
    actor = make_acting_recipe(ppo, recipe_context(ppo, context.env))->actor;
  }
  void build_learning(const RecipeContext&) override {
    loss = std::make_shared<OneWeightLoss>(extra_entries());
    OptimizerGroup all;
    all.name = "all";
    all.optimizer = optimizer(loss->parameters());
    optimizers.push_back(std::move(all));
  }

 protected:
  virtual std::vector<std::string> extra_entries() const { return {}; }
  virtual std::shared_ptr<torch::optim::Optimizer> optimizer(
      std::vector<torch::Tensor> params) const {
    return std::make_shared<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(0.1));
  }
};

// A loss whose diagnostic takes the name of a run column ("fps"): metrics.csv would have two
// columns of that name, so the recipe is refused before any file of the run exists.
class FpsNamedRecipe : public OneWeightRecipe {
 public:
  using OneWeightRecipe::OneWeightRecipe;

 protected:
  std::vector<std::string> extra_entries() const override { return {"fps"}; }
};

TEST(TrainerCheckTest, ALossEntryNamedLikeARunColumnIsRefusedBeforeTheRun) {
  register_builtin_components();
  if (!find_algorithm("test_fps_named"))
    register_algorithm<OneWeightConfig, FpsNamedRecipe>("test_fps_named", "a clashing entry");
  const RunConfig config = load_config_string(
      "env: {name: CartPole-v1}\nalgo: {name: test_fps_named}\n"
      "collector: {frames_per_batch: 64, total_frames: 128}\nlogger: {progress: none}\n");
  EXPECT_THAT(error_message<ConfigError>([&] { Trainer::check(config); }),
              HasSubstr("the metrics column 'fps' would be written twice (by updates of the loss "
                        "and a part before it); rename the loss's out key 'fps'"));
  TempDir tmp;
  const RunDir refused = RunDir::create(tmp.path().string(), "fps");
  EXPECT_THROW(Trainer(config, refused), ConfigError);
  EXPECT_FALSE(fs::exists(refused.file("config.yaml")));
}

// An LBFGS optimiser, whose state (lists of past directions) checkpoints cannot hold as
// tensors: refused before the run rather than at its first checkpoint.
class LbfgsRecipe : public OneWeightRecipe {
 public:
  using OneWeightRecipe::OneWeightRecipe;

 protected:
  std::shared_ptr<torch::optim::Optimizer> optimizer(
      std::vector<torch::Tensor> params) const override {
    return std::make_shared<torch::optim::LBFGS>(std::move(params));
  }
};

TEST(TrainerCheckTest, AnOptimiserWhoseStateCheckpointsCannotHoldIsRefusedBeforeTheRun) {
  register_builtin_components();
  if (!find_algorithm("test_lbfgs"))
    register_algorithm<OneWeightConfig, LbfgsRecipe>("test_lbfgs", "an LBFGS optimiser");
  const RunConfig config = load_config_string(
      "env: {name: CartPole-v1}\nalgo: {name: test_lbfgs}\n"
      "collector: {frames_per_batch: 64, total_frames: 128}\nlogger: {progress: none}\n");
  EXPECT_THAT(
      error_message<ConfigError>([&] { Trainer::check(config); }),
      ::testing::AllOf(HasSubstr("the recipe of algorithm 'test_lbfgs': optimiser group 'all'"),
                       HasSubstr("LBFGS"), HasSubstr("Adam, AdamW, SGD, RMSprop and Adagrad")));
}

// OneWeightRecipe reads neither the model nor the optim section: model and optimiser keys set
// for it would be ignored, so they are refused (the Trainer's own optim.max_grad_norm and
// lr_schedule are not).
TEST(TrainerCheckTest, ModelAndOptimiserKeysARecipeNeverReadsAreRefusedBeforeTheRun) {
  register_builtin_components();
  if (!find_algorithm("test_reads_nothing"))
    register_algorithm<OneWeightConfig, OneWeightRecipe>("test_reads_nothing", "no sections");
  const std::string yaml =
      "env: {name: CartPole-v1}\nalgo: {name: test_reads_nothing}\n"
      "collector: {frames_per_batch: 64, total_frames: 128}\nlogger: {progress: none}\n";
  Trainer::check(load_config_string(yaml, {"optim.max_grad_norm=0.5"}));
  const std::string message = error_message<ConfigError>([&] {
    Trainer::check(load_config_string(
        yaml, {"model.actor_cells=[32]", "model.activation=relu", "optim.name=adamw"}));
  });
  EXPECT_THAT(message, HasSubstr("'model.activation' and 'model.actor_cells' are set, but the "
                                 "recipe of algorithm 'test_reads_nothing' never reads the model "
                                 "section (RecipeContext::model())"));
  EXPECT_THAT(message, HasSubstr("'optim.name' is set, but the recipe of algorithm "
                                 "'test_reads_nothing' never reads the optim section"));
  // A recipe that reads them (every built-in one) takes the same keys.
  Trainer::check(tiny_config("ppo", {"model.actor_cells=[32]", "optim.name=adamw"}));
}

// A user's off-policy recipe with a replay section that never samples by priority: its learning
// parts are SAC's (built from a config of its own, without prioritized replay).
struct NoPriorityConfig : AlgoConfig {
  ReplaySection replay_section;
  ReplaySection* replay() override { return &replay_section; }
  void fields(FieldVisitor&) override {}
};

class NoPriorityRecipe : public Recipe {
 public:
  explicit NoPriorityRecipe(const NoPriorityConfig&) {}
  void build_acting(const RecipeContext& context) override {
    sac_ = make_acting_recipe(sac_config_, recipe_context(sac_config_, context.env));
    actor = sac_->actor;
    exploration_policy = sac_->exploration_policy;
    policy_factory = sac_->policy_factory;
  }
  void build_learning(const RecipeContext& context) override {
    sac_->build_learning(recipe_context(sac_config_, context.env));
    loss = sac_->loss;
    optimizers = sac_->optimizers;
    replay = sac_->replay;
  }

 private:
  RunConfig sac_config_ = tiny_config("sac");
  std::unique_ptr<Recipe> sac_;
};

TEST(TrainerCheckTest, PrioritizedReplayForARecipeThatNeverUpdatesPrioritiesIsRefused) {
  register_builtin_components();
  if (!find_algorithm("test_no_priority_algo"))
    register_algorithm<NoPriorityConfig, NoPriorityRecipe>("test_no_priority_algo",
                                                           "no priorities");
  const auto yaml = [](bool prioritized) {
    return std::string("env: {name: Pendulum-v1}\nalgo: {name: test_no_priority_algo}\n") +
           "replay: {capacity: 1000, batch_size: 32, prioritized: " +
           (prioritized ? "true" : "false") +
           "}\ncollector: {frames_per_batch: 64, total_frames: 128}\nlogger: {progress: none}\n";
  };
  TempDir tmp;
  EXPECT_THAT(error_message<ConfigError>([&] { Trainer::check(load_config_string(yaml(true))); }),
              AllOf(HasSubstr("'replay.prioritized' is true"),
                    HasSubstr("'test_no_priority_algo' never updates priorities")));
  // Without prioritized replay it trains.
  Trainer trainer(load_config_string(yaml(false)), RunDir::create(tmp.path().string(), "b"));
  EXPECT_TRUE(trainer.train());
}

// ---------------------------------------------------------------- train.cuda_graph

TEST(TrainerTest, ACudaGraphOnTheCpuOrWithoutAdamIsRefusedBeforeTheRun) {
  const auto on_cpu = error_message<ConfigError>(
      [] { Trainer::check(tiny_config("sac", {"train.cuda_graph=true"})); });
  EXPECT_THAT(on_cpu, HasSubstr("'train.cuda_graph' is true and 'device' is 'cpu'"));
  EXPECT_THAT(on_cpu, HasSubstr("set train.cuda_graph: false"));
  const auto sgd = error_message<ConfigError>([] {
    Trainer::check(tiny_config("sac", {"train.cuda_graph=true", "optim.name=sgd"}));
  });
  EXPECT_THAT(sgd, HasSubstr("'optim.name' is 'sgd'; a captured update needs optim.name: adam"));
}

// A tiny run on the GPU: its metrics rows, and each parameter before and after.
struct GpuRun {
  std::vector<std::map<std::string, double>> rows;
  std::vector<torch::Tensor> before, after;
  int64_t updates = 0;
};

GpuRun train_on_gpu(const std::string& algo, bool cuda_graph) {
  TempDir tmp;
  Trainer trainer(
      tiny_config(algo, {"device=cuda", "algo.updates_per_batch=8",
                         std::string("train.cuda_graph=") + (cuda_graph ? "true" : "false")}),
      RunDir::create(tmp.path().string(), "t"));
  GpuRun run;
  for (const auto& p : trainer.recipe().loss->parameters())
    run.before.push_back(p.detach().cpu().clone());
  EXPECT_TRUE(trainer.train());
  for (const auto& p : trainer.recipe().loss->parameters()) run.after.push_back(p.detach().cpu());
  run.rows = read_metrics(trainer.run_dir().file("metrics.csv"));
  run.updates = trainer.updates();
  return run;
}

double largest_change(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  return worst;
}

// With and without the graph, the same updates: 8 per batch from the second batch on (the first
// of each kind eager, the second captured, the rest replayed; TD3's delayed actor makes two
// kinds). DDPG draws no noise inside its update, so its parameters agree to rounding; TD3's and
// SAC's noise comes from other offsets of the generator inside a graph, so theirs agree in
// distribution: finite losses, and parameters that moved as far.
TEST(TrainerCUDATest, CapturedUpdatesTrainAsEagerOnes) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine";
  for (const std::string algo : {"ddpg", "td3", "sac"}) {
    SCOPED_TRACE(algo);
    const auto eager = train_on_gpu(algo, false);
    const auto graph = train_on_gpu(algo, true);
    EXPECT_EQ(graph.updates, 24);
    EXPECT_EQ(graph.updates, eager.updates);
    for (const auto& [name, value] : graph.rows.back()) {
      if (name.rfind("loss_", 0) == 0 || name.rfind("grad_norm_", 0) == 0) {
        EXPECT_TRUE(std::isfinite(value)) << name;
        ASSERT_EQ(eager.rows.back().count(name), 1u) << name;
      }
    }
    const double moved_eager = largest_change(eager.before, eager.after);
    const double moved_graph = largest_change(graph.before, graph.after);
    EXPECT_GT(moved_graph, 1e-4);
    if (algo == "ddpg") {
      EXPECT_LT(largest_change(eager.after, graph.after), 1e-3 * std::max(1.0, moved_eager));
    } else {
      EXPECT_GT(moved_graph, 0.5 * moved_eager);
      EXPECT_LT(moved_graph, 2.0 * moved_eager);
    }
  }
}

}  // namespace
}  // namespace tdrl::apps
