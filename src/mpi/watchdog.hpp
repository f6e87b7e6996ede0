// SPDX-License-Identifier: MIT
// Watchdog: a collective that does not finish in time ends the job instead of hanging it.
//
// A collective waits for every rank. If one rank has died without MPI noticing, or is
// stuck, the others would wait for ever. Around every collective the program holds a
// Watchdog::Scope; a thread of the watchdog's own checks the open scope, and when it has
// been open longer than the limit it calls MpiJob::abort with what was waited for:
//
//   towers: rank 0 of 2: mpi allreduce of step 3 did not finish within 5 s: another rank
//   has died or stopped answering (look above for its own message)
//
// One scope is open at a time; scopes may be opened from any thread. Introduced in chapter 5.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "mpi/mpi_job.hpp"

namespace towers {

/// Bounds the time any one collective may take.
class Watchdog {
 public:
  /// Watches collectives of `job` (which must outlive it) with the time limit `limit`.
  Watchdog(const MpiJob& job, std::chrono::milliseconds limit);
  /// Stops the watching thread.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// While alive, the collective `what` of step `step` is being waited for.
  class Scope {
   public:
    /// Starts the clock of collective `what` of step `step` (-1: no step) on `watchdog`.
    Scope(Watchdog& watchdog, std::string what, int step);
    /// The collective finished: stops the clock.
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Watchdog& watchdog_;
  };

  /// The limit, in seconds, for messages.
  double limit_seconds() const { return limit_.count() / 1000.0; }

 private:
  void watch();

  const MpiJob& job_;
  std::chrono::milliseconds limit_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  bool open_ = false;
  std::string what_;
  int step_ = -1;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;  // last: started once everything above is set
};

}  // namespace towers
