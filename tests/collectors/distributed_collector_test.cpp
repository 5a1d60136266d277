// DistributedCollector: this process is the trainer (rank 0); its workers are processes of
// tdrl_collectors_worker (see distributed_scenarios.h) on 127.0.0.1, launched through
// launch_command or, in one test, by the test itself with the worker variables.

#include <tdrl/collectors/distributed_collector.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>

#include "collector_test_fixtures.h"
#include "collectors/distributed_scenarios.h"
#include "support/build_paths.h"
#include "support/test_names.h"

extern char** environ;

namespace tdrl::collectors {
namespace {

using namespace tdrl::testing::names;
using Clock = std::chrono::steady_clock;

// Two launched workers running `scenario` on 127.0.0.1.
DistributedOptions launched(const std::string& scenario, bool sync = true,
                            std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  return DistributedOptions().num_workers(2).sync(sync).timeout(timeout).launch_command(
      {tdrl::testing::launched_program(), scenario});
}

// True when this process has no child process left, running or zombie. A sanitizer's
// symbolizer does not count: clang's ThreadSanitizer starts llvm-symbolizer as a child to match
// its suppressions, and it stays. Where the kernel does not list children
// (/proc/<pid>/task/<tid>/children), any child counts.
bool no_child_processes() {
  bool listed = false;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream children(task.path() / "children");
    if (!children) continue;
    listed = true;
    pid_t pid = 0;
    while (children >> pid) {
      std::ifstream comm_file("/proc/" + std::to_string(pid) + "/comm");
      std::string comm;
      std::getline(comm_file, comm);
      if (comm != "llvm-symbolizer" && comm != "addr2line") return false;
    }
  }
  if (listed) return true;
  errno = 0;
  return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

torch::Tensor traj_ids(const TensorDict& batch) { return batch.get(traj_ids_key()); }

// Sets (or, with nullopt, unsets) environment variables for one scope.
class ScopedEnv {
 public:
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) apply(it->first, it->second);
  }
  void set(const std::string& name, std::optional<std::string> value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    apply(name, value);
  }

 private:
  static void apply(const std::string& name, const std::optional<std::string>& value) {
    if (value)
      setenv(name.c_str(), value->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A valid set of worker variables (rank 2 of 3), which a test then spoils.
void set_valid_worker_env(ScopedEnv& env) {
  env.set("TDRL_COLLECTOR_RANK", "2");
  env.set("TDRL_COLLECTOR_WORLD_SIZE", "3");
  env.set("TDRL_COLLECTOR_ADDR", "10.1.2.3");
  env.set("TDRL_COLLECTOR_PORT", "29511");
  env.set("TDRL_COLLECTOR_TIMEOUT_MS", "1500");
  env.set("TDRL_COLLECTOR_GLOO_HOSTNAME", std::nullopt);
}

// ---- worker_identity_from_env ---------------------------------------------------------------

TEST(DistributedCollectorTest, WorkerIdentityFromEnvIsEmptyWithoutRank) {
  ScopedEnv env;
  env.set("TDRL_COLLECTOR_RANK", std::nullopt);
  env.set("TDRL_COLLECTOR_PORT", "abc");  // ignored: this process is not a worker
  EXPECT_FALSE(worker_identity_from_env().has_value());
}

TEST(DistributedCollectorTest, WorkerIdentityFromEnvReadsEveryVariable) {
  ScopedEnv env;
  set_valid_worker_env(env);
  env.set("TDRL_COLLECTOR_GLOO_HOSTNAME", "node7");
  auto identity = worker_identity_from_env();
  ASSERT_TRUE(identity.has_value());
  EXPECT_EQ(identity->rank, 2);
  EXPECT_EQ(identity->options.num_workers(), 2);
  EXPECT_EQ(identity->options.address(), "10.1.2.3");
  EXPECT_EQ(identity->options.port(), 29511);
  EXPECT_EQ(identity->options.timeout(), std::chrono::milliseconds(1500));
  EXPECT_EQ(identity->options.gloo_hostname(), "node7");
}

TEST(DistributedCollectorTest, WorkerIdentityFromEnvRejectsMalformedVariablesNamingThem) {
  struct Case {
    const char* name;
    std::optional<std::string> value;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"TDRL_COLLECTOR_RANK", "two", "TDRL_COLLECTOR_RANK is 'two'"},
      {"TDRL_COLLECTOR_RANK", "0", "[1, 2]"},
      {"TDRL_COLLECTOR_RANK", "3", "TDRL_COLLECTOR_RANK is '3'"},
      {"TDRL_COLLECTOR_RANK", "1x", "TDRL_COLLECTOR_RANK is '1x'"},
      {"TDRL_COLLECTOR_WORLD_SIZE", std::nullopt, "TDRL_COLLECTOR_WORLD_SIZE is not"},
      {"TDRL_COLLECTOR_WORLD_SIZE", "1", "TDRL_COLLECTOR_WORLD_SIZE is '1'"},
      {"TDRL_COLLECTOR_ADDR", std::nullopt, "TDRL_COLLECTOR_ADDR is not"},
      {"TDRL_COLLECTOR_ADDR", "", "TDRL_COLLECTOR_ADDR is empty"},
      {"TDRL_COLLECTOR_PORT", std::nullopt, "TDRL_COLLECTOR_PORT is not"},
      {"TDRL_COLLECTOR_PORT", "70000", "[1, 65535]"},
      {"TDRL_COLLECTOR_PORT", "", "TDRL_COLLECTOR_PORT is ''"},
      {"TDRL_COLLECTOR_TIMEOUT_MS", "0", "TDRL_COLLECTOR_TIMEOUT_MS is '0'"},
      {"TDRL_COLLECTOR_TIMEOUT_MS", "-5", "positive integer"},
  };
  for (const auto& c : cases) {
    ScopedEnv env;
    set_valid_worker_env(env);
    env.set(c.name, c.value);
    EXPECT_THAT([] { worker_identity_from_env(); },
                ThrowsMessage<tensordict::ValueError>(
                    AllOf(HasSubstr("worker_identity_from_env"), HasSubstr(c.expected))))
        << c.name << "=" << c.value.value_or("(unset)");
  }
}

// ---- Construction -------------------------------------------------------------------------

TEST(DistributedCollectorTest, ConstructorRejectsBadOptionsBeforeStartingAnything) {
  const auto options = CollectorOptions().frames_per_batch(8);
  EXPECT_THAT([&] { DistributedCollector(nullptr, options, DistributedOptions()); },
              ThrowsMessage<tensordict::ValueError>(
                  AllOf(HasSubstr("port 0"), HasSubstr("launch_command"))));
  EXPECT_THAT([&] { DistributedCollector(nullptr, options, launched("random").num_workers(0)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("num_workers is 0")));
  EXPECT_THAT(
      [&] {
        DistributedCollector(nullptr, CollectorOptions().frames_per_batch(0), launched("random"));
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("frames_per_batch is 0")));
  EXPECT_THAT(
      [&] {
        DistributedCollector(nullptr, CollectorOptions().frames_per_batch(8).total_frames(0),
                             launched("random"));
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("total_frames is 0")));
  EXPECT_TRUE(no_child_processes());
}

TEST(DistributedCollectorTest, AWorkerThatEndsAtStartUpIsReportedWhenItExits) {
  // /bin/false ends at once without joining; the timeout (the default, 120 s) is not waited.
  const auto start = Clock::now();
  EXPECT_THAT(
      [] {
        DistributedCollector(nullptr, CollectorOptions().frames_per_batch(8),
                             DistributedOptions().num_workers(2).launch_command({"/bin/false"}));
      },
      ThrowsMessage<tensordict::Error>(AllOf(HasSubstr("a worker ended before joining"),
                                             HasSubstr("(pid "),
                                             HasSubstr("exited with status 1"))));
  EXPECT_LT(seconds_since(start), 60.0);
  EXPECT_TRUE(no_child_processes()) << "launched workers are reaped when the constructor throws";
}

TEST(DistributedCollectorTest, ConstructorThrowsWhenWorkersDoNotJoinWithinTheTimeout) {
  // sleep runs on without joining: the timeout ends the wait, and the workers are killed.
  EXPECT_THAT(
      [] {
        DistributedCollector(nullptr, CollectorOptions().frames_per_batch(8),
                             DistributedOptions()
                                 .num_workers(2)
                                 .timeout(std::chrono::milliseconds(1500))
                                 .launch_command({"/bin/sleep", "30"}));
      },
      ThrowsMessage<tensordict::Error>(HasSubstr("did not join within 1500 ms")));
  EXPECT_TRUE(no_child_processes()) << "launched workers are reaped when the constructor throws";
}

TEST(DistributedCollectorTest, ConstructorThrowsValueErrorForALaunchCommandThatCannotRun) {
  EXPECT_THAT(
      [] {
        DistributedCollector(
            nullptr, CollectorOptions().frames_per_batch(8),
            DistributedOptions().num_workers(2).launch_command({"/nonexistent/tdrl_worker"}));
      },
      ThrowsMessage<tensordict::ValueError>(
          AllOf(HasSubstr("cannot launch worker rank 1"), HasSubstr("/nonexistent/tdrl_worker"))));
  EXPECT_TRUE(no_child_processes());
}

TEST(DistributedCollectorTest, ConstructorThrowsTheErrorOfAWorkerThatCannotBuildItsEnv) {
  EXPECT_THAT(
      [] {
        DistributedCollector(nullptr, CollectorOptions().frames_per_batch(8), launched("bad_env"));
      },
      ThrowsMessage<std::runtime_error>(
          AllOf(HasSubstr("worker rank 1: "), HasSubstr(testing::kMissingEnv))));
  EXPECT_TRUE(no_child_processes()) << "the workers were stopped and reaped";
}

// ---- Collection ---------------------------------------------------------------------------

TEST(DistributedCollectorTest, SyncStacksOneBatchPerWorkerWithUniqueTrajectoryIds) {
  // Each worker steps CartPole with batch size [2]: 10 frames round up to 2 workers x 2 envs x
  // 3 steps = 12, and 30 total frames to 36.
  DistributedCollector collector(nullptr, CollectorOptions().frames_per_batch(10).total_frames(30),
                                 launched("batched"));
  EXPECT_EQ(collector.num_workers(), 2);
  EXPECT_GT(collector.port(), 0);
  EXPECT_EQ(collector.frames_per_batch(), 12);
  EXPECT_EQ(collector.total_frames(), 36);
  int64_t batches = 0;
  int64_t frames = 0;
  for (const TensorDict& batch : collector) {
    ++batches;
    frames += batch.numel();
    EXPECT_EQ(batch.batch_size(), (Shape{2, 2, 3}));
    const auto observation = batch.get("observation");
    EXPECT_EQ(observation.sizes(), (c10::IntArrayRef{2, 2, 3, 4}));
    EXPECT_TRUE(observation.is_contiguous());
    EXPECT_EQ(batch.get({"next", "reward"}).size(0), 2);
    const auto ids = traj_ids(batch);
    EXPECT_TRUE(torch::all(ids[0] % 2 == 0).item<bool>()) << "worker 0's ids are 2k";
    EXPECT_TRUE(torch::all(ids[1] % 2 == 1).item<bool>()) << "worker 1's ids are 2k + 1";
  }
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(frames, 36);
  EXPECT_EQ(collector.frames(), 36);
  EXPECT_EQ(collector.iterations(), 3);
  EXPECT_FALSE(collector.next().has_value());
}

TEST(DistributedCollectorTest, AsyncYieldsBatchesFromEveryWorker) {
  DistributedCollector collector(nullptr, CollectorOptions().frames_per_batch(8).total_frames(48),
                                 launched("random", /*sync=*/false));
  EXPECT_EQ(collector.frames_per_batch(), 8);
  std::set<int64_t> workers;
  int64_t batches = 0;
  for (const TensorDict& batch : collector) {
    ++batches;
    EXPECT_EQ(batch.batch_size(), (Shape{8}));
    const int64_t w = collector.last_worker();
    workers.insert(w);
    EXPECT_TRUE(torch::all(traj_ids(batch) % 2 == w).item<bool>())
        << "worker " << w << "'s ids are 2k + " << w;
  }
  EXPECT_EQ(batches, 6);
  EXPECT_EQ(collector.frames(), 48);
  EXPECT_EQ(workers, (std::set<int64_t>{0, 1}));
}

TEST(DistributedCollectorTest, SplitTrajsAndPostprocRunOnTheTrainer) {
  int64_t postproc_calls = 0;
  DistributedCollector collector(nullptr,
                                 CollectorOptions().frames_per_batch(8).split_trajs(true).postproc(
                                     [&postproc_calls](TensorDict batch) {
                                       ++postproc_calls;
                                       return batch;
                                     }),
                                 launched("random"));
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(postproc_calls, 1);
  const auto mask = batch->get(mask_key());
  EXPECT_EQ(mask.sum().item<int64_t>(), 8) << "every collected step is in some trajectory";
  EXPECT_GE(batch->batch_size()[0], 2) << "at least one trajectory per worker";
}

TEST(DistributedCollectorTest, WeightsReachWorkersBeforeTheFirstBatchAndAfterEachUpdate) {
  // The workers' own policies pick action 1; the trainer's picks 0, and its weights go to the
  // workers before their first batch.
  testing::ArgmaxLinear net;
  testing::set_bias(net, 1.0f, 0.0f);
  DistributedCollector collector(testing::linear_policy(net),
                                 CollectorOptions().frames_per_batch(8), launched("linear"));
  auto first = collector.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(torch::all(first->get("action") == 0).item<bool>());

  testing::set_bias(net, 0.0f, 1.0f);
  auto second = collector.next();
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(torch::all(second->get("action") == 0).item<bool>())
      << "without update_policy_weights_ the workers keep the weights they have";

  collector.update_policy_weights_();
  auto third = collector.next();
  ASSERT_TRUE(third.has_value());
  EXPECT_TRUE(torch::all(third->get("action") == 1).item<bool>());
}

// Each worker process steps its own env with its copy of a recurrent policy: each carries its
// own state from step to step and from batch to batch, and restarts it at its resets.
TEST(DistributedCollectorTest, EachWorkerProcessCarriesItsOwnRecurrentState) {
  torch::manual_seed(0);
  testing::RecurrentPolicy p;
  DistributedCollector collector(collectors::CollectorPolicy(p.policy),
                                 CollectorOptions().frames_per_batch(2 * 40),
                                 launched("recurrent"));
  collector.set_seed(3);
  std::vector<TensorDict> batches;
  for (int b = 0; b < 3; ++b) batches.push_back(*collector.next());
  ASSERT_EQ(batches[0].batch_size(), (Shape{2, 40}));
  expect_state_runs_on(batches);
}

TEST(DistributedCollectorTest, SetSeedMakesWorkersRepeatTheirBatches) {
  DistributedCollector collector(nullptr,
                                 CollectorOptions().frames_per_batch(16).reset_at_each_iter(true),
                                 launched("random"));
  EXPECT_EQ(collector.set_seed(5), 7u) << "each unbatched CartPole takes one seed";
  auto first = collector.next();
  EXPECT_EQ(collector.set_seed(5), 7u);
  auto second = collector.next();
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_TRUE(torch::equal(first->get("observation"), second->get("observation")));
  EXPECT_TRUE(torch::equal(first->get("action"), second->get("action")));
  EXPECT_FALSE(torch::equal(first->get("observation")[0], first->get("observation")[1]))
      << "the two workers have different seeds";
}

// A policy drawing from the worker process's global generator (exploration noise) repeats
// its batches in a new collector seeded the same, and each worker draws its own.
TEST(DistributedCollectorTest, SetSeedAlsoSeedsTheWorkersExplorationNoise) {
  std::vector<TensorDict> runs;
  for (int run = 0; run < 2; ++run) {
    DistributedCollector collector(nullptr, CollectorOptions().frames_per_batch(32),
                                   launched("noisy"));
    collector.set_seed(11);
    runs.push_back(*collector.next());
  }
  EXPECT_TRUE(torch::equal(runs[0].get("action"), runs[1].get("action")));
  EXPECT_TRUE(torch::equal(runs[0].get("observation"), runs[1].get("observation")));
  EXPECT_FALSE(torch::equal(runs[0].get("action")[0], runs[0].get("action")[1]))
      << "the two workers draw different noise";
}

TEST(DistributedCollectorTest, StateDictRestoresTheCounters) {
  DistributedCollector collector(nullptr, CollectorOptions().frames_per_batch(8).total_frames(16),
                                 launched("random"));
  ASSERT_TRUE(collector.next().has_value());
  ASSERT_TRUE(collector.next().has_value());
  const TensorDict state = collector.state_dict();
  EXPECT_EQ(state.get("frames").item<int64_t>(), 16);
  EXPECT_EQ(state.get("iterations").item<int64_t>(), 2);
  EXPECT_FALSE(collector.next().has_value());

  collector.load_state_dict(TensorDict({{"frames", torch::tensor(8, torch::kLong)},
                                        {"iterations", torch::tensor(1, torch::kLong)}}));
  EXPECT_EQ(collector.frames(), 8);
  EXPECT_TRUE(collector.next().has_value()) << "one batch left before total_frames";
  EXPECT_FALSE(collector.next().has_value());
  EXPECT_THAT(
      [&] {
        collector.load_state_dict(TensorDict({{"frames", torch::tensor(0, torch::kLong)}}));
      },
      ThrowsMessage<tensordict::KeyError>(HasSubstr("'iterations'")));
  EXPECT_EQ(collector.frames(), 16) << "a failed load changes nothing";
}

// Sync mode saves each worker's collector (its env and episodes in flight): a new collector
// with new workers, loaded with it, yields the batches the first one would have.
TEST(DistributedCollectorTest, StateDictOfTheWorkersContinuesTheirEpisodesInNewWorkers) {
  TensorDict state;
  std::vector<TensorDict> expected;
  {
    DistributedCollector first(nullptr, CollectorOptions().frames_per_batch(16),
                               launched("random"));
    first.set_seed(3);
    ASSERT_TRUE(first.next().has_value());
    state = first.state_dict();
    EXPECT_TRUE(state.contains({"workers", "r1", "collector", "env", "rng"}));
    EXPECT_TRUE(state.contains({"workers", "r2", "collector", "current"}));
    EXPECT_TRUE(state.contains({"workers", "r2", "rng"}));
    for (int i = 0; i < 2; ++i) expected.push_back(*first.next());
  }
  DistributedCollector second(nullptr, CollectorOptions().frames_per_batch(16), launched("random"));
  second.load_state_dict(state);
  EXPECT_EQ(second.frames(), 16);
  for (const auto& batch : expected) {
    const auto got = second.next();
    ASSERT_TRUE(got.has_value());
    for (const auto& key : batch.keys(true, true))
      EXPECT_TRUE(torch::equal(got->get(key), batch.get(key))) << key.to_string();
  }
}

TEST(DistributedCollectorTest, LoadStateDictThatAWorkerRefusesLeavesEveryWorkerAsItWas) {
  DistributedCollector collector(nullptr, CollectorOptions().frames_per_batch(16),
                                 launched("random"));
  ASSERT_TRUE(collector.next().has_value());
  const TensorDict before = collector.state_dict();
  TensorDict bad = before.clone();
  bad.set({"workers", "r2", "collector", "frames"}, torch::tensor(int64_t{-1}));
  bad.set({"workers", "r1", "collector", "next_traj_id"}, torch::tensor(int64_t{1000}));
  EXPECT_THAT([&] { collector.load_state_dict(bad); },
              ThrowsMessage<tensordict::ValueError>(
                  AllOf(HasSubstr("worker rank 2"), HasSubstr("'frames' is -1"))));
  const TensorDict after = collector.state_dict();
  for (const auto& key : before.keys(true, true))
    EXPECT_TRUE(torch::equal(after.get(key), before.get(key))) << key.to_string();
  TensorDict missing = before.clone();
  missing.del_({"workers", "r2"});
  EXPECT_THAT([&] { collector.load_state_dict(missing); },
              ThrowsMessage<tensordict::KeyError>(HasSubstr("('workers', 'r2')")));
  EXPECT_TRUE(collector.next().has_value()) << "the collection goes on";
}

// ---- Errors and shutdown --------------------------------------------------------------------

TEST(DistributedCollectorTest, WeightsOfADifferentStructureMakeNextThrowTheWorkersError) {
  // The workers run random policies, which have no weights to take the trainer's.
  testing::ArgmaxLinear net;
  DistributedCollector collector(testing::linear_policy(net),
                                 CollectorOptions().frames_per_batch(8), launched("random"));
  EXPECT_THAT([&] { collector.next(); }, ThrowsMessage<std::runtime_error>(AllOf(
                                             HasSubstr("worker rank 1: "),
                                             HasSubstr("cannot take the trainer's policy weights"),
                                             HasSubstr("does not match"))));
  EXPECT_TRUE(no_child_processes());
}

TEST(DistributedCollectorTest, WorkerErrorReachesTheTrainerWithItsMessage) {
  DistributedCollector collector(nullptr, CollectorOptions().frames_per_batch(8),
                                 launched("throw"));
  EXPECT_THAT([&] { collector.next(); },
              ThrowsMessage<std::runtime_error>(
                  AllOf(HasSubstr("worker rank 2: "), HasSubstr(testing::kThrownMessage))));
  EXPECT_FALSE(collector.next().has_value()) << "the collection is over after an error";
  EXPECT_TRUE(no_child_processes()) << "the workers were stopped and reaped";
}

// A dead worker is noticed when its connection closes, not after the timeout. The timeout is
// generous, because it also bounds the rendezvous and workers of a sanitizer build take seconds
// to join; the bounds on next() below say that the trainer did not wait for it.
constexpr auto kDeathTimeout = std::chrono::seconds(20);
constexpr double kDeathTimeoutSeconds = 20.0;

TEST(DistributedCollectorTest, KilledWorkerMakesNextThrowBeforeTheTimeout) {
  std::optional<DistributedCollector> collector;
  collector.emplace(nullptr, CollectorOptions().frames_per_batch(8),
                    launched("die", true, kDeathTimeout));
  ASSERT_TRUE(collector->next().has_value());
  const auto start = Clock::now();
  EXPECT_THAT([&] { collector->next(); },
              ThrowsMessage<tensordict::Error>(
                  AllOf(HasSubstr("lost worker rank 2"), HasSubstr("killed by signal 9"))));
  EXPECT_LT(seconds_since(start), kDeathTimeoutSeconds);
  EXPECT_FALSE(collector->next().has_value());
  EXPECT_TRUE(no_child_processes()) << "the error reaped the workers";
  const auto destroy = Clock::now();
  collector.reset();
  EXPECT_LT(seconds_since(destroy), 1.0) << "nothing is left for the destructor to wait for";
  EXPECT_TRUE(no_child_processes());
}

TEST(DistributedCollectorTest, AsyncKilledWorkerMakesNextThrowBeforeTheTimeout) {
  // Rank 2 dies in its second batch while rank 1 keeps answering: the trainer still notices.
  DistributedCollector collector(nullptr, CollectorOptions().frames_per_batch(4),
                                 launched("die", false, kDeathTimeout));
  const auto start = Clock::now();
  std::string message;
  int64_t batches = 0;
  try {
    while (collector.next() && seconds_since(start) < 2 * kDeathTimeoutSeconds) ++batches;
  } catch (const tensordict::Error& e) {
    message = e.what();
  }
  EXPECT_THAT(message, AllOf(HasSubstr("lost worker rank 2"), HasSubstr("killed by signal 9")));
  EXPECT_LT(seconds_since(start), kDeathTimeoutSeconds);
  EXPECT_GE(batches, 1);
  EXPECT_TRUE(no_child_processes());
}

TEST(DistributedCollectorTest, EarlyBreakAndDestructionLeaveNoChildProcess) {
  {
    DistributedCollector collector(nullptr, CollectorOptions().frames_per_batch(8),
                                   launched("random", /*sync=*/false));
    for (const TensorDict& batch : collector) {
      EXPECT_EQ(batch.numel(), 8);
      break;  // the other worker's batch (and the re-request) are still in flight
    }
    collector.shutdown();
    EXPECT_FALSE(collector.next().has_value());
    collector.shutdown();  // idempotent
  }
  EXPECT_TRUE(no_child_processes());
}

// A free TCP port on 127.0.0.1 (free when asked; the test uses it right away).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

TEST(DistributedCollectorTest, WorkersStartedByHandJoinWithTheEnvironmentVariables) {
  const int port = free_port();
  std::vector<pid_t> workers;
  for (int rank = 1; rank <= 2; ++rank) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    env.push_back("TDRL_COLLECTOR_RANK=" + std::to_string(rank));
    env.push_back("TDRL_COLLECTOR_WORLD_SIZE=3");
    env.push_back("TDRL_COLLECTOR_ADDR=127.0.0.1");
    env.push_back("TDRL_COLLECTOR_PORT=" + std::to_string(port));
    env.push_back("TDRL_COLLECTOR_TIMEOUT_MS=20000");
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string exe = tdrl::testing::launched_program();
    std::string scenario = "random";
    std::vector<char*> argv{exe.data(), scenario.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), envp.data()), 0);
    workers.push_back(pid);
  }
  {
    DistributedCollector collector(
        nullptr, CollectorOptions().frames_per_batch(8).total_frames(16),
        DistributedOptions().num_workers(2).port(port).timeout(std::chrono::seconds(20)));
    EXPECT_EQ(collector.port(), port);
    int64_t batches = 0;
    for (const TensorDict& batch : collector) {
      EXPECT_EQ(batch.batch_size(), (Shape{2, 4}));
      ++batches;
    }
    EXPECT_EQ(batches, 2);
  }
  for (pid_t pid : workers) {
    int status = -1;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a worker returns from run_distributed_worker when the trainer stops it";
  }
}

}  // namespace
}  // namespace tdrl::collectors
