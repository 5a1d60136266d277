// What the Trainer tests share: tiny configs of every algorithm, the acting part of a recipe,
// and readers of a run folder (metrics columns, checkpoints).

#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tdrl/apps/checkpoint.h>
#include <tdrl/apps/checkpoint_store.h>
#include <tdrl/apps/env_parts.h>
#include <tdrl/apps/main.h>
#include <tdrl/apps/metrics.h>
#include <tdrl/apps/registry.h>
#include <tdrl/apps/stop_signal.h>
#include <tdrl/apps/trainer.h>

#include "support/error_message.h"
#include "support/temp_dir.h"

namespace tdrl::apps::trainer_testing {

namespace fs = std::filesystem;
using tensordict::testing::read_file_bytes;
using tensordict::testing::TempDir;
using tensordict::testing::write_file_bytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kBatchFrames = 64;
constexpr int64_t kTotalFrames = 256;

inline bool is_on_policy(const std::string& algo) { return algo == "ppo" || algo == "a2c"; }

/// A tiny run of `algo`: 4 batches of 64 frames on CartPole-v1 (ppo, a2c, dqn) or Pendulum-v1
/// (ddpg, td3, sac). On-policy: 2 epochs of 2 minibatches per batch (4 updates). Off-policy: 2
/// updates per batch once the buffer holds init_random_frames = 128 (from the second batch).
inline std::string tiny_yaml(const std::string& algo) {
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

inline RunConfig tiny_config(const std::string& algo,
                             const std::vector<std::string>& overrides = {}) {
  register_builtin_components();
  return load_config_string(tiny_yaml(algo), overrides);
}

/// The acting part of `config`'s recipe, as tdrl-eval builds it.
struct Acting {
  EnvParts env;
  std::unique_ptr<Recipe> recipe;
};

inline Acting acting_of(const RunConfig& config) {
  Acting a;
  a.env = build_env_parts(config.env);
  a.recipe = make_acting_recipe(config, a.env);
  return a;
}

using tdrl::test_util::error_message;

inline std::string first_line(const std::string& path) {
  const auto text = read_file_bytes(path);
  return text.substr(0, text.find('\n'));
}

inline std::vector<double> column(const std::vector<std::map<std::string, double>>& rows,
                                  const std::string& name) {
  std::vector<double> out;
  for (const auto& row : rows) {
    auto it = row.find(name);
    out.push_back(it == row.end() ? std::numeric_limits<double>::quiet_NaN() : it->second);
  }
  return out;
}

/// The names in a folder, sorted.
inline std::set<std::string> entries_of(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename());
  return names;
}

inline std::string ckpt_name(int64_t frames) {
  std::string digits = std::to_string(frames);
  return "ckpt-" + std::string(12 - digits.size(), '0') + digits;
}

/// The latest committed checkpoint folder of a run (empty when none).
inline std::string latest_checkpoint(const std::string& run_path) {
  return CheckpointStore(run_path + "/checkpoints").latest().value_or("");
}

/// The trainer's frame counter stored in a checkpoint folder.
inline int64_t checkpoint_frames(const std::string& ckpt) {
  return load_checkpoint_state(ckpt).get({"trainer", "frames"}).item<int64_t>();
}

/// The metrics rows of the run folder `run` without the columns that time the run.
inline std::vector<std::map<std::string, double>> untimed_metrics(const std::string& run) {
  auto rows = read_metrics(run + "/metrics.csv");
  for (auto& row : rows)
    for (const char* timed : {"fps", "wall_time", "collect_s", "optimize_s", "eval_s"})
      row.erase(timed);
  return rows;
}

inline void expect_strictly_increasing(const std::vector<double>& v) {
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

// A tool's main (eval_main, envs_main) on `args` (after the program name), with its stdout.
inline std::pair<int, std::string> run_tool_main(int (*tool_main)(int, char**), const char* program,
                                                 std::vector<std::string> args) {
  args.insert(args.begin(), program);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  const int code = tool_main(static_cast<int>(argv.size()), argv.data());
  return {code, ::testing::internal::GetCapturedStdout()};
}

inline std::pair<int, std::string> run_eval_main(std::vector<std::string> args) {
  return run_tool_main(eval_main, "tdrl-eval", std::move(args));
}

}  // namespace tdrl::apps::trainer_testing
