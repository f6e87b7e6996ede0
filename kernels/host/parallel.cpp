// SPDX-License-Identifier: MIT
// The helper threads behind parallel_for: a queue of parts, threads that take them, and
// a countdown per call that its caller waits on.
#include "kernels/host/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace towers::host {
namespace {

// True on a thread while it runs a part: a parallel_for from there runs inline, so a
// part never waits for helpers that may all be busy waiting themselves.
thread_local bool inside_part = false;

// One parallel_for call: how many parts are still running, and the first error. Lives
// on the caller's stack; the caller leaves only when `remaining` is 0.
struct Countdown {
  std::mutex mutex;
  std::condition_variable done;
  int remaining = 0;
  std::exception_ptr error;

  void finish(std::exception_ptr e) {
    // Notify while holding the lock: once it is released the caller may return and
    // destroy this Countdown, so nothing may touch it afterwards.
    std::lock_guard lock(mutex);
    if (e && !error) error = e;
    if (--remaining == 0) done.notify_one();
  }
};

// Helper threads shared by every op of the process (every stream of every device).
class Helpers {
 public:
  static Helpers& instance() {
    static Helpers helpers;
    return helpers;
  }

  ~Helpers() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Grows to at least `count` threads (never shrinks: idle helpers cost nothing).
  void ensure(int count) {
    std::lock_guard lock(mutex_);
    while (static_cast<int>(threads_.size()) < count) threads_.emplace_back([this] { serve(); });
  }

  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
    }
    work_.notify_one();
  }

 private:
  Helpers() = default;

  void serve() {
    inside_part = true;
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left to run
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

std::atomic<int> configured_threads{1};

}  // namespace

void set_op_threads(int threads) {
  if (threads < 1) {
    throw std::invalid_argument("host op threads must be at least 1, got " +
                                std::to_string(threads));
  }
  Helpers::instance().ensure(threads - 1);  // the calling thread is the first
  configured_threads.store(threads);
}

int op_threads() { return configured_threads.load(); }

void parallel_for(std::int64_t n, std::int64_t min_part,
                  const std::function<void(std::int64_t, std::int64_t)>& part) {
  if (n <= 0) return;
  const std::int64_t most_parts = n / std::max<std::int64_t>(min_part, 1);
  const int parts =
      inside_part ? 1 : static_cast<int>(std::clamp<std::int64_t>(most_parts, 1, op_threads()));
  if (parts == 1) {
    part(0, n);
    return;
  }
  // Part i covers [n * i / parts, n * (i + 1) / parts): sizes differ by at most one.
  auto bound = [n, parts](int i) { return n * i / parts; };
  Countdown countdown;
  countdown.remaining = parts - 1;
  for (int i = 1; i < parts; ++i) {
    Helpers::instance().submit([&part, &countdown, begin = bound(i), end = bound(i + 1)] {
      std::exception_ptr error;
      try {
        part(begin, end);
      } catch (...) {
        error = std::current_exception();
      }
      countdown.finish(error);
    });
  }
  std::exception_ptr first_error;
  inside_part = true;
  try {
    part(bound(0), bound(1));
  } catch (...) {
    first_error = std::current_exception();
  }
  inside_part = false;
  std::unique_lock lock(countdown.mutex);
  countdown.done.wait(lock, [&countdown] { return countdown.remaining == 0; });
  if (!first_error) first_error = countdown.error;
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace towers::host
