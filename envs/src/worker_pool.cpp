// WorkerPool: workers sleep on a condition variable until a new job generation appears, then
// claim indices from the job's atomic counter; the last task to finish wakes the owner.

#include <tdrl/envs/worker_pool.h>

#include <atomic>
#include <string>
#include <system_error>
#include <utility>

#include <tensordict/errors.h>

namespace tdrl::envs {

struct WorkerPool::Job {
  Job(int64_t n, std::function<void(int64_t)> fn) : count(n), task(std::move(fn)) {}
  bool finished_all() const { return finished.load() == count; }

  const int64_t count;
  const std::function<void(int64_t)> task;
  std::atomic<int64_t> next{0};      // the next index to claim
  std::atomic<int64_t> finished{0};  // indices whose task has returned (or thrown)
  std::mutex error_mutex;
  std::exception_ptr error;  // the first exception a task threw; guarded by error_mutex
};

WorkerPool::WorkerPool(int64_t num_threads) {
  TDRL_CHECK(!(num_threads < 1), tensordict::ValueError, "WorkerPool: num_threads is ",
             std::to_string(num_threads), "; it must be >= 1");
  threads_.reserve(static_cast<size_t>(num_threads));
  try {
    for (int64_t i = 0; i < num_threads; ++i) threads_.emplace_back([this] { worker_loop(); });
  } catch (...) {
    // Stop the threads already started before giving up.
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& thread : threads_) thread.join();
    throw;
  }
}

WorkerPool::~WorkerPool() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    wait_locked(lock);
    job_.reset();
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void WorkerPool::dispatch(int64_t count, std::function<void(int64_t)> task) {
  TDRL_CHECK(!(count < 0), tensordict::ValueError, "WorkerPool::dispatch: count is ",
             std::to_string(count), "; it must be >= 0");
  auto job = std::make_shared<Job>(count, std::move(task));
  {
    std::unique_lock<std::mutex> lock(mutex_);
    wait_locked(lock);
    job_ = std::move(job);
    if (count == 0) return;  // nothing to run: no need to wake anyone
    ++generation_;
  }
  work_cv_.notify_all();
}

void WorkerPool::wait() {
  std::shared_ptr<Job> job;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    wait_locked(lock);
    job = std::move(job_);  // releases the task (and what it captured) once workers drop it
  }
  if (!job) return;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(job->error_mutex);
    error = job->error;
  }
  if (error) std::rethrow_exception(error);
}

void WorkerPool::parallel_for(int64_t count, std::function<void(int64_t)> task) {
  dispatch(count, std::move(task));
  wait();
}

void WorkerPool::wait_locked(std::unique_lock<std::mutex>& lock) {
  done_cv_.wait(lock, [this] { return !job_ || job_->finished_all(); });
}

void WorkerPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (generation_ == seen) return;  // stopped, and no job this worker has not seen
      seen = generation_;
      job = job_;
    }
    if (job) run_tasks(*job);
  }
}

void WorkerPool::run_tasks(Job& job) {
  for (;;) {
    const int64_t i = job.next.fetch_add(1);
    if (i >= job.count) return;
    try {
      job.task(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
    }
    if (job.finished.fetch_add(1) + 1 == job.count) {
      // Taking the mutex orders this notification after the owner's predicate check.
      std::lock_guard<std::mutex> lock(mutex_);
      done_cv_.notify_all();
    }
  }
}

}  // namespace tdrl::envs
