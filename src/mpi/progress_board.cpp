// SPDX-License-Identifier: MIT
#include "mpi/progress_board.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include "mpi/mpi_check.hpp"

namespace towers {

namespace {
constexpr int kAnnounceTag = 7;
}  // namespace

ProgressBoard::ProgressBoard(const MpiJob& job)
    : rank_(job.rank()), size_(job.size()), seen_(size_, 0), incoming_(size_, 0),
      receives_(size_, MPI_REQUEST_NULL) {
  MPI_CHECK(MPI_Comm_dup(job.comm(), &comm_));
  std::lock_guard lock(mutex_);
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) post_receive_locked(r);
  }
}

void ProgressBoard::post_receive_locked(int rank) {
  MPI_CHECK(MPI_Irecv(&incoming_[rank], 1, MPI_INT64_T, rank, kAnnounceTag, comm_,
                      &receives_[rank]));
}

void ProgressBoard::poll_locked() {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    // One rank's announcements arrive in the order sent (MPI's non-overtaking rule).
    for (int done = 1; done != 0;) {
      MPI_CHECK(MPI_Test(&receives_[r], &done, MPI_STATUS_IGNORE));
      if (done != 0) {
        seen_[r] = incoming_[r];
        post_receive_locked(r);
      }
    }
  }
  // Sends whose bytes have left can give their buffers back.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < sends_.size(); ++i) {
    int done = 0;
    MPI_CHECK(MPI_Test(&sends_[i], &done, MPI_STATUS_IGNORE));
    if (done == 0) {
      sends_[kept] = sends_[i];
      ++kept;
    }
  }
  sends_.resize(kept);
}

std::int64_t ProgressBoard::arrive() {
  std::lock_guard lock(mutex_);
  poll_locked();
  ++mine_;
  // MPI_Isend reads its buffer until it completes: each send gets a slot of its own (a
  // deque keeps their addresses), given back once no send is in flight.
  if (sends_.empty()) outgoing_.clear();
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    outgoing_.push_back(mine_);
    sends_.push_back(MPI_REQUEST_NULL);
    MPI_CHECK(MPI_Isend(&outgoing_.back(), 1, MPI_INT64_T, r, kAnnounceTag, comm_,
                        &sends_.back()));
  }
  return mine_;
}

ProgressBoard::~ProgressBoard() {
  std::lock_guard lock(mutex_);
  // A normal end: every rank entered as many collectives, so each one's last announcement
  // is on its way; take them in so that no message is left unmatched at MPI_Finalize. On
  // an exception the job is being aborted: do not wait for ranks that may never send.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool all_seen = false;
  while (std::uncaught_exceptions() == 0 && !all_seen &&
         std::chrono::steady_clock::now() < give_up) {
    poll_locked();
    all_seen = sends_.empty();
    for (int r = 0; r < size_; ++r) all_seen = all_seen && (r == rank_ || seen_[r] >= mine_);
    if (!all_seen) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!all_seen && std::uncaught_exceptions() == 0) {
    // Every rank must enter the same collectives (the board's rule): one that entered
    // fewer is a bug of the program, and it cost this rank the 10 s just waited. Said so
    // that a test can see it (chapter 11's PlanMatchesRun looks for this line).
    std::fprintf(stderr, "towers: rank %d: the progress board gave up waiting at the end: a "
                 "rank entered fewer collectives than this one's %lld\n",
                 rank_, static_cast<long long>(mine_));
  }
  // No MPI_CHECK here: a destructor must not throw, and the job is ending either way.
  for (int r = 0; r < size_; ++r) {
    if (receives_[r] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&receives_[r]);
    MPI_Wait(&receives_[r], MPI_STATUS_IGNORE);
  }
  for (MPI_Request& send : sends_) MPI_Request_free(&send);
  MPI_Comm_free(&comm_);
}

std::vector<int> ProgressBoard::behind() {
  std::lock_guard lock(mutex_);
  poll_locked();
  std::vector<int> ranks;
  for (int r = 0; r < size_; ++r) {
    if (r != rank_ && seen_[r] < mine_) ranks.push_back(r);
  }
  return ranks;
}

}  // namespace towers
