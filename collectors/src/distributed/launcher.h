#pragma once

// Starting DistributedCollector's local worker processes (launch_command) and reaping them;
// the worker side of the same contract is worker_identity_from_env (launcher.cpp), which reads
// the variables launch() sets.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include <tdrl/collectors/distributed_collector.h>

namespace tdrl::collectors::detail {

// The worker processes one trainer launched. Destroying it kills and reaps those still
// running (a constructor that threw; shutdown normally reaped them all).
class WorkerLauncher {
 public:
  WorkerLauncher() = default;
  WorkerLauncher(const WorkerLauncher&) = delete;
  WorkerLauncher& operator=(const WorkerLauncher&) = delete;
  ~WorkerLauncher();

  // Starts ranks 1..world-1 running options.launch_command() with this process's environment
  // (minus any TDRL_COLLECTOR_* variable) plus the worker variables for `port`. Throws
  // ValueError naming the rank when the command cannot be started.
  void launch(const DistributedOptions& options, int port, int64_t world);
  // Reaps launched workers that have ended, waiting up to `grace` for the first one; says how
  // they ended ("worker rank 2 (pid 123) was killed by signal 9"), or "" when none did.
  std::string reap_ended(std::chrono::milliseconds grace);
  // Waits for every launched worker to exit until `deadline`, then kills the rest.
  void reap_all(std::chrono::steady_clock::time_point deadline);

 private:
  std::vector<pid_t> pids_;  // launched worker w's pid; 0 once reaped
};

}  // namespace tdrl::collectors::detail
