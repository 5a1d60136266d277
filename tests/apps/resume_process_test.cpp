// Resuming for real: tdrl-train killed with SIGKILL at random moments, stopped with SIGTERM or
// Ctrl-C (also on a distributed run), and distributed collection across network namespaces
// with a link cut mid-run; each then run with --resume to completion. Also tdrl-train refusing
// bad configs and command lines before any run folder exists.

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
#include <torch/cuda.h>
#include <torch/torch.h>

#include <tdrl/apps/checkpoint.h>
#include <tdrl/apps/main.h>
#include <tdrl/apps/registry.h>
#include <tdrl/apps/stop_signal.h>
#include <tdrl/modules/egreedy.h>
#include <tensordict/errors.h>
#include <tensordict/torch_compat.h>

#include <tdrl/apps/checkpoint_store.h>

#include "support/build_paths.h"
#include "support/error_message.h"
#include "support/temp_dir.h"

#include "apps/trainer_test_util.h"

extern char** environ;

namespace tdrl::apps {
namespace {

using namespace tdrl::apps::trainer_testing;

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
  ChildProcess resume({tdrl::testing::launched_program(), "--resume", run}, log);
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
    ChildProcess train({tdrl::testing::launched_program(), "--config", config}, tmp / "train.log");
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
        run.empty()
            ? std::vector<std::string>{tdrl::testing::launched_program(), "--config", config}
            : std::vector<std::string>{tdrl::testing::launched_program(), "--resume", run};
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
    ChildProcess train({tdrl::testing::launched_program(), "--config", config}, log);
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
  ChildProcess train({tdrl::testing::launched_program(), "--config", config}, log,
                     /*own_group=*/true);
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

// A distributed run (workers in processes of their own) resumed from its checkpoint halfway
// writes the metrics of the run that never stopped: the workers' envs, episodes in flight and
// generators travel with the checkpoint.
TEST(ResumeTest, ResumedDistributedRunRepeatsTheUninterruptedRunBitForBit) {
  TempDir tmp;
  const auto config = write_ppo_config(tmp, "ppo_distributed.yaml", 1,
                                       "  mode: distributed\n  num_workers: 2\n"
                                       "  launch_workers: true\n  frames_per_batch: 256\n"
                                       "  total_frames: 2048\n");
  ChildProcess train({tdrl::testing::launched_program(), "--config", config}, tmp / "train.log");
  const auto status = train.wait(kProcessTimeout);
  ASSERT_TRUE(status.has_value() && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << read_file_bytes(tmp / "train.log");
  std::string whole;
  for (const auto& entry : fs::directory_iterator(tmp / "runs")) whole = entry.path().string();
  ASSERT_FALSE(whole.empty());

  // The same run as if it had been stopped after its checkpoint at 1024 frames.
  const std::string resumed = tmp / "resumed";
  fs::copy(whole, resumed, fs::copy_options::recursive);
  fs::remove_all(resumed + "/checkpoints/" + ckpt_name(2048));
  write_file_bytes(resumed + "/checkpoints/latest", ckpt_name(1024) + "\n");
  ChildProcess resume({tdrl::testing::launched_program(), "--resume", resumed}, tmp / "resume.log");
  const auto resume_status = resume.wait(kProcessTimeout);
  ASSERT_TRUE(resume_status.has_value() && WIFEXITED(*resume_status) &&
              WEXITSTATUS(*resume_status) == 0)
      << read_file_bytes(tmp / "resume.log");
  const auto expected = untimed_metrics(whole);
  const auto got = untimed_metrics(resumed);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "row " << i;
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
#if TDRL_TORCH_AT_LEAST(2, 0)
  // Open (issue 33's note): against PyPI's LibTorch 2.15 the cut is reported as it should be,
  // but in the resumed run worker 2, whose link was never cut and whose host reaches the
  // learner's, times out connecting to the learner's TCPStore (c10d's client: "timed out
  // (try=0)"), so the run does not go on. Not seen with LibTorch 1.13.
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION
               << ": a resumed run across network namespaces does not rejoin (open)";
#endif
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
              "TDRL_COLLECTOR_GLOO_HOSTNAME=" + NetnsHosts::worker_address(w),
              tdrl::testing::launched_program(), "--config", run_config},
          tmp / (tag + "_worker" + std::to_string(w) + ".log")));
    }
    return workers;
  };
  const auto learner_log = tmp / "learner.log";
  std::string run;
  {
    ChildProcess learner({"/usr/sbin/ip", "netns", "exec", hosts.learner(),
                          tdrl::testing::launched_program(), "--config", config},
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
  ChildProcess resumed({"/usr/sbin/ip", "netns", "exec", hosts.learner(),
                        tdrl::testing::launched_program(), "--resume", run},
                       tmp / "resumed.log");
  auto workers = start_workers(run + "/config.yaml", "resumed");
  for (auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
       checkpoint_frames(latest_checkpoint(run)) <= kept &&
       std::chrono::steady_clock::now() < deadline && resumed.running();)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GT(checkpoint_frames(latest_checkpoint(run)), kept)
      << read_file_bytes(tmp / "resumed.log") << "\nworker 1:\n"
      << read_file_bytes(tmp / "resumed_worker1.log") << "\nworker 2:\n"
      << read_file_bytes(tmp / "resumed_worker2.log");
  resumed.signal(SIGTERM);
  const auto status = resumed.wait(kProcessTimeout);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 130)
      << read_file_bytes(tmp / "resumed.log");
  EXPECT_THAT(read_file_bytes(run + "/train.log"), HasSubstr("resumed from"));
}

// ---------------------------------------------------------------- tdrl-train refusing to start

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
                                                  {"device=cuda:7"},
                                                  {"env.name=NoSuchEnv-v0"},
                                                  {"collector.port=4294997796"},
                                                  {"optim.actor_lr=0.001"}};
  for (const auto& sets : bad) {
    SCOPED_TRACE(sets.front());
    std::vector<std::string> args{tdrl::testing::launched_program(), "--config", config, "--set",
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
  ChildProcess train({tdrl::testing::launched_program(), "--no-such-option"}, log);
  const auto status = train.wait(std::chrono::seconds(60));
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2) << read_file_bytes(log);
}

// Runs tdrl-train with `args` to its end; its exit status and output.
std::pair<int, std::string> run_train(const TempDir& tmp, std::vector<std::string> args,
                                      const std::string& log_name) {
  args.insert(args.begin(), tdrl::testing::launched_program());
  const std::string log = tmp / log_name;
  ChildProcess train(args, log);
  const auto status = train.wait(kProcessTimeout);
  if (!status || !WIFEXITED(*status)) return {-1, read_file_bytes(log)};
  return {WEXITSTATUS(*status), read_file_bytes(log)};
}

// The one run folder under tmp/runs.
std::string only_run(const TempDir& tmp) {
  std::string run;
  for (const auto& e : fs::directory_iterator(tmp / "runs")) run = e.path().string();
  return run;
}

TEST(TrainToolTest, AResumedRunChangesOnlyWhereItRuns) {
  TempDir tmp;
  const auto config =
      write_ppo_config(tmp, "ppo.yaml", 4, "  frames_per_batch: 256\n  total_frames: 1024\n");
  const auto [first, first_log] = run_train(tmp, {"--config", config}, "first.log");
  ASSERT_EQ(first, 0) << first_log;
  const std::string run = only_run(tmp);
  // Anything but the device is refused, and the run is left as it was.
  const auto [refused, refused_log] =
      run_train(tmp, {"--resume", run, "--set", "optim.lr=0.1"}, "refused.log");
  EXPECT_EQ(refused, 2);
  EXPECT_THAT(refused_log, HasSubstr("--set optim.lr=0.1: a resumed run keeps its config.yaml; "
                                     "only device and replay.device can change on --resume"));
  EXPECT_THAT(read_file_bytes(run + "/config.yaml"), HasSubstr("lr: 3e-04"));
  // The device may change (here to the CPU it ran on).
  const auto [resumed, resumed_log] =
      run_train(tmp, {"--resume", run, "--set", "device=cpu"}, "resumed.log");
  EXPECT_EQ(resumed, 0) << resumed_log;
}

TEST(TrainToolCUDATest, ACheckpointWrittenOnTheGpuResumesOnTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine";
  TempDir tmp;
  const auto config =
      write_ppo_config(tmp, "ppo.yaml", 4, "  frames_per_batch: 256\n  total_frames: 2048\n");
  const auto [first, first_log] =
      run_train(tmp, {"--config", config, "--set", "device=cuda"}, "gpu.log");
  ASSERT_EQ(first, 0) << first_log;
  const std::string run = only_run(tmp);
  // Stopped after its first checkpoint, as if interrupted there; then resumed on the CPU.
  fs::remove_all(run + "/checkpoints/" + ckpt_name(2048));
  write_file_bytes(run + "/checkpoints/latest", ckpt_name(1024) + "\n");
  const auto [resumed, resumed_log] =
      run_train(tmp, {"--resume", run, "--set", "device=cpu"}, "cpu.log");
  EXPECT_EQ(resumed, 0) << resumed_log;
  EXPECT_THAT(read_file_bytes(run + "/train.log"), HasSubstr("resumed from"));
  EXPECT_EQ(checkpoint_frames(latest_checkpoint(run)), 2048);
}

}  // namespace
}  // namespace tdrl::apps
