// DistributedCollector: the trainer side (rank 0). The protocol and the plumbing both sides
// share are in distributed/wire.h, the worker side in distributed/worker.cpp, launching local
// workers in distributed/launcher.cpp.

#include <tdrl/collectors/distributed_collector.h>

#include <algorithm>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include <tensordict/distributed.h>
#include <tensordict/errors.h>
#include <tensordict/lazy_stacked_tensordict.h>

#include "detail/checks.h"
#include "distributed/launcher.h"
#include "distributed/wire.h"

namespace tdrl::collectors {

namespace {

using namespace detail;
using tensordict::Error;
using tensordict::KeyError;
using tensordict::ValueError;

// Worker w's local trajectory ids k become k * num_workers + w.
void make_traj_ids_global(const torch::Tensor& ids, int64_t num_workers, int64_t w) {
  ids.mul_(num_workers).add_(w);
}

std::string keys_repr(const std::vector<tensordict::NestedKey>& keys) {
  std::string out = "[";
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + keys[i].to_string();
  return out + "]";
}

std::string leaf_repr(const torch::Tensor& t) {
  return std::string(c10::toString(t.scalar_type())) + " " + tensordict::shape_str(t.sizes());
}

// How worker batch `b` differs from rank 1's batch `a` ("" when they have one structure):
// sync mode stacks the workers' batches.
std::string structure_difference(const TensorDict& a, const TensorDict& b) {
  const auto keys_a = a.keys(/*include_nested=*/true, /*leaves_only=*/true);
  const auto keys_b = b.keys(/*include_nested=*/true, /*leaves_only=*/true);
  if (keys_a != keys_b)
    return "this worker's batch has the entries " + keys_repr(keys_b) + " but rank 1's has " +
           keys_repr(keys_a);
  if (a.batch_size() != b.batch_size())
    return "this worker's batch size is " + tensordict::shape_str(b.batch_size()) +
           " but rank 1's is " + tensordict::shape_str(a.batch_size());
  for (const auto& key : keys_a) {
    const auto ta = a.get(key);
    const auto tb = b.get(key);
    if (ta.scalar_type() != tb.scalar_type() || ta.sizes() != tb.sizes())
      return "this worker's " + key.to_string() + " is " + leaf_repr(tb) + " but rank 1's is " +
             leaf_repr(ta);
  }
  return "";
}

}  // namespace

// ---- Trainer ------------------------------------------------------------------------------

struct DistributedCollector::Impl {
  // A worker's whole answer to a request: its Status, then its error message or its batch.
  struct Answer {
    Status status;
    std::string message;
    TensorDict batch;
  };

  int64_t rank(int64_t w) const { return w + 1; }

  void send_command(int64_t w, const Command& command) {
    send_tensor(*group, encode(command), rank(w), kCommandTag);
  }

  Status recv_status(int64_t w) {
    auto message = torch::empty({kStatusSize}, torch::kLong);
    recv_tensor(*group, message, rank(w), kStatusTag);
    return decode_status(message);
  }

  std::string recv_message(int64_t w, const Status& status) {
    if (status.message_length <= 0 || status.message_length > int64_t{kMaxMessage})
      return "(no message)";
    auto bytes = torch::empty({status.message_length}, torch::kByte);
    recv_tensor(*group, bytes, rank(w), kPayloadTag);
    return bytes_string(bytes);
  }

  // Worker w's whole answer to a collect request: its error message or its batch (in a new
  // TensorDict of the worker's structure). Runs on a task thread in async mode; touches only
  // worker w's entries.
  Answer receive_answer(int64_t w) {
    Answer answer;
    answer.status = recv_status(w);
    if (!answer.status.ok) {
      answer.message = recv_message(w, answer.status);
      return answer;
    }
    answer.batch = tensordict::recv_new(*group, static_cast<int>(rank(w)), kPayloadTag, device);
    return answer;
  }

  Store store;
  Group group;
  WorkerLauncher launcher;
  CollectorPolicy policy;
  int64_t weights_version = 0;                // 0: the policy has no weights to send
  std::vector<int64_t> worker_version;        // the weights version each worker holds
  std::vector<bool> pending;                  // a collect request whose answer was not received
  std::vector<bool> gone;                     // a transfer with the worker failed: left alone
  std::vector<std::future<Answer>> inflight;  // async mode: receive_answer(w) while pending
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
  // The options, checked before any process or socket exists.
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
  detail::check_frame_counts(kOp, options_);
  detail::check_trajectory_limit(kOp, options_);

  // The learner's bookkeeping of each worker.
  const int64_t W = d.num_workers();
  auto& im = *impl_;
  im.policy = std::move(policy);
  im.weights_version = policy_weights(im.policy).keys().empty() ? 0 : 1;
  im.worker_version.assign(W, 0);
  im.pending.assign(W, false);
  im.gone.assign(W, false);
  im.inflight.resize(W);
  im.device = options_.storing_device();
  im.timeout = d.timeout();
  ignore_sigpipe();

  // The rendezvous: a TCPStore served here, the workers launched (when asked) and joined.
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
  if (!d.launch_command().empty()) im.launcher.launch(d, im.port, W + 1);
  // Every worker checks in before joining the group; meanwhile a launched worker that ends
  // (a bad config, a missing plugin) is reported at once, not after the whole timeout.
  std::vector<std::string> check_ins;
  for (int64_t r = 1; r <= W; ++r) check_ins.push_back(check_in_key(r));
  const auto did_not_join = [&](const std::string& why) {
    const std::string ended = im.launcher.reap_ended(Milliseconds(0));
    return Error(std::string(kOp) + ": the workers did not join within " +
                 std::to_string(d.timeout().count()) + " ms (world size " + std::to_string(W + 1) +
                 ", TCPStore " + d.address() + ":" + std::to_string(im.port) + "): " + why +
                 (ended.empty() ? "" : "; " + ended) + "; start every rank 1.." +
                 std::to_string(W) +
                 " with the TDRL_COLLECTOR_* variables (see worker_identity_from_env)");
  };
  bool checked_in = false;
  for (const auto deadline = std::chrono::steady_clock::now() + d.timeout();
       !(checked_in = im.store->check(check_ins)) && std::chrono::steady_clock::now() < deadline;) {
    const std::string ended = im.launcher.reap_ended(Milliseconds(0));
    TDRL_CHECK(ended.empty(), Error, kOp, ": a worker ended before joining: ", ended,
               "; its own output (on this terminal, or the run's train.log) says why");
    std::this_thread::sleep_for(Milliseconds(20));
  }
  if (!checked_in) throw did_not_join("not every worker reached the TCPStore");
  try {
    im.group = make_group(im.store, 0, W + 1, d);
  } catch (const std::exception& e) {
    throw did_not_join(message_of(e));
  }

  // Every worker builds its Collector; all answers are taken before any error is thrown, so
  // that every worker is idle and can be told to stop.
  const int64_t requested = options_.frames_per_batch();
  const int64_t per_worker = d.sync() ? (requested + W - 1) / W : requested;
  std::vector<Status> answers(W);
  std::optional<std::pair<int64_t, std::string>> failure;
  int64_t current = 0;
  try {
    for (current = 0; current < W; ++current)
      im.send_command(current,
                      ConfigureCommand{per_worker, options_.max_frames_per_traj(),
                                       options_.reset_at_each_iter(), options_.reset_when_done(),
                                       options_.exploration_type()});
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

  // The batch and total frame counts the workers' answers make (rounded up, with a warning).
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
  set_total_frames(options_.total_frames(), "DistributedCollector");
}

DistributedCollector::~DistributedCollector() { shutdown(); }

int DistributedCollector::port() const { return impl_->port; }

void DistributedCollector::request(int64_t w, bool random) {
  auto& im = *impl_;
  if (im.weights_version > im.worker_version[w]) {
    im.send_command(w, WeightsCommand{});
    tensordict::send(policy_weights(im.policy), *im.group, static_cast<int>(im.rank(w)),
                     kWeightsTag);
    im.worker_version[w] = im.weights_version;
  }
  im.send_command(w, CollectCommand{random});
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
  const std::string ended = im.launcher.reap_ended(Milliseconds(250));
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
      for (int64_t w = 1; w < W && !failure; ++w) {
        const std::string difference = structure_difference(parts[0], parts[w]);
        if (!difference.empty())
          failure.emplace(w,
                          "sync mode stacks the workers' batches, which must have the same "
                          "structure; " +
                              difference + " (use sync(false) for workers with different envs)");
      }
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
  TDRL_CHECK(!im.shut_down, Error,
             "DistributedCollector::set_seed: the collector is shut down; nothing to seed");
  for (int64_t w = 0; w < num_workers(); ++w)
    TDRL_CHECK(!im.pending[w], Error, "DistributedCollector::set_seed: worker rank ",
               std::to_string(w + 1),
               " is collecting a batch (async mode); call set_seed before the first next()");
  std::optional<std::pair<int64_t, std::string>> failure;
  int64_t current = 0;
  try {
    for (current = 0; current < num_workers() && !failure; ++current) {
      im.send_command(current, SeedCommand{seed});
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
      im.send_command(w, StopCommand{});
    } catch (const std::exception& e) {
      im.gone[w] = true;
      spdlog::warn("DistributedCollector::shutdown: cannot tell worker rank {} to stop: {}", w + 1,
                   message_of(e));
    }
  }
  // Closing the group's connections ends the workers that were not told to stop.
  im.group.reset();
  im.launcher.reap_all(deadline);
  im.store.reset();
}

TensorDict DistributedCollector::state_dict() const {
  auto& im = *impl_;
  TensorDict state({{"frames", torch::tensor(frames_, torch::kLong)},
                    {"iterations", torch::tensor(iterations_, torch::kLong)}});
  // The workers' collectors (their envs and episodes in flight), when every worker can answer
  // now: not after shutdown, not while a batch is in flight (async mode).
  if (im.shut_down || std::find(im.pending.begin(), im.pending.end(), true) != im.pending.end())
    return state;
  for (int64_t w = 0; w < num_workers(); ++w) {
    try {
      im.send_command(w, SaveStateCommand{});
      const auto status = im.recv_status(w);
      TDRL_CHECK(status.ok, Error, im.recv_message(w, status));
      state.set({"workers", "r" + std::to_string(im.rank(w))},
                tensordict::recv_new(*im.group, static_cast<int>(im.rank(w)), kPayloadTag));
    } catch (const std::exception& e) {
      throw Error("DistributedCollector::state_dict: worker rank " + std::to_string(im.rank(w)) +
                  ": " + message_of(e));
    }
  }
  return state;
}

void DistributedCollector::load_state_dict(const TensorDict& state) {
  // Everything is checked before a worker is asked to change.
  static constexpr const char* kOp = "DistributedCollector::load_state_dict";
  auto& im = *impl_;
  int64_t values[2] = {0, 0};
  const char* names[2] = {"frames", "iterations"};
  for (int i = 0; i < 2; ++i) {
    auto value = state.find(names[i]);
    TDRL_CHECK(value, KeyError, kOp, ": the state has no '", names[i],
               "' counter; pass what state_dict() returned");
    values[i] = value->item<int64_t>();
    TDRL_CHECK(!(values[i] < 0), ValueError, kOp, ": '", names[i], "' is ",
               std::to_string(values[i]), "; expected at least 0");
  }
  std::vector<TensorDict> workers;
  if (state.contains("workers")) {
    for (int64_t w = 0; w < num_workers(); ++w) {
      const NestedKey key({"workers", "r" + std::to_string(im.rank(w))});
      TDRL_CHECK(state.contains(key), KeyError, kOp, ": the state has no ", key.to_string(),
                 "; it was saved by a collector with fewer than ", std::to_string(num_workers()),
                 " workers");
      workers.push_back(state.get_tensordict(key));
    }
    TDRL_CHECK(!im.shut_down, Error, kOp, ": the collector is shut down; its workers are gone");
    for (int64_t w = 0; w < num_workers(); ++w)
      TDRL_CHECK(!im.pending[w], Error, kOp, ": worker rank ", std::to_string(im.rank(w)),
                 " is collecting a batch (async mode); load the state before the first next()");
  }
  // The workers' states, each worker's own first: a worker that refuses its new state gets
  // the old one back, as do the workers loaded before it.
  if (!workers.empty()) {
    const TensorDict before = state_dict();
    const auto load = [&](int64_t w, const TensorDict& worker_state) -> std::optional<std::string> {
      im.send_command(w, LoadStateCommand{});
      tensordict::send(worker_state, *im.group, static_cast<int>(im.rank(w)), kStateTag);
      const auto status = im.recv_status(w);
      if (status.ok) return std::nullopt;
      return im.recv_message(w, status);
    };
    int64_t current = 0;
    try {
      for (current = 0; current < num_workers(); ++current) {
        const auto refused = load(current, workers[static_cast<size_t>(current)]);
        if (!refused) continue;
        for (int64_t w = 0; w < current; ++w)
          load(w, before.get_tensordict({"workers", "r" + std::to_string(im.rank(w))}));
        throw ValueError(std::string(kOp) + ": worker rank " + std::to_string(im.rank(current)) +
                         ": " + *refused + "; every worker keeps the state it had");
      }
    } catch (const tensordict::ValueError&) {
      throw;
    } catch (const std::exception& e) {
      lost("load_state_dict", current, e);
    }
  }
  frames_ = values[0];
  iterations_ = values[1];
}

}  // namespace tdrl::collectors
