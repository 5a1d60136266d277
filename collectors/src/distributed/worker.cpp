// run_distributed_worker: the worker side of DistributedCollector (wire.h has the protocol).

#include <tdrl/collectors/distributed_collector.h>

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include <ATen/CPUGeneratorImpl.h>

#include <tensordict/distributed.h>
#include <tensordict/errors.h>

#include "distributed/wire.h"

namespace tdrl::collectors {

using tensordict::Error;
using tensordict::ValueError;

namespace {

using namespace detail;

// How long a worker waits for the trainer's next request, or for the trainer to take its
// answer (async trainers train in between): no practical limit; a closed connection ends it.
constexpr Milliseconds kIdleWait = std::chrono::hours(24 * 365);

// The worker's process generator is seeded with its env seed XOR this (the golden ratio's
// bits), not with the env seed itself, whose stream the env's generator already draws.
constexpr uint64_t kProcessSeedMix = 0x9E3779B97F4A7C15ULL;

// One worker's conversation with the trainer: each command's handler, and the answers.
class WorkerSession {
 public:
  WorkerSession(Group group, const EnvFactory& factory, CollectorPolicy policy)
      : group_(std::move(group)), factory_(factory), policy_(std::move(policy)) {}

  // Serves commands until the trainer says stop.
  void serve() {
    for (;;) {
      auto message = torch::empty({kCommandSize}, torch::kLong);
      recv_tensor(*group_, message, 0, kCommandTag, kIdleWait);
      const Command command = decode_command(message);
      if (std::holds_alternative<StopCommand>(command)) return;
      std::visit([this](const auto& c) { handle(c); }, command);
    }
  }

 private:
  void handle(const ConfigureCommand& c) {
    try {
      auto options = CollectorOptions()
                         .frames_per_batch(c.frames_per_batch)
                         .total_frames(-1)
                         .init_random_frames(0)
                         .max_frames_per_traj(c.max_frames_per_traj)
                         .reset_at_each_iter(c.reset_at_each_iter)
                         .reset_when_done(c.reset_when_done)
                         .exploration_type(c.exploration_type);
      collector_ = std::make_unique<Collector>(factory_, policy_, options);
    } catch (const std::exception& e) {
      return send_error(message_of(e));
    }
    send_status({true, collector_->frames_per_batch(), 0});
  }

  void handle(const WeightsCommand&) {
    try {
      tensordict::recv(policy_weights(policy_), *group_, 0, kWeightsTag);
    } catch (const tensordict::Error& e) {
      // The transfer was drained; the structure differs from this worker's policy. Reported
      // in answer to the next collect.
      weights_error_ = std::string("cannot take the trainer's policy weights: ") + e.what();
    }
  }

  // Seeds the envs and this process's global generator, which the policy's exploration draws
  // from (with a seed of its own, see kProcessSeedMix), so that a seeded distributed run
  // repeats and each worker's noise is its own.
  void handle(const SeedCommand& c) {
    uint64_t next_seed = 0;
    try {
      TDRL_CHECK(collector_, Error, "a request came before the configuration");
      next_seed = collector_->set_seed(c.seed);
      at::Generator process = at::detail::getDefaultCPUGenerator();
      process.set_current_seed(c.seed ^ kProcessSeedMix);
    } catch (const std::exception& e) {
      return send_error(message_of(e));
    }
    send_status({true, static_cast<int64_t>(next_seed), 0});
  }

  void handle(const CollectCommand& c) {
    std::optional<TensorDict> batch;
    try {
      TDRL_CHECK(collector_, Error, "a request came before the configuration");
      if (weights_error_) {
        const std::string error = *weights_error_;
        weights_error_.reset();
        return send_error(error);
      }
      batch = collector_->next(c.random);
      if (!batch) return send_error("the worker's collector was cancelled");
    } catch (const std::exception& e) {
      return send_error(message_of(e));
    }
    send_status({true, batch->numel(), 0});
    tensordict::send(*batch, *group_, 0, kPayloadTag);
  }

  // The worker's state: its collector's, and this process's global generator, which the
  // policy's exploration draws from.
  void handle(const SaveStateCommand&) {
    TensorDict state;
    try {
      TDRL_CHECK(collector_, Error, "a request came before the configuration");
      state = TensorDict({{"collector", collector_->state_dict()},
                          {"rng", at::detail::getDefaultCPUGenerator().get_state()}});
    } catch (const std::exception& e) {
      return send_error(message_of(e));
    }
    send_status({true, 0, 0});
    tensordict::send(state, *group_, 0, kPayloadTag);
  }

  void handle(const LoadStateCommand&) {
    try {
      // Received before anything is checked, so that the conversation stays in step
      // (recv_new drains a malformed transfer before it throws).
      const TensorDict state = tensordict::recv_new(*group_, 0, kStateTag);
      TDRL_CHECK(collector_, Error, "a request came before the configuration");
      at::Generator generator = at::detail::getDefaultCPUGenerator();
      const auto rng = state.find("rng");
      TDRL_CHECK(state.contains("collector") && rng, tensordict::KeyError,
                 "the worker state must hold 'collector' and 'rng'; pass what "
                 "DistributedCollector::state_dict() returned");
      TDRL_CHECK(
          rng->scalar_type() == torch::kUInt8 && rng->sizes().equals(generator.get_state().sizes()),
          tensordict::ShapeError, "the worker state's 'rng' is ",
          tensordict::shape_str(rng->sizes()), " ", std::string(c10::toString(rng->scalar_type())),
          ", not a CPU generator state (uint8 ",
          tensordict::shape_str(generator.get_state().sizes()), ")");
      collector_->load_state_dict(state.get_tensordict("collector"));
      generator.set_state(rng->clone());
    } catch (const std::exception& e) {
      return send_error(message_of(e));
    }
    send_status({true, 0, 0});
  }

  void handle(const StopCommand&) {}

  void send_status(const Status& status) {
    send_tensor(*group_, encode(status), 0, kStatusTag, kIdleWait);
  }

  void send_error(std::string message) {
    if (message.size() > kMaxMessage) message.resize(kMaxMessage);
    send_status({false, 0, static_cast<int64_t>(message.size())});
    if (!message.empty()) send_tensor(*group_, string_bytes(message), 0, kPayloadTag);
  }

  Group group_;
  const EnvFactory& factory_;
  CollectorPolicy policy_;
  std::unique_ptr<Collector> collector_;
  std::optional<std::string> weights_error_;
};

}  // namespace

void run_distributed_worker(const WorkerIdentity& identity, const EnvFactory& factory,
                            CollectorPolicy policy) {
  const auto& o = identity.options;
  const std::string me = "run_distributed_worker (rank " + std::to_string(identity.rank) + ")";
  TDRL_CHECK(!(identity.rank < 1 || identity.rank > o.num_workers()), ValueError, me,
             ": rank must be in [1, ", std::to_string(o.num_workers()), "] (num_workers ",
             std::to_string(o.num_workers()), ")");
  TDRL_CHECK(!(o.port() < 1 || o.port() > 65535), ValueError, me, ": port is ",
             std::to_string(o.port()), "; expected 1..65535");
  ignore_sigpipe();

  // A worker the trainer launched is in a process group of its own, out of reach of the
  // terminal's Ctrl-C: it must end when the trainer does, however the trainer ends.
  if (const char* parent = std::getenv("TDRL_COLLECTOR_PARENT_PID")) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    TDRL_CHECK(std::to_string(getppid()) == parent, Error, me, ": the trainer (pid ", parent,
               ") that launched this worker has already ended");
  }

  // Join the trainer's group.
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(o.port());
  store_options.isServer = false;
  store_options.timeout = o.timeout();
  Store store;
  Group group;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(o.address(), store_options);
    store->add(check_in_key(identity.rank), 1);
    group = make_group(store, identity.rank, o.num_workers() + 1, o);
  } catch (const std::exception& e) {
    throw Error(me + ": cannot join the trainer at " + o.address() + ":" +
                std::to_string(o.port()) + " within " + std::to_string(o.timeout().count()) +
                " ms: " + message_of(e));
  }

  // Serve it.
  try {
    WorkerSession(group, factory, std::move(policy)).serve();
  } catch (const std::exception& e) {
    throw Error(me + ": lost the trainer at " + o.address() + ":" + std::to_string(o.port()) +
                ": " + message_of(e));
  }
}

}  // namespace tdrl::collectors
