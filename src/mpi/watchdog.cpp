// SPDX-License-Identifier: MIT
#include "mpi/watchdog.hpp"

#include <cstdio>

namespace towers {

Watchdog::Watchdog(const MpiJob& job, std::chrono::milliseconds limit)
    : job_(job), limit_(limit), thread_([this] { watch(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

Watchdog::Scope::Scope(Watchdog& watchdog, std::string what, int step) : watchdog_(watchdog) {
  {
    std::lock_guard lock(watchdog_.mutex_);
    watchdog_.open_ = true;
    watchdog_.what_ = std::move(what);
    watchdog_.step_ = step;
    watchdog_.deadline_ = std::chrono::steady_clock::now() + watchdog_.limit_;
  }
  watchdog_.changed_.notify_all();
}

Watchdog::Scope::~Scope() {
  {
    std::lock_guard lock(watchdog_.mutex_);
    watchdog_.open_ = false;
  }
  watchdog_.changed_.notify_all();
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (!open_) {
      changed_.wait(lock);
      continue;
    }
    // Woken early when the scope closes (or another opens); times out only if it does not.
    const auto deadline = deadline_;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && open_ && !stop_ &&
        deadline_ == deadline) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", limit_seconds());
      job_.abort(what_ + " of step " + std::to_string(step_) + " did not finish within " + limit +
                 " s: another rank has died or stopped answering (look above for its own "
                 "message; raise the limit with --collective-timeout)");
    }
  }
}

}  // namespace towers
