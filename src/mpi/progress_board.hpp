// SPDX-License-Identifier: MIT
// ProgressBoard: which ranks have reached the collective this rank is stuck in.
//
// A watchdog that fires knows only that *this* rank waited too long; the rank to blame is
// one that never arrived. So every rank announces each collective it enters: a tiny
// message with its count of collectives so far to every other rank, on a communicator of
// its own (no tag can collide with the program's). A rank that times out in its k-th
// collective reads the counts that reached it; the ranks whose last count is below k had
// not started that collective: those are the stalled (or dead) ones to name.
//
// Every rank enters the same collectives in the same order (MPI requires it), so the
// counts line up. The messages are 8 bytes, N-1 per collective: nothing next to a step.
#pragma once

#include <cstdint>
#include <deque>
#include <mpi.h>
#include <mutex>
#include <vector>

#include "mpi/mpi_job.hpp"

namespace towers {

/// Each rank's count of collectives entered, as announced to this rank.
class ProgressBoard {
 public:
  /// Collective over `job`'s communicator (duplicates it); `job` must outlive the board.
  explicit ProgressBoard(const MpiJob& job);
  /// Receives the other ranks' last announcements (a normal end: every rank entered as
  /// many collectives), then frees the communicator. Collective.
  ~ProgressBoard();
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;

  /// This rank enters its next collective: tells every other rank. Returns the count.
  std::int64_t arrive();
  /// The ranks whose last announced count is below this rank's (they have not reached the
  /// collective this rank is in). Any thread.
  std::vector<int> behind();

 private:
  void poll_locked();  // takes in every announcement that has arrived
  void post_receive_locked(int rank);

  int rank_;
  int size_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::mutex mutex_;
  std::int64_t mine_ = 0;
  std::vector<std::int64_t> seen_;        // per rank: the last count received
  std::vector<std::int64_t> incoming_;    // per rank: the receive buffer
  std::vector<MPI_Request> receives_;     // per rank: the posted receive
  std::deque<std::int64_t> outgoing_;     // one stable buffer per send in flight
  std::vector<MPI_Request> sends_;
};

}  // namespace towers
