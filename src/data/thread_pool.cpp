// SPDX-License-Identifier: MIT
#include "data/thread_pool.hpp"

#include <exception>
#include <string>

#include "base/usage_error.hpp"

namespace towers::data {

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) {
    throw UsageError("a thread pool needs at least one thread, not " + std::to_string(threads) +
                     ". Ask for 1 or more preprocessing threads.");
  }
  threads_.reserve(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void ThreadPool::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and every queued task has run
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();  // never throws: parallel_for wraps every task
    lock.lock();
  }
}

void ThreadPool::parallel_for(std::size_t count, const std::function<void(std::size_t)>& task) {
  if (count == 0) return;
  // What one call shares with its tasks. It lives on this caller's stack, which is safe
  // because the caller does not return before `remaining` reaches zero.
  struct Join {
    std::mutex mutex;
    std::condition_variable done_cv;
    std::size_t remaining;
    std::exception_ptr error;
  } join;
  join.remaining = count;

  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < count; ++i) {
      queue_.emplace_back([&join, &task, i] {
        std::exception_ptr error;
        try {
          task(i);
        } catch (...) {
          error = std::current_exception();
        }
        // Notify under the lock: once remaining is 0 the caller may return and destroy join.
        std::lock_guard<std::mutex> done_lock(join.mutex);
        if (error && !join.error) join.error = error;
        if (--join.remaining == 0) join.done_cv.notify_all();
      });
    }
  }
  work_cv_.notify_all();

  std::unique_lock<std::mutex> lock(join.mutex);
  join.done_cv.wait(lock, [&] { return join.remaining == 0; });
  if (join.error) std::rethrow_exception(join.error);
}

}  // namespace towers::data
