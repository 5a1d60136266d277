#pragma once

// The memory orders are seq_cst where a flag and a counter must see each other (the
// "increment, then check whether anyone sleeps" hand-offs), so no wake-up is lost.
//
// A persistent pool for short, frequent parallel loops (one MuJoCo env step: a few hundred
// microseconds). Waking a sleeping thread costs tens of microseconds on a VM, as much as a
// chunk of work, so both sides spin for a short while before sleeping: the workers after a
// job (the next step usually comes sooner), the caller while the last chunks finish.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tdrl::envs::detail {

/// Runs `fn(i)` for every i in `[0, n)` on the calling thread and size() - 1 workers started
/// once; each thread claims the next index from a shared counter, so uneven items balance
/// and a worker that wakes late finds less to do. Which thread runs an index depends on
/// timing: `fn(i)` must depend on i alone.
/// Thread safety: run() is called by one thread at a time (the owner).
class SpinWorkerPool {
 public:
  /// How long a thread spins before sleeping on a condition variable.
  static constexpr std::chrono::microseconds kSpin{200};

  /// The caller plus `num_threads - 1` workers (num_threads >= 1).
  explicit SpinWorkerPool(int64_t num_threads) : errors_(static_cast<size_t>(num_threads)) {
    try {
      for (int64_t w = 1; w < num_threads; ++w) {
        workers_.emplace_back([this, w] { worker_loop(w); });
      }
    } catch (...) {
      stop();
      throw;
    }
  }

  ~SpinWorkerPool() { stop(); }

  SpinWorkerPool(const SpinWorkerPool&) = delete;
  SpinWorkerPool& operator=(const SpinWorkerPool&) = delete;

  int64_t size() const { return static_cast<int64_t>(workers_.size()) + 1; }

  /// Blocks until every index ran; rethrows the first exception (the caller's first, then
  /// the workers' in order). A thread stops claiming after its first exception.
  void run(int64_t n, const std::function<void(int64_t)>& fn) {
    if (workers_.empty() || n <= 1) {
      for (int64_t i = 0; i < n; ++i) fn(i);
      return;
    }
    fn_ = &fn;
    n_ = n;
    next_.store(0, std::memory_order_relaxed);
    pending_.store(static_cast<int64_t>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      work_cv_.notify_all();
    }
    errors_[0] = claim_and_run();
    wait_for_workers();
    fn_ = nullptr;
    for (auto& error : errors_) {
      if (error) {
        const auto first = error;
        for (auto& e : errors_) e = nullptr;
        std::rethrow_exception(first);
      }
    }
  }

 private:
  template <typename Ready>
  static bool spin_until(Ready ready) {
    const auto deadline = std::chrono::steady_clock::now() + kSpin;
    while (!ready()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }

  // Runs the job's unclaimed indices one by one; returns the first exception.
  std::exception_ptr claim_and_run() {
    try {
      for (int64_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) (*fn_)(i);
    } catch (...) {
      return std::current_exception();
    }
    return nullptr;
  }

  void wait_for_workers() {
    auto done = [this] { return pending_.load(std::memory_order_seq_cst) == 0; };
    if (spin_until(done)) return;
    std::unique_lock<std::mutex> lock(mutex_);
    caller_sleeping_.store(true, std::memory_order_seq_cst);
    done_cv_.wait(lock, done);
    caller_sleeping_.store(false, std::memory_order_relaxed);
  }

  void worker_loop(int64_t w) {
    uint64_t seen = 0;
    while (true) {
      auto ready = [&] {
        return stop_.load(std::memory_order_seq_cst) ||
               generation_.load(std::memory_order_seq_cst) != seen;
      };
      if (!spin_until(ready)) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
        work_cv_.wait(lock, ready);
        sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
      }
      if (stop_.load(std::memory_order_seq_cst)) return;
      seen = generation_.load(std::memory_order_seq_cst);
      errors_[static_cast<size_t>(w)] = claim_and_run();
      if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
          caller_sleeping_.load(std::memory_order_seq_cst)) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_cv_.notify_one();
      }
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true, std::memory_order_seq_cst);
    }
    work_cv_.notify_all();
    for (auto& worker : workers_) worker.join();
    workers_.clear();
  }

  // The job: written by the caller before generation_ is incremented, read by the workers
  // after they see the new generation.
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> pending_{0};
  std::atomic<int64_t> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> workers_;
};

}  // namespace tdrl::envs::detail
