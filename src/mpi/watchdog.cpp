// SPDX-License-Identifier: MIT
#include "mpi/watchdog.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace towers {

namespace {
// "rank 1 had not reached it", "ranks 1, 3 had not reached it", or, when every rank had
// (the stall is inside the collective itself, a link or a daemon), the general cause. With
// `name` (Watchdog::name_ranks), each rank as it names it: "rank 1 (data 0, ...), rank 3 (...)".
std::string blame(const std::vector<int>& behind, const std::function<std::string(int)>& name) {
  if (behind.empty()) return "every rank had reached it; a link or a rank stopped answering inside it";
  std::string who = name || behind.size() == 1 ? "" : "ranks ";
  for (std::size_t i = 0; i < behind.size(); ++i) {
    const std::string rank = std::to_string(behind[i]);
    who += (i == 0 ? "" : ", ") + (name ? name(behind[i]) : behind.size() == 1 ? "rank " + rank : rank);
  }
  return who + " had not reached it (stalled or dead)";
}
}  // namespace

Watchdog::Watchdog(const MpiJob& job, std::chrono::milliseconds limit)
    : job_(job), limit_(limit), board_(std::make_unique<ProgressBoard>(job)),
      thread_([this] { watch(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Watchdog::name_ranks(std::function<std::string(int rank)> name) {
  std::lock_guard lock(mutex_);
  name_ = std::move(name);
}

Watchdog::Scope::Scope(Watchdog& watchdog, std::string what, int step)
    : Scope(watchdog, std::move(what), step, /*peer=*/-1) {}

Watchdog::Scope::Scope(Watchdog& watchdog, std::string what, int step, int peer)
    : watchdog_(watchdog) {
  // Before waiting in a collective: the other ranks learn this rank got here.
  if (peer < 0) watchdog_.board_->arrive();
  {
    std::lock_guard lock(watchdog_.mutex_);
    watchdog_.open_ = true;
    watchdog_.what_ = std::move(what);
    watchdog_.step_ = step;
    watchdog_.peer_ = peer;
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
      const std::string who =
          peer_ < 0 ? blame(board_->behind(), name_)
                    : "it waits for " + (name_ ? name_(peer_) : "rank " + std::to_string(peer_)) +
                          " alone (stalled or dead, or waiting for another in turn)";
      job_.abort(what_ + " of step " + std::to_string(step_) + " did not finish within " + limit +
                 " s: " + who +
                 " (look above for its own message; raise the limit with --collective-timeout)");
    }
  }
}

}  // namespace towers
