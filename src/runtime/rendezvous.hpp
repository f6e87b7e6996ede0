// SPDX-License-Identifier: MIT
// Rendezvous: a probe that proves towers run at the same time, without timing.
//
// Enqueue the probe once on each participant's stream. Each probe announces that it is
// running, then waits until every participant is running at once, or until the timeout.
// If the streams truly run concurrently, all probes meet; if the schedule is serial (the
// host waits for each tower before enqueueing the next), the first probe runs alone and
// times out: "not concurrent", never a hang.
//
// Host backend: a mutex and condition variable shared by the workers. CUDA backend: a
// one-thread kernel per stream spinning on mapped pinned memory that every GPU and the
// host can see, bounded by the GPU clock (%globaltimer).
//
// Use: construct, enqueue() on each stream, synchronize the streams, then read the result.
// A Rendezvous is single-use.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "runtime/memory.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// A concurrency probe across `participants` streams. Introduced in chapter 0.
class Rendezvous {
 public:
  /// `timeout` bounds how long each probe waits for the others.
  Rendezvous(Runtime& runtime, int participants,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  /// Enqueues the next participant's probe on `stream` (as op "rendezvous").
  /// Throws std::logic_error when called more than `participants` times.
  void enqueue(Stream& stream);

  /// After the streams are synchronized: did all participants run at the same time?
  bool all_met() const;
  /// After the streams are synchronized: the most participants seen running at once.
  int max_present() const;

 private:
  struct HostState;
  Backend backend_;
  int participants_;
  int enqueued_ = 0;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<HostState> host_;  // host backend
  Buffer cuda_flags_;                // cuda: [present per slot | most seen per slot | met]
};

}  // namespace towers
