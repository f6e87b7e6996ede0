// SPDX-License-Identifier: MIT
// Watchdog: a collective that does not finish in time ends the job instead of hanging it.
//
// A collective waits for every rank. If one rank has died without MPI noticing, or is
// stuck, the others would wait for ever. Around every collective the program holds a
// Watchdog::Scope; a thread of the watchdog's own checks the open scope, and when it has
// been open longer than the limit it calls MpiJob::abort with what was waited for:
//
//   towers: rank 0 of 2: mpi allreduce of step 3 did not finish within 5 s: rank 1 had
//   not reached it (stalled or dead; look above for its own message)
//
// The rank to blame is named from the ProgressBoard, where every rank announces each
// collective it enters. A wait for one other rank alone (chapter 11's pipeline messages)
// is no collective: it is not announced, and its timeout names that rank.
//
// A program may say how the message names a rank (chapter 11 adds each rank's place on its
// mesh: "rank 1 (data 0, pipeline 0, tensor 1) had not reached it").
//
// One scope is open at a time; scopes may be opened from any thread. Introduced in chapter 5.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "mpi/mpi_job.hpp"
#include "mpi/progress_board.hpp"

namespace towers {

/// Bounds the time any one collective may take.
class Watchdog {
 public:
  /// Watches collectives of `job` (which must outlive it) with the time limit `limit`.
  /// Collective: every rank of `job` constructs its watchdog (it sets up the board).
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
    /// Starts the clock of `what`, a wait for world rank `peer` alone (a point-to-point
    /// message, chapter 11's pipeline): not announced on the board, since the other ranks
    /// do not make it, and a timeout names `peer`, the one rank it waits for.
    Scope(Watchdog& watchdog, std::string what, int step, int peer);
    /// The collective finished: stops the clock.
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Watchdog& watchdog_;
  };

  /// How the message names world rank r: `name(r)` instead of "rank r". Call before the
  /// first scope opens.
  void name_ranks(std::function<std::string(int rank)> name);

  /// The limit, in seconds, for messages.
  double limit_seconds() const { return limit_.count() / 1000.0; }

 private:
  void watch();

  const MpiJob& job_;
  std::chrono::milliseconds limit_;
  std::unique_ptr<ProgressBoard> board_;  // who has reached which collective
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  bool open_ = false;
  std::string what_;
  int step_ = -1;
  int peer_ = -1;  // the one rank a point-to-point wait waits for; -1: a collective
  std::chrono::steady_clock::time_point deadline_;
  std::function<std::string(int)> name_;  // empty: "rank r"
  std::thread thread_;  // last: started once everything above is set
};

}  // namespace towers
