// SPDX-License-Identifier: MIT
// ThreadPool: a fixed set of host threads that run the input pipeline's distortions.
//
// The tutorial distorts images on 16 threads (num_preprocess_threads); the tf.data
// revision uses map(num_parallel_calls=10). This is the same idea: parallel_for() splits
// one piece of work into `count` tasks, runs them on the pool's threads and returns when
// all have finished, rethrowing the first exception a task threw. Tasks must not call
// parallel_for() themselves (a pool thread waiting on the pool could wait forever).
//
// Any host thread may call parallel_for(), several at once (the towers' producers share
// one pool); tasks from different callers interleave in submission order. The pool must
// outlive every caller; its destructor lets queued tasks finish, then joins the threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace towers::data {

/// Fixed-size pool of host threads for leaf tasks. Introduced in chapter 4.
class ThreadPool {
 public:
  /// Starts `threads` threads. Throws UsageError when `threads` < 1.
  explicit ThreadPool(int threads);
  /// Finishes queued tasks, then joins every thread.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Number of threads.
  int size() const { return static_cast<int>(threads_.size()); }

  /// Runs task(0) .. task(count - 1) on the pool and blocks until every one has returned.
  /// Rethrows the first exception any of them threw (the others still run to the end, so
  /// nothing they write outlives the call). Thread-safe; never call it from a task.
  void parallel_for(std::size_t count, const std::function<void(std::size_t)>& task);

 private:
  void worker_loop();

  std::mutex mutex_;
  std::condition_variable work_cv_;  // workers: a task was queued, or stop
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // last: started once everything above exists
};

}  // namespace towers::data
