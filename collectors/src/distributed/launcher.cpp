// Launching and reaping DistributedCollector's local workers, and the worker variables
// (TDRL_COLLECTOR_*) that tell a process it is one.

#include "distributed/launcher.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include <spdlog/spdlog.h>

#include <tensordict/errors.h>

extern char** environ;

namespace tdrl::collectors {

using tensordict::ValueError;
using Milliseconds = std::chrono::milliseconds;

namespace {

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "ended";
}

int64_t parse_variable(const char* name, const std::string& value, int64_t lo, int64_t hi,
                       const std::string& expected) {
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(value.c_str(), &end, 10);
  TDRL_CHECK(!(value.empty() || errno != 0 || end != value.c_str() + value.size() || parsed < lo ||
               parsed > hi),
             ValueError, std::string("worker_identity_from_env: "), name, " is '", value,
             "'; expected ", expected);
  return parsed;
}

std::string required_variable(const char* name, const char* what) {
  const char* value = std::getenv(name);
  TDRL_CHECK(value != nullptr, ValueError,
             std::string("worker_identity_from_env: TDRL_COLLECTOR_RANK is set but "), name,
             " is not; set it to ", what, " (a trainer with launch_command sets every variable)");
  return value;
}

}  // namespace

// ---- Worker identity ------------------------------------------------------------------------

std::optional<WorkerIdentity> worker_identity_from_env() {
  const char* rank = std::getenv("TDRL_COLLECTOR_RANK");
  if (rank == nullptr) return std::nullopt;
  const int64_t world =
      parse_variable("TDRL_COLLECTOR_WORLD_SIZE",
                     required_variable("TDRL_COLLECTOR_WORLD_SIZE", "num_workers + 1"), 2, 1 << 20,
                     "an integer >= 2 (num_workers + 1)");
  WorkerIdentity identity;
  identity.rank =
      parse_variable("TDRL_COLLECTOR_RANK", rank, 1, world - 1,
                     "an integer in [1, " + std::to_string(world - 1) +
                         "] (TDRL_COLLECTOR_WORLD_SIZE is " + std::to_string(world) + ")");
  const std::string address = required_variable("TDRL_COLLECTOR_ADDR", "the trainer's host");
  TDRL_CHECK(!address.empty(), ValueError,
             "worker_identity_from_env: TDRL_COLLECTOR_ADDR is empty; set it to the trainer's "
             "host");
  const int64_t port =
      parse_variable("TDRL_COLLECTOR_PORT",
                     required_variable("TDRL_COLLECTOR_PORT", "the trainer's TCPStore port"), 1,
                     65535, "an integer in [1, 65535]");
  identity.options.address(address).port(static_cast<int>(port)).num_workers(world - 1);
  if (const char* timeout = std::getenv("TDRL_COLLECTOR_TIMEOUT_MS"))
    identity.options.timeout(Milliseconds(
        parse_variable("TDRL_COLLECTOR_TIMEOUT_MS", timeout, 1,
                       std::numeric_limits<int64_t>::max() / 1000000, "a positive integer")));
  if (const char* hostname = std::getenv("TDRL_COLLECTOR_GLOO_HOSTNAME"))
    identity.options.gloo_hostname(hostname);
  return identity;
}

namespace detail {

// ---- WorkerLauncher -------------------------------------------------------------------------

WorkerLauncher::~WorkerLauncher() {
  for (pid_t& pid : pids_) {
    if (pid <= 0) continue;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = 0;
  }
}

void WorkerLauncher::launch(const DistributedOptions& options, int port, int64_t world) {
  // The environment every worker shares: this process's, with the worker variables replaced.
  const auto& command = options.launch_command();
  std::vector<std::string> base;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "TDRL_COLLECTOR_", 15) != 0) base.emplace_back(*e);
  base.push_back("TDRL_COLLECTOR_WORLD_SIZE=" + std::to_string(world));
  base.push_back("TDRL_COLLECTOR_ADDR=" + options.address());
  base.push_back("TDRL_COLLECTOR_PORT=" + std::to_string(port));
  base.push_back("TDRL_COLLECTOR_TIMEOUT_MS=" + std::to_string(options.timeout().count()));
  // Launched workers end with this process (see run_distributed_worker).
  base.push_back("TDRL_COLLECTOR_PARENT_PID=" + std::to_string(getpid()));
  // Launched workers run on this host: they bind where the trainer does.
  base.push_back("TDRL_COLLECTOR_GLOO_HOSTNAME=" +
                 (options.gloo_hostname().empty() ? options.address() : options.gloo_hostname()));
  std::vector<std::string> args(command.begin(), command.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // Each worker in a process group of its own: a terminal's Ctrl-C (SIGINT to the foreground
  // group) then reaches the trainer only, which finishes its batch, checkpoints and stops the
  // workers itself, rather than losing them mid-batch.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  struct AttrGuard {
    posix_spawnattr_t* attr;
    ~AttrGuard() { posix_spawnattr_destroy(attr); }
  } attr_guard{&attr};

  // One process per rank, each told its rank.
  for (int64_t r = 1; r < world; ++r) {
    std::vector<std::string> env = base;
    env.push_back("TDRL_COLLECTOR_RANK=" + std::to_string(r));
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0], nullptr, &attr, argv.data(), envp.data());
    TDRL_CHECK(rc == 0, ValueError, "DistributedCollector: cannot launch worker rank ",
               std::to_string(r), " with launch_command[0] '", command[0], "': ", std::strerror(rc),
               "; give the path of an executable");
    pids_.push_back(pid);
  }
}

std::string WorkerLauncher::reap_ended(Milliseconds grace) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    for (size_t w = 0; w < pids_.size(); ++w) {
      int status = 0;
      if (pids_[w] <= 0 || waitpid(pids_[w], &status, WNOHANG) != pids_[w]) continue;
      out += (out.empty() ? "" : "; ") + std::string("worker rank ") + std::to_string(w + 1) +
             " (pid " + std::to_string(pids_[w]) + ") " + describe_exit(status);
      pids_[w] = 0;
    }
    if (!out.empty() || pids_.empty() || std::chrono::steady_clock::now() >= deadline) return out;
    std::this_thread::sleep_for(Milliseconds(10));
  }
}

void WorkerLauncher::reap_all(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    bool running = false;
    for (pid_t& pid : pids_) {
      if (pid <= 0) continue;
      if (waitpid(pid, nullptr, WNOHANG) == pid)
        pid = 0;
      else
        running = true;
    }
    if (!running) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (pid_t& pid : pids_) {
        if (pid <= 0) continue;
        spdlog::warn("DistributedCollector: worker pid {} did not exit in time; killing it", pid);
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        pid = 0;
      }
      return;
    }
    std::this_thread::sleep_for(Milliseconds(5));
  }
}

}  // namespace detail
}  // namespace tdrl::collectors
