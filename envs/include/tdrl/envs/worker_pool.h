#pragma once

/// WorkerPool: a persistent pool of threads running index-parallel jobs (ParallelEnv's engine).

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tdrl::envs {

/// A fixed set of `num_threads` std::threads, started once, that run jobs of the form
/// "call `task(i)` for every i in [0, count)". Each index runs exactly once, on whichever
/// worker claims it first; the calling thread only dispatches and waits.
///
/// A job is started with `dispatch` and finished with `wait` (or both at once with
/// `parallel_for`). One job runs at a time: dispatching while a job is in flight first waits
/// for it. The first exception a task throws is kept and rethrown by `wait`; the other tasks
/// still run.
///
/// The destructor waits for the job in flight (all its tasks run; an exception it threw is
/// dropped), then stops and joins the threads. It never hangs on an idle pool.
///
/// Thread safety: dispatch, wait and parallel_for must be called from one thread at a time
/// (the owner); the tasks run concurrently on the workers and must not touch shared state
/// without their own synchronisation.
///
/// Example:
/// ```
/// WorkerPool pool(2);
/// std::vector<double> out(8);
/// pool.parallel_for(8, [&](int64_t i) { out[i] = std::sqrt(double(i)); });
/// ```
class WorkerPool {
 public:
  /// Starts `num_threads` threads. Throws tensordict::ValueError for num_threads < 1.
  explicit WorkerPool(int64_t num_threads);
  /// Waits for the job in flight, then stops and joins the threads.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// The number of worker threads.
  int64_t num_threads() const { return static_cast<int64_t>(threads_.size()); }

  /// Starts a job running `task(i)` for every i in [0, count) and returns at once. `task` is
  /// copied and kept until the job ends. Waits first for a job still in flight (discarding
  /// its exception: call `wait` to see it). Throws ValueError for count < 0.
  void dispatch(int64_t count, std::function<void(int64_t)> task);
  /// Blocks until the current job (if any) has run every index; rethrows the first
  /// exception one of its tasks threw.
  void wait();
  /// dispatch + wait.
  void parallel_for(int64_t count, std::function<void(int64_t)> task);

 private:
  struct Job;
  void worker_loop();
  // Claims and runs indices of `job` until none are left.
  void run_tasks(Job& job);
  // Blocks until the current job has finished; the caller holds `lock` on mutex_.
  void wait_locked(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable work_cv_;  // workers wait here for a new job or stop
  std::condition_variable done_cv_;  // the owner waits here for the job to finish
  std::shared_ptr<Job> job_;         // the current (or last) job; guarded by mutex_
  uint64_t generation_ = 0;          // incremented per job; guarded by mutex_
  bool stop_ = false;                // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace tdrl::envs
