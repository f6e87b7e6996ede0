// SPDX-License-Identifier: MIT
// ThreadPool: the one pool of host threads of the project. Two users, two ways to hand
// it work:
//
// - run(count, task): the input pipeline's distortions (the tutorial's
//   num_preprocess_threads). Every task runs on a pool thread; the caller only waits.
// - parallel_for(n, min_part, threads, part): the host ops' fork-join (kernels/host/
//   parallel.hpp). The range is cut into contiguous parts, the caller runs the first and
//   the pool the rest, like one kernel launch spread over the SMs of a GPU.
//
// The same rules for both:
// - Nested calls run inline. A call made from inside a task or part (of any pool) runs
//   all its work on the calling thread, in order: a thread that holds work never waits on
//   threads that may all be waiting themselves.
// - Errors: a call returns only after every task or part it started has ended, then
//   rethrows the first exception one of them threw (the caller's own part first).
// - Any host thread may call, several at once; their work interleaves in the order it
//   was handed in. The pool must outlive every caller; its destructor lets queued work
//   finish, then joins the threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace towers::base {

/// The project's one pool of host threads: run() for the input pipeline, parallel_for()
/// (the caller runs a part) for the host ops. Nested calls run inline.
class ThreadPool {
 public:
  /// Starts `threads` threads. Throws UsageError when `threads` < 1.
  explicit ThreadPool(int threads);
  /// Finishes queued work, then joins every thread.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Number of threads (the callers not counted).
  int size() const;

  /// Starts threads until there are at least `threads` (never fewer: an idle thread only
  /// sleeps). Safe while other threads hand the pool work.
  void grow(int threads);

  /// Runs task(0) .. task(count - 1) on the pool's threads and returns when every one has
  /// returned; rethrows the first exception one threw. Inline from inside a task or part.
  void run(std::size_t count, const std::function<void(std::size_t)>& task);

  /// Calls part(begin, end) for contiguous ranges that cover [0, n) exactly once: up to
  /// `threads` parts (the caller runs the first, the pool the others), each at least
  /// `min_part` long where n allows, their sizes differing by at most one. Returns when
  /// all have ended; rethrows the first exception, the caller's own first. One part, on
  /// the caller, from inside a task or part.
  void parallel_for(std::int64_t n, std::int64_t min_part, int threads,
                    const std::function<void(std::int64_t begin, std::int64_t end)>& part);

  /// True on a thread while it runs a task or part of any pool (where calls run inline).
  static bool inside_work();

 private:
  void serve();
  void submit(std::vector<std::function<void()>> work);

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;  // threads: work was queued, or stop
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace towers::base
