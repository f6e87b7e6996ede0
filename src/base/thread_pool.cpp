// SPDX-License-Identifier: MIT
// The pool's threads take work from one queue; each call counts down what it handed in
// and waits for zero (a Join on the caller's stack).
#include "base/thread_pool.hpp"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "base/usage_error.hpp"

namespace towers::base {
namespace {

// True on a pool thread (always) and on a caller while it runs its own part.
thread_local bool inside = false;

// Sets `inside` for a scope and puts back what was there.
class InsideScope {
 public:
  InsideScope() : before_(inside) { inside = true; }
  ~InsideScope() { inside = before_; }
  InsideScope(const InsideScope&) = delete;
  InsideScope& operator=(const InsideScope&) = delete;

 private:
  bool before_;
};

// One call: how much of its work is still running, and the first error. Lives on the
// caller's stack; the caller leaves only when `remaining` is 0.
struct Join {
  std::mutex mutex;
  std::condition_variable done_cv;
  std::size_t remaining = 0;
  std::exception_ptr error;

  // Wraps `work` so that it reports here when it ends, whatever it throws.
  template <typename Work>
  std::function<void()> counted(Work work) {
    return [this, work = std::move(work)] {
      std::exception_ptr e;
      try {
        work();
      } catch (...) {
        e = std::current_exception();
      }
      // Notify under the lock: once it is released the caller may return and destroy
      // this Join, so nothing may touch it afterwards.
      std::lock_guard lock(mutex);
      if (e && !error) error = e;
      if (--remaining == 0) done_cv.notify_all();
    };
  }

  // Waits for every piece, then rethrows `first` or else the first error of the pieces.
  void wait_and_rethrow(std::exception_ptr first = nullptr) {
    std::unique_lock lock(mutex);
    done_cv.wait(lock, [this] { return remaining == 0; });
    if (!first) first = error;
    if (first) std::rethrow_exception(first);
  }
};

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) {
    throw UsageError("a thread pool needs at least one thread, not " + std::to_string(threads) +
                     ". Ask for 1 or more threads.");
  }
  grow(threads);
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int ThreadPool::size() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(threads_.size());
}

void ThreadPool::grow(int threads) {
  std::lock_guard lock(mutex_);
  while (static_cast<int>(threads_.size()) < threads) threads_.emplace_back([this] { serve(); });
}

bool ThreadPool::inside_work() { return inside; }

void ThreadPool::serve() {
  inside = true;
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and all queued work has run
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();  // never throws: Join::counted catches
    lock.lock();
  }
}

void ThreadPool::submit(std::vector<std::function<void()>> work) {
  {
    std::lock_guard lock(mutex_);
    for (auto& w : work) queue_.push_back(std::move(w));
  }
  if (work.size() == 1) {
    work_cv_.notify_one();
  } else {
    work_cv_.notify_all();
  }
}

void ThreadPool::run(std::size_t count, const std::function<void(std::size_t)>& task) {
  if (count == 0) return;
  if (inside) {
    for (std::size_t i = 0; i < count; ++i) task(i);
    return;
  }
  Join join;
  join.remaining = count;
  std::vector<std::function<void()>> work;
  work.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    work.push_back(join.counted([&task, i] { task(i); }));
  }
  submit(std::move(work));
  join.wait_and_rethrow();
}

void ThreadPool::parallel_for(std::int64_t n, std::int64_t min_part, int threads,
                              const std::function<void(std::int64_t, std::int64_t)>& part) {
  if (n <= 0) return;
  const std::int64_t most_parts = n / std::max<std::int64_t>(min_part, 1);
  const int parts =
      inside ? 1 : static_cast<int>(std::clamp<std::int64_t>(most_parts, 1, std::max(threads, 1)));
  if (parts == 1) {
    part(0, n);
    return;
  }
  // Part i covers [n * i / parts, n * (i + 1) / parts): sizes differ by at most one.
  auto bound = [n, parts](int i) { return n * i / parts; };
  Join join;
  join.remaining = static_cast<std::size_t>(parts - 1);
  std::vector<std::function<void()>> work;
  work.reserve(join.remaining);
  for (int i = 1; i < parts; ++i) {
    work.push_back(join.counted([&part, begin = bound(i), end = bound(i + 1)] { part(begin, end); }));
  }
  submit(std::move(work));
  std::exception_ptr own_error;
  try {
    InsideScope scope;
    part(bound(0), bound(1));
  } catch (...) {
    own_error = std::current_exception();
  }
  join.wait_and_rethrow(own_error);
}

}  // namespace towers::base
