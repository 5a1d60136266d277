// DistributedCollector: the trainer (rank 0) and its workers over c10d Gloo.
//
// Protocol (all tensors on CPU; one conversation per worker, each tag in order):
// - trainer -> worker, kCommandTag: int64 [kCommandSize] commands: configure (collector
//   options), collect (random flag), weights (then tensordict::send of the weights on
//   kWeightsTag), seed, stop.
// - worker -> trainer, kStatusTag: int64 [kStatusSize] status header answering configure,
//   collect and seed: ok or failed, a value (frames per batch, batch frames, next seed), the
//   length of a new batch description and of an error message; then on kPayloadTag the
//   message bytes, or the description bytes (when the batch structure changed) and the batch
//   (tensordict::send).

#include <tdrl/collectors/distributed_collector.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <limits>
#include <sstream>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <tensordict/distributed.h>
#include <tensordict/errors.h>
#include <tensordict/lazy_stacked_tensordict.h>

extern char** environ;

namespace tdrl::collectors {

namespace {

using tensordict::Error;
using tensordict::KeyError;
using tensordict::ValueError;
using Milliseconds = std::chrono::milliseconds;

constexpr int kCommandTag = 1;
constexpr int kStatusTag = 2;
constexpr int kPayloadTag = 3;
constexpr int kWeightsTag = 4;

constexpr int64_t kCommandSize = 8;
constexpr int64_t kStatusSize = 4;
enum Command : int64_t { kConfigure = 1, kCollect, kWeights, kSeed, kStop };
enum StatusCode : int64_t { kOk = 0, kFailed = 1 };
constexpr size_t kMaxMessage = 1 << 16;  // longer worker error messages are cut

// How long a worker waits for the trainer's next request, or for the trainer to take its
// answer (async trainers train in between): no practical limit; a closed connection ends it.
constexpr Milliseconds kIdleWait = std::chrono::hours(24 * 365);

using Group = c10::intrusive_ptr<c10d::ProcessGroupGloo>;
using Store = c10::intrusive_ptr<c10d::TCPStore>;

std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
    return c10_error->what_without_backtrace();
  return e.what();
}

void ignore_sigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
      current.sa_handler == SIG_DFL)
    signal(SIGPIPE, SIG_IGN);
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Group make_group(const Store& store, int64_t rank, int64_t world,
                 const DistributedOptions& options) {
  auto gloo = c10d::ProcessGroupGloo::Options::create(options.timeout());
  if (!options.gloo_hostname().empty())
    gloo->devices.push_back(
        c10d::ProcessGroupGloo::createDeviceForHostname(options.gloo_hostname()));
  else if (rank == 0 || is_loopback(options.address()))
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(options.address()));
  else
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  gloo->threads = 1;  // only point-to-point transfers, which run on the calling thread
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, static_cast<int>(rank),
                                                     static_cast<int>(world), gloo);
}

void send_tensor(c10d::ProcessGroup& group, torch::Tensor t, int64_t dst, int tag,
                 Milliseconds wait = ::kNoTimeout) {
  std::vector<torch::Tensor> v{std::move(t)};
  group.send(v, static_cast<int>(dst), tag)->wait(wait);
}

void recv_tensor(c10d::ProcessGroup& group, torch::Tensor t, int64_t src, int tag,
                 Milliseconds wait = ::kNoTimeout) {
  std::vector<torch::Tensor> v{std::move(t)};
  group.recv(v, static_cast<int>(src), tag)->wait(wait);
}

torch::Tensor int64s(std::initializer_list<int64_t> values, int64_t size) {
  auto t = torch::zeros({size}, torch::kLong);
  int64_t i = 0;
  for (int64_t v : values) t[i++] = v;
  return t;
}

torch::Tensor string_bytes(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kByte);
  std::memcpy(t.data_ptr<uint8_t>(), s.data(), s.size());
  return t;
}

std::string bytes_string(const torch::Tensor& t) {
  const auto* p = t.data_ptr<uint8_t>();
  return std::string(p, p + t.numel());
}

// ---- Batch descriptions -----------------------------------------------------------------
// One line per entry: "root <dims>", then in items(include_nested) order "node <dims> <key>"
// for nested TensorDicts and "leaf <dtype> <dims> <key>" for tensors; dims are "<n> d...",
// keys "<parts> (<length> <part>)..." so that any character may appear in a key.

std::string describe_batch(const TensorDict& batch) {
  std::ostringstream os;
  auto dims = [&os](c10::IntArrayRef sizes) {
    os << sizes.size();
    for (int64_t d : sizes) os << ' ' << d;
  };
  auto key = [&os](const NestedKey& k) {
    os << ' ' << k.size();
    for (const auto& part : k.parts()) os << ' ' << part.size() << ' ' << part;
  };
  os << "root ";
  dims(batch.batch_size());
  os << '\n';
  for (const auto& item : batch.items(/*include_nested=*/true)) {
    if (const auto* t = std::get_if<torch::Tensor>(&item.second)) {
      os << "leaf " << static_cast<int>(t->scalar_type()) << ' ';
      dims(t->sizes());
      key(item.first);
      os << '\n';
    } else if (const auto* td = std::get_if<TensorDict>(&item.second)) {
      os << "node ";
      dims(td->batch_size());
      key(item.first);
      os << '\n';
    }
  }
  return os.str();
}

// A new TensorDict with the described structure (uninitialised values).
TensorDict allocate_batch(const std::string& description,
                          const std::optional<torch::Device>& device) {
  std::istringstream is(description);
  auto fail = []() -> TensorDict {
    throw Error(
        "DistributedCollector: a worker sent a malformed batch description; the trainer and "
        "the workers must run the same tdrl version");
  };
  auto read_dims = [&is](std::vector<int64_t>& out) {
    int64_t n = 0;
    if (!(is >> n) || n < 0 || n > 64) return false;
    for (int64_t i = 0; i < n; ++i) {
      int64_t d = 0;
      if (!(is >> d) || d < 0) return false;
      out.push_back(d);
    }
    return true;
  };
  auto read_key = [&is, &description](std::optional<NestedKey>& out) {
    size_t parts = 0;
    if (!(is >> parts) || parts == 0 || parts > 64) return false;
    for (size_t i = 0; i < parts; ++i) {
      size_t n = 0;
      if (!(is >> n) || is.get() != ' ' || n == 0 || n > description.size()) return false;
      std::string part(n, '\0');
      if (!is.read(&part[0], static_cast<std::streamsize>(n))) return false;
      out = out ? NestedKey({*out, NestedKey(std::move(part))}) : NestedKey(std::move(part));
    }
    return true;
  };
  std::string kind;
  std::vector<int64_t> root;
  if (!(is >> kind) || kind != "root" || !read_dims(root)) return fail();
  TensorDict out = TensorDict::empty(root);
  while (is >> kind) {
    std::vector<int64_t> dims;
    std::optional<NestedKey> key;
    if (kind == "leaf") {
      int code = -1;
      if (!(is >> code) || code < 0 || code >= static_cast<int>(c10::ScalarType::NumOptions) ||
          !read_dims(dims) || !read_key(key))
        return fail();
      auto options = torch::TensorOptions().dtype(static_cast<c10::ScalarType>(code));
      out.set(*key, torch::empty(dims, device ? options.device(*device) : options));
    } else if (kind == "node") {
      if (!read_dims(dims) || !read_key(key)) return fail();
      out.set(*key, TensorDict::empty(dims));
    } else {
      return fail();
    }
  }
  return out;
}

// Worker w's local trajectory ids k become k * num_workers + w.
void make_traj_ids_global(const torch::Tensor& ids, int64_t num_workers, int64_t w) {
  ids.mul_(num_workers).add_(w);
}

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
  if (value.empty() || errno != 0 || end != value.c_str() + value.size() || parsed < lo ||
      parsed > hi)
    throw ValueError(std::string("worker_identity_from_env: ") + name + " is '" + value +
                     "'; expected " + expected);
  return parsed;
}

std::string required_variable(const char* name, const char* what) {
  const char* value = std::getenv(name);
  if (value == nullptr)
    throw ValueError(std::string("worker_identity_from_env: TDRL_COLLECTOR_RANK is set but ") +
                     name + " is not; set it to " + what +
                     " (a trainer with launch_command sets every variable)");
  return value;
}

}  // namespace

// ---- Worker identity --------------------------------------------------------------------

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
  if (address.empty())
    throw ValueError(
        "worker_identity_from_env: TDRL_COLLECTOR_ADDR is empty; set it to the trainer's host");
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

// ---- Trainer ------------------------------------------------------------------------------

struct DistributedCollector::Impl {
  // What a worker's status header says.
  struct Status {
    bool ok = false;
    int64_t value = 0;
    int64_t description_length = 0;
    int64_t message_length = 0;
  };
  struct Answer {
    Status status;
    std::string message;
    TensorDict batch;
  };

  // Kills and reaps launched workers still running (a constructor that threw; shutdown
  // normally reaped them all).
  ~Impl() {
    for (pid_t& pid : pids) {
      if (pid <= 0) continue;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = 0;
    }
  }

  int64_t rank(int64_t w) const { return w + 1; }

  void send_command(int64_t w, std::initializer_list<int64_t> command) {
    send_tensor(*group, int64s(command, kCommandSize), rank(w), kCommandTag);
  }

  static Status parse(const torch::Tensor& header) {
    const auto* h = header.data_ptr<int64_t>();
    return Status{h[0] == kOk, h[1], h[2], h[3]};
  }

  Status recv_status(int64_t w) {
    auto header = torch::empty({kStatusSize}, torch::kLong);
    recv_tensor(*group, header, rank(w), kStatusTag);
    return parse(header);
  }

  std::string recv_message(int64_t w, const Status& status) {
    if (status.message_length <= 0 || status.message_length > int64_t{kMaxMessage})
      return "(no message)";
    auto bytes = torch::empty({status.message_length}, torch::kByte);
    recv_tensor(*group, bytes, rank(w), kPayloadTag);
    return bytes_string(bytes);
  }

  // Takes worker w's new batch description, when its status announces one.
  void recv_description(int64_t w, const Status& status) {
    if (status.description_length == 0) return;
    if (status.description_length < 0 || status.description_length > (int64_t{1} << 26))
      throw Error("DistributedCollector: worker rank " + std::to_string(rank(w)) +
                  " announced a batch description of " + std::to_string(status.description_length) +
                  " bytes");
    auto bytes = torch::empty({status.description_length}, torch::kByte);
    recv_tensor(*group, bytes, rank(w), kPayloadTag);
    descriptions[w] = bytes_string(bytes);
  }

  void recv_batch(int64_t w, const TensorDict& into) {
    tensordict::recv(into, *group, static_cast<int>(rank(w)), kPayloadTag);
  }

  // Worker w's whole answer to a collect request: its error message or its batch (in a new
  // TensorDict). Runs on a task thread in async mode; touches only worker w's entries.
  Answer receive_answer(int64_t w) {
    Answer answer;
    answer.status = recv_status(w);
    if (!answer.status.ok) {
      answer.message = recv_message(w, answer.status);
      return answer;
    }
    recv_description(w, answer.status);
    answer.batch = allocate_batch(descriptions[w], device);
    recv_batch(w, answer.batch);
    return answer;
  }

  // Reaps launched workers that have ended, waiting up to `grace` for the first one; returns
  // how they ended ("worker rank 2 (pid 123) was killed by signal 9").
  std::string reap_ended(Milliseconds grace) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + grace;
    for (;;) {
      for (size_t w = 0; w < pids.size(); ++w) {
        int status = 0;
        if (pids[w] <= 0 || waitpid(pids[w], &status, WNOHANG) != pids[w]) continue;
        out += (out.empty() ? "" : "; ") + std::string("worker rank ") + std::to_string(w + 1) +
               " (pid " + std::to_string(pids[w]) + ") " + describe_exit(status);
        pids[w] = 0;
      }
      if (!out.empty() || pids.empty() || std::chrono::steady_clock::now() >= deadline) return out;
      std::this_thread::sleep_for(Milliseconds(10));
    }
  }

  // Waits for every launched worker to exit until `deadline`, then kills the rest.
  void reap_all(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      bool running = false;
      for (pid_t& pid : pids) {
        if (pid <= 0) continue;
        if (waitpid(pid, nullptr, WNOHANG) == pid)
          pid = 0;
        else
          running = true;
      }
      if (!running) return;
      if (std::chrono::steady_clock::now() >= deadline) {
        for (pid_t& pid : pids) {
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

  void launch(const DistributedOptions& options, int64_t world) {
    const auto& command = options.launch_command();
    std::vector<std::string> base;
    for (char** e = environ; *e != nullptr; ++e)
      if (std::strncmp(*e, "TDRL_COLLECTOR_", 15) != 0) base.emplace_back(*e);
    base.push_back("TDRL_COLLECTOR_WORLD_SIZE=" + std::to_string(world));
    base.push_back("TDRL_COLLECTOR_ADDR=" + options.address());
    base.push_back("TDRL_COLLECTOR_PORT=" + std::to_string(port));
    base.push_back("TDRL_COLLECTOR_TIMEOUT_MS=" + std::to_string(options.timeout().count()));
    // Launched workers run on this host: they bind where the trainer does.
    base.push_back("TDRL_COLLECTOR_GLOO_HOSTNAME=" +
                   (options.gloo_hostname().empty() ? options.address() : options.gloo_hostname()));
    std::vector<std::string> args(command.begin(), command.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (int64_t r = 1; r < world; ++r) {
      std::vector<std::string> env = base;
      env.push_back("TDRL_COLLECTOR_RANK=" + std::to_string(r));
      std::vector<char*> envp;
      for (auto& e : env) envp.push_back(e.data());
      envp.push_back(nullptr);
      pid_t pid = 0;
      const int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
      if (rc != 0)
        throw ValueError("DistributedCollector: cannot launch worker rank " + std::to_string(r) +
                         " with launch_command[0] '" + command[0] + "': " + std::strerror(rc) +
                         "; give the path of an executable");
      pids.push_back(pid);
    }
  }

  Store store;
  Group group;
  std::vector<pid_t> pids;  // launched worker w's pid; 0 once reaped
  CollectorPolicy policy;
  int64_t weights_version = 0;                // 0: the policy has no weights to send
  std::vector<int64_t> worker_version;        // the weights version each worker holds
  std::vector<bool> pending;                  // a collect request whose answer was not received
  std::vector<bool> gone;                     // a transfer with the worker failed: left alone
  std::vector<std::future<Answer>> inflight;  // async mode: receive_answer(w) while pending
  std::vector<std::string> descriptions;      // each worker's last batch description
  std::optional<torch::Device> device;
  Milliseconds timeout{0};
  int port = 0;
  bool failed = false;  // a worker failed or was lost
  bool shut_down = false;
};

DistributedCollector::DistributedCollector(CollectorPolicy policy, CollectorOptions options,
                                           DistributedOptions distributed)
    : impl_(std::make_unique<Impl>()),
      options_(std::move(options)),
      distributed_(std::move(distributed)) {
  static constexpr const char* kOp = "DistributedCollector";
  const auto& d = distributed_;
  auto invalid = [](const std::string& what) { throw ValueError(std::string(kOp) + ": " + what); };
  if (d.num_workers() < 1 || d.num_workers() > (1 << 20))
    invalid("num_workers is " + std::to_string(d.num_workers()) + "; expected at least 1");
  if (d.port() < 0 || d.port() > 65535)
    invalid("port is " + std::to_string(d.port()) + "; expected 0..65535");
  if (d.port() == 0 && d.launch_command().empty())
    invalid(
        "port 0 (any free port) needs launch_command: workers started by hand must be told "
        "the port; choose one (e.g. port(29500)) or give launch_command");
  if (d.timeout().count() < 1)
    invalid("timeout is " + std::to_string(d.timeout().count()) + " ms; expected at least 1 ms");
  if (d.address().empty()) invalid("address is empty; give the trainer's host");
  if (!d.launch_command().empty() && d.launch_command()[0].empty())
    invalid("launch_command[0] is empty; give the path of the worker executable");
  if (options_.frames_per_batch() < 1)
    invalid("frames_per_batch is " + std::to_string(options_.frames_per_batch()) +
            "; expected at least 1");
  if (options_.total_frames() == 0 || options_.total_frames() < -1)
    invalid("total_frames is " + std::to_string(options_.total_frames()) +
            "; expected a positive count or -1 (endless)");
  if (options_.init_random_frames() < 0)
    invalid("init_random_frames is " + std::to_string(options_.init_random_frames()) +
            "; expected at least 0");
  if (options_.max_frames_per_traj() == 0 || options_.max_frames_per_traj() < -1)
    invalid("max_frames_per_traj is " + std::to_string(options_.max_frames_per_traj()) +
            "; expected a positive count or -1 (no limit)");

  const int64_t W = d.num_workers();
  auto& im = *impl_;
  im.policy = std::move(policy);
  im.weights_version = policy_weights(im.policy).keys().empty() ? 0 : 1;
  im.worker_version.assign(W, 0);
  im.pending.assign(W, false);
  im.gone.assign(W, false);
  im.inflight.resize(W);
  im.descriptions.assign(W, "");
  im.device = options_.storing_device();
  im.timeout = d.timeout();
  ignore_sigpipe();

  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(d.port());
  store_options.isServer = true;
  store_options.numWorkers = static_cast<size_t>(W + 1);
  store_options.waitWorkers = false;
  store_options.timeout = d.timeout();
  try {
    im.store = c10::make_intrusive<c10d::TCPStore>(d.address(), store_options);
  } catch (const std::exception& e) {
    throw Error(std::string(kOp) + ": cannot start the TCPStore on " + d.address() + ":" +
                std::to_string(d.port()) + " (" + message_of(e) +
                "); choose a free port, or port 0 with launch_command");
  }
  im.port = static_cast<int>(im.store->getPort());
  if (!d.launch_command().empty()) im.launch(d, W + 1);
  try {
    im.group = make_group(im.store, 0, W + 1, d);
  } catch (const std::exception& e) {
    const std::string ended = im.reap_ended(Milliseconds(0));
    throw Error(std::string(kOp) + ": the workers did not join within " +
                std::to_string(d.timeout().count()) + " ms (world size " + std::to_string(W + 1) +
                ", TCPStore " + d.address() + ":" + std::to_string(im.port) +
                "): " + message_of(e) + (ended.empty() ? "" : "; " + ended) +
                "; start every rank 1.." + std::to_string(W) +
                " with the TDRL_COLLECTOR_* variables (see worker_identity_from_env)");
  }

  // Every worker builds its Collector; all answers are taken before any error is thrown, so
  // that every worker is idle and can be told to stop.
  const int64_t requested = options_.frames_per_batch();
  const int64_t per_worker = d.sync() ? (requested + W - 1) / W : requested;
  std::vector<Impl::Status> answers(W);
  std::optional<std::pair<int64_t, std::string>> failure;
  int64_t current = 0;
  try {
    for (current = 0; current < W; ++current)
      im.send_command(current,
                      {kConfigure, per_worker, options_.max_frames_per_traj(),
                       options_.reset_at_each_iter() ? 1 : 0, options_.reset_when_done() ? 1 : 0,
                       static_cast<int64_t>(options_.exploration_type())});
    for (current = 0; current < W; ++current) {
      answers[current] = im.recv_status(current);
      if (!answers[current].ok && !failure)
        failure.emplace(current, im.recv_message(current, answers[current]));
      else if (!answers[current].ok)
        im.recv_message(current, answers[current]);
    }
  } catch (const std::exception& e) {
    lost("DistributedCollector", current, e);
  }
  if (failure) worker_failed(failure->first, failure->second);

  frames_per_batch_ = 0;
  for (int64_t w = 0; w < W; ++w) {
    if (d.sync()) frames_per_batch_ += answers[w].value;
    if (!d.sync() && answers[w].value != answers[0].value)
      spdlog::warn(
          "DistributedCollector: worker rank {} collects {} frames per batch, rank 1 {}; "
          "frames_per_batch() reports rank 1's, frames are counted per batch",
          w + 1, answers[w].value, answers[0].value);
  }
  if (!d.sync()) frames_per_batch_ = answers[0].value;
  if (frames_per_batch_ != requested)
    spdlog::warn(
        "DistributedCollector: frames_per_batch {} rounded up to {} (each of the {} workers "
        "collects a multiple of its env's batch numel{})",
        requested, frames_per_batch_, W, d.sync() ? " and the batch is split over workers" : "");
  total_frames_ = options_.total_frames();
  if (total_frames_ > 0 && total_frames_ % frames_per_batch_ != 0) {
    const int64_t rounded = (total_frames_ / frames_per_batch_ + 1) * frames_per_batch_;
    spdlog::warn("DistributedCollector: total_frames {} rounded up to {} (a multiple of {})",
                 total_frames_, rounded, frames_per_batch_);
    total_frames_ = rounded;
  }
}

DistributedCollector::~DistributedCollector() { shutdown(); }

int DistributedCollector::port() const { return impl_->port; }

void DistributedCollector::request(int64_t w, bool random) {
  auto& im = *impl_;
  if (im.weights_version > im.worker_version[w]) {
    im.send_command(w, {kWeights});
    tensordict::send(policy_weights(im.policy), *im.group, static_cast<int>(im.rank(w)),
                     kWeightsTag);
    im.worker_version[w] = im.weights_version;
  }
  im.send_command(w, {kCollect, random ? 1 : 0});
  im.pending[w] = true;
  Impl* impl = &im;
  im.inflight[w] = std::async(std::launch::async, [impl, w] { return impl->receive_answer(w); });
}

void DistributedCollector::lost(const std::string& operation, int64_t w,
                                const std::exception& error) {
  auto& im = *impl_;
  im.failed = true;
  const bool known = w >= 0 && w < num_workers();
  if (known) im.gone[w] = true;
  const std::string ended = im.reap_ended(Milliseconds(250));
  shutdown();
  throw Error("DistributedCollector::" + operation + ": lost " +
              (known ? "worker rank " + std::to_string(w + 1) : std::string("the workers")) + ": " +
              message_of(error) + (ended.empty() ? "" : "; " + ended) +
              "; the collection is stopped (check the workers' output; raise "
              "DistributedOptions::timeout if they are only slow)");
}

void DistributedCollector::worker_failed(int64_t w, const std::string& message) {
  impl_->failed = true;
  shutdown();
  throw std::runtime_error("worker rank " + std::to_string(w + 1) + ": " + message);
}

std::optional<TensorDict> DistributedCollector::next() {
  auto& im = *impl_;
  if (im.shut_down || finished()) return std::nullopt;
  const int64_t W = num_workers();
  std::optional<std::pair<int64_t, std::string>> failure;
  TensorDict batch;
  int64_t frames = 0;
  int64_t current = -1;
  try {
    if (distributed_.sync()) {
      // Every worker's answer is received on its own thread, so the transfers overlap.
      const bool random = frames_ < options_.init_random_frames();
      for (current = 0; current < W; ++current) request(current, random);
      std::vector<TensorDict> parts(W);
      for (current = 0; current < W; ++current) {
        im.pending[current] = false;
        auto answer = im.inflight[current].get();
        if (!answer.status.ok) {
          if (!failure) failure.emplace(current, std::move(answer.message));
        } else {
          parts[current] = answer.batch;
          frames += answer.status.value;
        }
      }
      for (int64_t w = 1; w < W && !failure; ++w)
        if (im.descriptions[w] != im.descriptions[0])
          failure.emplace(w,
                          "sync mode stacks the workers' batches, which must have the same "
                          "structure; this worker's batch is\n" +
                              im.descriptions[w] + "but rank 1's is\n" + im.descriptions[0] +
                              "(use sync(false) for workers with different envs)");
      current = -1;
      if (!failure) {
        batch = tensordict::stack(parts, 0).contiguous();
        if (auto ids = batch.find(traj_ids_key()))
          for (int64_t w = 0; w < W; ++w) make_traj_ids_global(ids->select(0, w), W, w);
      }
    } else {
      // Idle workers are asked for a batch unless those in flight complete total_frames.
      int64_t in_flight = 0;
      for (int64_t w = 0; w < W; ++w) in_flight += im.pending[w] ? 1 : 0;
      for (current = 0; current < W; ++current) {
        if (im.pending[current]) continue;
        if (total_frames_ >= 0 && frames_ + in_flight * frames_per_batch_ >= total_frames_) break;
        ++in_flight;
        request(current, frames_ < options_.init_random_frames());
      }
      TORCH_INTERNAL_ASSERT(in_flight > 0, "DistributedCollector: no batch in flight");
      // The first answer to arrive, looking from the worker after the last one served.
      current = -1;
      while (current < 0) {
        for (int64_t k = 1; k <= W && current < 0; ++k) {
          const int64_t w = (last_worker_ + k + W) % W;
          if (im.pending[w] &&
              im.inflight[w].wait_for(std::chrono::seconds(0)) == std::future_status::ready)
            current = w;
        }
        if (current < 0) std::this_thread::sleep_for(Milliseconds(1));
      }
      im.pending[current] = false;
      last_worker_ = current;
      auto answer = im.inflight[current].get();
      if (!answer.status.ok) {
        failure.emplace(current, std::move(answer.message));
      } else {
        batch = answer.batch;
        frames = answer.status.value;
        if (auto ids = batch.find(traj_ids_key())) make_traj_ids_global(*ids, W, current);
      }
    }
  } catch (const std::exception& e) {
    lost("next", current, e);
  }
  if (failure) worker_failed(failure->first, failure->second);
  frames_ += frames;
  ++iterations_;
  if (options_.split_trajs()) batch = split_trajectories(batch);
  if (options_.postproc()) batch = options_.postproc()(batch);
  return batch;
}

void DistributedCollector::update_policy_weights_() {
  if (impl_->weights_version > 0) ++impl_->weights_version;
}

uint64_t DistributedCollector::set_seed(uint64_t seed) {
  auto& im = *impl_;
  if (im.shut_down)
    throw Error("DistributedCollector::set_seed: the collector is shut down; nothing to seed");
  for (int64_t w = 0; w < num_workers(); ++w)
    if (im.pending[w])
      throw Error("DistributedCollector::set_seed: worker rank " + std::to_string(w + 1) +
                  " is collecting a batch (async mode); call set_seed before the first next()");
  std::optional<std::pair<int64_t, std::string>> failure;
  int64_t current = 0;
  try {
    for (current = 0; current < num_workers() && !failure; ++current) {
      im.send_command(current, {kSeed, static_cast<int64_t>(seed)});
      const auto status = im.recv_status(current);
      if (status.ok)
        seed = static_cast<uint64_t>(status.value);
      else
        failure.emplace(current, im.recv_message(current, status));
    }
  } catch (const std::exception& e) {
    lost("set_seed", current, e);
  }
  if (failure) worker_failed(failure->first, failure->second);
  return seed;
}

void DistributedCollector::shutdown() {
  if (!impl_ || impl_->shut_down) return;
  auto& im = *impl_;
  im.shut_down = true;
  // After an error, launched workers that do not exit soon are stuck: killed sooner.
  const auto deadline = std::chrono::steady_clock::now() +
                        (im.failed ? std::min(im.timeout, Milliseconds(2000)) : im.timeout);
  // Answers in flight are taken and dropped: a worker reads requests only between batches.
  // Each step below ends within the timeout; after a timeout the group fails every transfer
  // at once.
  for (int64_t w = 0; w < num_workers(); ++w) {
    if (!im.pending[w] || im.gone[w]) continue;
    try {
      im.inflight[w].get();
    } catch (const std::exception&) {
      im.gone[w] = true;
    }
    im.pending[w] = false;
  }
  for (int64_t w = 0; w < num_workers(); ++w) {
    if (im.inflight[w].valid()) im.inflight[w].wait();  // a gone worker's task
    if (im.gone[w] || !im.group) continue;
    try {
      im.send_command(w, {kStop});
    } catch (const std::exception& e) {
      im.gone[w] = true;
      spdlog::warn("DistributedCollector::shutdown: cannot tell worker rank {} to stop: {}", w + 1,
                   message_of(e));
    }
  }
  // Closing the group's connections ends the workers that were not told to stop.
  im.group.reset();
  im.reap_all(deadline);
  im.store.reset();
}

TensorDict DistributedCollector::state_dict() const {
  return TensorDict({{"frames", torch::tensor(frames_, torch::kLong)},
                     {"iterations", torch::tensor(iterations_, torch::kLong)}});
}

void DistributedCollector::load_state_dict(const TensorDict& state) {
  int64_t values[2] = {0, 0};
  const char* names[2] = {"frames", "iterations"};
  for (int i = 0; i < 2; ++i) {
    auto value = state.find(names[i]);
    if (!value)
      throw KeyError(std::string("DistributedCollector::load_state_dict: the state has no '") +
                     names[i] + "' counter; pass what state_dict() returned");
    values[i] = value->item<int64_t>();
    if (values[i] < 0)
      throw ValueError(std::string("DistributedCollector::load_state_dict: '") + names[i] +
                       "' is " + std::to_string(values[i]) + "; expected at least 0");
  }
  frames_ = values[0];
  iterations_ = values[1];
}

// ---- Worker -------------------------------------------------------------------------------

void run_distributed_worker(const WorkerIdentity& identity, const EnvFactory& factory,
                            CollectorPolicy policy) {
  const auto& o = identity.options;
  const std::string me = "run_distributed_worker (rank " + std::to_string(identity.rank) + ")";
  if (identity.rank < 1 || identity.rank > o.num_workers())
    throw ValueError(me + ": rank must be in [1, " + std::to_string(o.num_workers()) +
                     "] (num_workers " + std::to_string(o.num_workers()) + ")");
  if (o.port() < 1 || o.port() > 65535)
    throw ValueError(me + ": port is " + std::to_string(o.port()) + "; expected 1..65535");
  ignore_sigpipe();

  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(o.port());
  store_options.isServer = false;
  store_options.timeout = o.timeout();
  Store store;
  Group group;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(o.address(), store_options);
    group = make_group(store, identity.rank, o.num_workers() + 1, o);
  } catch (const std::exception& e) {
    throw Error(me + ": cannot join the trainer at " + o.address() + ":" +
                std::to_string(o.port()) + " within " + std::to_string(o.timeout().count()) +
                " ms: " + message_of(e));
  }

  std::unique_ptr<Collector> collector;
  std::optional<std::string> weights_error;  // reported in answer to the next collect
  std::string last_description;
  auto send_status = [&group](std::initializer_list<int64_t> status) {
    send_tensor(*group, int64s(status, kStatusSize), 0, kStatusTag, kIdleWait);
  };
  auto send_error = [&](std::string message) {
    if (message.size() > kMaxMessage) message.resize(kMaxMessage);
    send_status({kFailed, 0, 0, static_cast<int64_t>(message.size())});
    if (!message.empty()) send_tensor(*group, string_bytes(message), 0, kPayloadTag);
  };
  try {
    for (;;) {
      auto command = torch::empty({kCommandSize}, torch::kLong);
      recv_tensor(*group, command, 0, kCommandTag, kIdleWait);
      const auto* c = command.data_ptr<int64_t>();
      if (c[0] == kStop) return;
      if (c[0] == kConfigure) {
        std::string error;
        try {
          if (c[5] < 0 ||
              c[5] > static_cast<int64_t>(tensordict::nn::InteractionType::kDeterministic))
            throw ValueError("unknown exploration type " + std::to_string(c[5]));
          auto options = CollectorOptions()
                             .frames_per_batch(c[1])
                             .total_frames(-1)
                             .init_random_frames(0)
                             .max_frames_per_traj(c[2])
                             .reset_at_each_iter(c[3] != 0)
                             .reset_when_done(c[4] != 0)
                             .exploration_type(static_cast<tensordict::nn::InteractionType>(c[5]));
          collector = std::make_unique<Collector>(factory, policy, options);
        } catch (const std::exception& e) {
          error = message_of(e);
        }
        if (error.empty())
          send_status({kOk, collector->frames_per_batch(), 0, 0});
        else
          send_error(error);
      } else if (c[0] == kWeights) {
        try {
          tensordict::recv(policy_weights(policy), *group, 0, kWeightsTag);
        } catch (const tensordict::Error& e) {
          // The transfer was drained; the structure differs from this worker's policy.
          weights_error = std::string("cannot take the trainer's policy weights: ") + e.what();
        }
      } else if (c[0] == kCollect || c[0] == kSeed) {
        std::string error;
        std::optional<TensorDict> batch;
        uint64_t next_seed = 0;
        try {
          if (!collector) throw Error("a request came before the configuration");
          if (c[0] == kSeed) {
            next_seed = collector->set_seed(static_cast<uint64_t>(c[1]));
          } else if (weights_error) {
            error = *weights_error;
            weights_error.reset();
          } else {
            batch = collector->next(c[1] != 0);
            if (!batch) error = "the worker's collector was cancelled";
          }
        } catch (const std::exception& e) {
          error = message_of(e);
        }
        if (!error.empty()) {
          send_error(error);
        } else if (c[0] == kSeed) {
          send_status({kOk, static_cast<int64_t>(next_seed), 0, 0});
        } else {
          std::string description = describe_batch(*batch);
          const bool changed = description != last_description;
          send_status(
              {kOk, batch->numel(), changed ? static_cast<int64_t>(description.size()) : 0, 0});
          if (changed) send_tensor(*group, string_bytes(description), 0, kPayloadTag);
          last_description = std::move(description);
          tensordict::send(*batch, *group, 0, kPayloadTag);
        }
      } else {
        throw Error("unknown command " + std::to_string(c[0]) +
                    "; the trainer and the workers must run the same tdrl version");
      }
    }
  } catch (const std::exception& e) {
    throw Error(me + ": lost the trainer at " + o.address() + ":" + std::to_string(o.port()) +
                ": " + message_of(e));
  }
}

}  // namespace tdrl::collectors
