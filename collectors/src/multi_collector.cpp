#include <tdrl/collectors/multi_collector.h>

#include <chrono>
#include <functional>
#include <numeric>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tensordict/errors.h>
#include <tensordict/lazy_stacked_tensordict.h>

#include "detail/checks.h"

namespace tdrl::collectors {

using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::ValueError;

namespace {

// The argument errors both multi-worker collectors report before building anything.
void check_arguments(const std::string& name, const std::vector<EnvFactory>& factories,
                     const CollectorPolicy& policy, const CollectorOptions& options,
                     bool allow_shared_policy) {
  TDRL_CHECK(!factories.empty(), ValueError, name,
             ": no env factories; pass one factory per worker (at least one)");
  for (size_t i = 0; i < factories.size(); ++i) {
    TDRL_CHECK(factories[i], ValueError, name, ": env factory ", std::to_string(i),
               " is empty; pass a function that builds an env");
  }
  detail::check_frame_counts(name, options);
  TDRL_CHECK(allow_shared_policy || options.policy_factory() || policy.is_random(), ValueError,
             name,
             ": the policy would be shared by workers that keep collecting while the "
             "trainer updates its weights; pass CollectorOptions().policy_factory(...) "
             "building one policy per worker (update_policy_weights_() copies the "
             "trainer's weights into them), or a null policy for random actions");
}

std::vector<EnvFactory> replicate(const std::string& name, const EnvFactory& factory,
                                  int64_t num_workers) {
  TDRL_CHECK(!(num_workers < 1), ValueError, name, ": num_workers is ", std::to_string(num_workers),
             "; it must be >= 1");
  return std::vector<EnvFactory>(static_cast<size_t>(num_workers), factory);
}

const char* collector_name(bool sync) {
  return sync ? "MultiSyncCollector" : "MultiAsyncCollector";
}

std::string worker_prefix(int64_t w) { return "worker " + std::to_string(w) + ": "; }

}  // namespace

// ---- MultiCollectorBase ----------------------------------------------------------------------

struct MultiCollectorBase::Worker {
  enum class Phase { kIdle, kRequested, kRunning, kReady };

  int64_t index = 0;
  std::unique_ptr<Collector> collector;
  std::thread thread;
  // Guarded by mutex_:
  Phase phase = Phase::kIdle;
  bool random = false;              // the requested batch uses random actions
  std::optional<TensorDict> batch;  // the finished batch (kReady without error)
  std::exception_ptr error;         // the failure (kReady with error)
  TensorDict state;                 // collector->state_dict() after the last batch
  int64_t weights_version = 0;      // the weights_version_ the worker's policy holds
};

// Builds env 0 to read its batch size, and replaces factory 0 by one that hands that env
// out once (so the env is built only once). (`policy` is copied by the callers: argument
// evaluation order is unspecified, so it must not be moved from in the same call.)
MultiCollectorBase::Setup MultiCollectorBase::prepare(const std::vector<EnvFactory>& factories,
                                                      const CollectorPolicy& policy,
                                                      const CollectorOptions& options, bool sync) {
  const std::string name = collector_name(sync);
  check_arguments(name, factories, policy, options, sync);
  Setup setup;
  setup.factories = factories;
  std::shared_ptr<EnvBase> env = factories[0]();
  TDRL_CHECK(env, ValueError, name, ": env factory 0 returned null; it must build an env");
  const auto& batch = env->batch_size();
  const int64_t env_numel =
      std::accumulate(batch.begin(), batch.end(), int64_t{1}, std::multiplies<>());
  const int64_t workers = static_cast<int64_t>(factories.size());
  const int64_t multiple = sync ? workers * env_numel : env_numel;
  const int64_t wanted = options.frames_per_batch();
  setup.frames_per_batch = detail::round_up(wanted, multiple);
  if (setup.frames_per_batch != wanted) {
    spdlog::warn(
        "{}: frames_per_batch {} is not a multiple of {} ({}); collecting {} frames "
        "per batch",
        name, wanted, multiple,
        sync ? std::to_string(workers) + " workers x " + std::to_string(env_numel) + " sub-envs"
             : std::to_string(env_numel) + " sub-envs",
        setup.frames_per_batch);
  }
  setup.worker_frames_per_batch = sync ? setup.frames_per_batch / workers : setup.frames_per_batch;
  setup.factories[0] = [env, factory = factories[0]]() mutable -> std::shared_ptr<EnvBase> {
    if (env) return std::exchange(env, nullptr);
    return factory();
  };
  return setup;
}

MultiCollectorBase::MultiCollectorBase(Setup setup, CollectorPolicy policy,
                                       const CollectorOptions& options, bool sync)
    : name_(collector_name(sync)), policy_(std::move(policy)), options_(options) {
  const auto& factories = setup.factories;
  const int64_t worker_frames_per_batch = setup.worker_frames_per_batch;
  frames_per_batch_ = setup.frames_per_batch;
  // prepare() has checked the arguments: a Setup only comes from there.
  TORCH_INTERNAL_ASSERT(!factories.empty());
  TORCH_INTERNAL_ASSERT(frames_per_batch_ >= 1 && worker_frames_per_batch >= 1);
  set_total_frames(options_.total_frames(), name_);

  const auto& factory = options_.policy_factory();
  if (factory) {
    torch::NoGradGuard no_grad;
    weights_ = policy_weights(policy_).clone();
    sync_weights_ = !weights_.is_empty();
  }
  CollectorOptions worker_options = options_;
  worker_options.frames_per_batch(worker_frames_per_batch)
      .total_frames(-1)
      .init_random_frames(0)
      .split_trajs(false)
      .postproc(nullptr)
      .policy_factory(nullptr);

  // Collectors (envs and policies) are built here, in order, on the constructing thread.
  const auto num = static_cast<int64_t>(factories.size());
  workers_.reserve(static_cast<size_t>(num));
  for (int64_t w = 0; w < num; ++w) {
    try {
      auto worker = std::make_unique<Worker>();
      worker->index = w;
      CollectorPolicy worker_policy = factory ? factory() : policy_;
      if (sync_weights_) load_policy_weights(worker_policy, weights_);
      worker->collector = std::make_unique<Collector>(factories[static_cast<size_t>(w)],
                                                      std::move(worker_policy), worker_options);
      worker->state = worker->collector->state_dict();
      workers_.push_back(std::move(worker));
    } catch (...) {
      tensordict::rethrow_with_prefix(std::current_exception(),
                                      std::string(name_) + ": " + worker_prefix(w));
    }
  }
  // The destructor does not run when a constructor throws: stop the threads started so far.
  try {
    for (auto& worker : workers_) {
      Worker& ref = *worker;
      worker->thread = std::thread([this, &ref] { run_worker(ref); });
    }
  } catch (...) {
    shutdown();
    throw;
  }
}

MultiCollectorBase::~MultiCollectorBase() { shutdown(); }

void MultiCollectorBase::run_worker(Worker& worker) {
  torch::NoGradGuard no_grad;
  const auto num = static_cast<int64_t>(workers_.size());
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || worker.phase == Worker::Phase::kRequested; });
    if (stop_) return;
    worker.phase = Worker::Phase::kRunning;
    const bool random = worker.random;
    std::optional<TensorDict> weights;
    if (sync_weights_ && worker.weights_version != weights_version_) {
      weights = weights_;  // an immutable snapshot: read outside the lock
      worker.weights_version = weights_version_;
    }
    lock.unlock();

    std::optional<TensorDict> batch;
    std::exception_ptr error;
    TensorDict state;
    try {
      if (weights) load_policy_weights(worker.collector->policy(), *weights);
      batch = worker.collector->next(random);
      if (batch) {
        const auto ids = batch->get(traj_ids_key());
        batch->set(traj_ids_key(), ids * num + worker.index);
        state = worker.collector->state_dict();
      }
    } catch (...) {
      error = std::current_exception();
    }

    lock.lock();
    if (error || batch) {
      worker.error = error;
      worker.batch = std::move(batch);
      if (!error) worker.state = state;
      worker.phase = Worker::Phase::kReady;
      ready_.push_back(worker.index);
    } else {
      worker.phase = Worker::Phase::kIdle;  // cancelled by shutdown()
    }
    cv_.notify_all();
  }
}

void MultiCollectorBase::request(int64_t w) {
  std::lock_guard<std::mutex> lock(mutex_);
  Worker& worker = *workers_.at(static_cast<size_t>(w));
  TORCH_INTERNAL_ASSERT(!stop_ && worker.phase == Worker::Phase::kIdle, "request: worker ", w,
                        " is busy or the collector is shut down");
  worker.random = frames_ < options_.init_random_frames();
  worker.phase = Worker::Phase::kRequested;
  cv_.notify_all();
}

std::pair<int64_t, TensorDict> MultiCollectorBase::wait_ready(std::optional<int64_t> only) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (only) {
    TORCH_INTERNAL_ASSERT(workers_.at(static_cast<size_t>(*only))->phase != Worker::Phase::kIdle,
                          "wait_for: worker ", *only, " was not requested");
  } else {
    bool any = false;
    for (const auto& worker : workers_) any = any || worker->phase != Worker::Phase::kIdle;
    TORCH_INTERNAL_ASSERT(any, "wait_any: no worker was requested");
  }
  while (true) {
    for (auto it = ready_.begin(); it != ready_.end(); ++it) {
      Worker& worker = *workers_[static_cast<size_t>(*it)];
      if (!worker.error) continue;
      const std::exception_ptr error = worker.error;
      const int64_t w = *it;
      lock.unlock();
      shutdown();
      tensordict::rethrow_with_prefix(error, worker_prefix(w));
    }
    for (auto it = ready_.begin(); it != ready_.end(); ++it) {
      if (only && *it != *only) continue;
      const int64_t w = *it;
      Worker& worker = *workers_[static_cast<size_t>(w)];
      ready_.erase(it);
      TensorDict batch = std::move(*worker.batch);
      worker.batch.reset();
      worker.phase = Worker::Phase::kIdle;
      return {w, std::move(batch)};
    }
    cv_.wait(lock);
  }
}

std::pair<int64_t, TensorDict> MultiCollectorBase::wait_any() { return wait_ready(std::nullopt); }

TensorDict MultiCollectorBase::wait_for(int64_t w) { return wait_ready(w).second; }

TensorDict MultiCollectorBase::finish_batch(TensorDict batch, int64_t frames) {
  if (options_.split_trajs()) batch = split_trajectories(batch);
  if (options_.postproc()) batch = options_.postproc()(batch);
  frames_ += frames;
  ++iterations_;
  return batch;
}

void MultiCollectorBase::update_policy_weights_() {
  if (!sync_weights_ || shut_down_) return;
  TensorDict snapshot;
  {
    torch::NoGradGuard no_grad;
    snapshot = policy_weights(policy_).clone();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  weights_ = snapshot;
  ++weights_version_;
}

void MultiCollectorBase::check_idle(const char* op) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& worker : workers_) {
    TDRL_CHECK(worker->phase == Worker::Phase::kIdle, tensordict::Error, std::string(name_),
               "::", op, ": worker ", std::to_string(worker->index),
               " is collecting; call it while no batch is in flight (for "
               "MultiAsyncCollector: before the first next())");
  }
}

uint64_t MultiCollectorBase::set_seed(uint64_t seed) {
  check_idle("set_seed");
  for (auto& worker : workers_) seed = worker->collector->set_seed(seed);
  return seed;
}

void MultiCollectorBase::shutdown() {
  try {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (stop_) return;
      stop_ = true;
      shut_down_ = true;
      for (auto& worker : workers_) worker->collector->cancel();
      cv_.notify_all();
      // A batch in flight stops after its current step; cancel again until it has, in case
      // a cancel landed before the worker's next() began.
      auto running = [this] {
        for (const auto& worker : workers_) {
          if (worker->phase == Worker::Phase::kRunning) return true;
        }
        return false;
      };
      while (running()) {
        cv_.wait_for(lock, std::chrono::milliseconds(1));
        for (auto& worker : workers_) {
          if (worker->phase == Worker::Phase::kRunning) worker->collector->cancel();
        }
      }
    }
    for (auto& worker : workers_) {
      if (worker->thread.joinable()) worker->thread.join();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ready_.clear();
    for (auto& worker : workers_) {
      worker->batch.reset();
      worker->error = nullptr;
      worker->phase = Worker::Phase::kIdle;
      worker->collector->shutdown();
    }
  } catch (...) {
    // shutdown() never throws (it runs in destructors); joining cannot fail here since every
    // thread is joinable and not the calling thread.
  }
}

TensorDict MultiCollectorBase::state_dict() const {
  TensorDict state = TensorDict::empty({});
  state.set("frames", torch::tensor(frames_, torch::kInt64));
  state.set("iterations", torch::tensor(iterations_, torch::kInt64));
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& worker : workers_) {
    state.set(NestedKey({"workers", "w" + std::to_string(worker->index)}), worker->state.clone());
  }
  return state;
}

void MultiCollectorBase::load_state_dict(const TensorDict& state) {
  const std::string op = std::string(name_) + "::load_state_dict";
  int64_t counters[2];
  const char* names[2] = {"frames", "iterations"};
  for (int i = 0; i < 2; ++i) {
    auto value = state.find(names[i]);
    TDRL_CHECK(value, KeyError, op, ": the state has no '", names[i],
               "'; pass what state_dict() returned");
    TDRL_CHECK(value->numel() == 1, ShapeError, op, ": '", names[i], "' must be a scalar, got ",
               tensordict::shape_str(value->sizes()));
    counters[i] = value->item<int64_t>();
    TDRL_CHECK(!(counters[i] < 0), ValueError, op, ": '", names[i], "' is ",
               std::to_string(counters[i]), "; counters are >= 0");
  }
  std::vector<TensorDict> worker_states;
  for (const auto& worker : workers_) {
    const NestedKey key({"workers", "w" + std::to_string(worker->index)});
    auto value = state.find_value(key);
    const auto* td = value ? std::get_if<TensorDict>(&*value) : nullptr;
    TDRL_CHECK(td, KeyError, op, ": the state has no TensorDict at ", key.to_string(),
               " (one per worker); pass what state_dict() of a collector with ",
               std::to_string(workers_.size()), " workers returned");
    worker_states.push_back(*td);
  }
  check_idle("load_state_dict");
  // A worker's collector that rejects its state rolls back those already loaded.
  std::vector<TensorDict> previous;
  for (const auto& worker : workers_) previous.push_back(worker->collector->state_dict());
  size_t loaded = 0;
  try {
    for (; loaded < workers_.size(); ++loaded) {
      workers_[loaded]->collector->load_state_dict(worker_states[loaded]);
    }
  } catch (...) {
    const auto error = std::current_exception();
    for (size_t i = 0; i < loaded; ++i) workers_[i]->collector->load_state_dict(previous[i]);
    tensordict::rethrow_with_prefix(error, op + ": " + worker_prefix(static_cast<int64_t>(loaded)));
  }
  frames_ = counters[0];
  iterations_ = counters[1];
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& worker : workers_) worker->state = worker->collector->state_dict();
}

// ---- MultiSyncCollector ----------------------------------------------------------------------

MultiSyncCollector::MultiSyncCollector(const std::vector<EnvFactory>& factories,
                                       CollectorPolicy policy, CollectorOptions options)
    : MultiCollectorBase(prepare(factories, policy, options, true), policy, options, true) {}

MultiSyncCollector::MultiSyncCollector(const EnvFactory& factory, int64_t num_workers,
                                       CollectorPolicy policy, CollectorOptions options)
    : MultiSyncCollector(replicate("MultiSyncCollector", factory, num_workers), std::move(policy),
                         std::move(options)) {}

std::optional<TensorDict> MultiSyncCollector::next() {
  if (is_shut_down() || finished()) return std::nullopt;
  for (int64_t w = 0; w < num_workers(); ++w) request(w);
  std::vector<TensorDict> batches;
  batches.reserve(static_cast<size_t>(num_workers()));
  for (int64_t w = 0; w < num_workers(); ++w) batches.push_back(wait_for(w));
  TensorDict batch = tensordict::stack(batches, 0).contiguous();
  const int64_t frames = batch.numel();
  return finish_batch(std::move(batch), frames);
}

// ---- MultiAsyncCollector ---------------------------------------------------------------------

MultiAsyncCollector::MultiAsyncCollector(const std::vector<EnvFactory>& factories,
                                         CollectorPolicy policy, CollectorOptions options)
    : MultiCollectorBase(prepare(factories, policy, options, false), policy, options, false) {}

MultiAsyncCollector::MultiAsyncCollector(const EnvFactory& factory, int64_t num_workers,
                                         CollectorPolicy policy, CollectorOptions options)
    : MultiAsyncCollector(replicate("MultiAsyncCollector", factory, num_workers), std::move(policy),
                          std::move(options)) {}

std::optional<TensorDict> MultiAsyncCollector::next() {
  if (is_shut_down() || finished()) return std::nullopt;
  if (!started_) {
    for (int64_t w = 0; w < num_workers(); ++w) request(w);
    started_ = true;
  } else if (last_worker_ >= 0) {
    request(last_worker_);
  }
  auto ready = wait_any();
  last_worker_ = ready.first;
  const int64_t frames = ready.second.numel();
  TensorDict batch = finish_batch(std::move(ready.second), frames);
  // The batches still in flight are not needed: stop their workers now.
  if (finished()) shutdown();
  return batch;
}

}  // namespace tdrl::collectors
