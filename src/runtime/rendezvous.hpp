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
// To probe again (a graph replays its probes at every launch: chapter 7), start each round
// with enqueue_reset() on a stream that runs after the previous round's probes and before
// the next's: without it the flags of the first round stay set, and every later probe
// "meets" at once. Rounds add up: all_met() holds only if every round met.
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

  /// Starts a new round: enqueues on `stream` (as op "rendezvous reset") the clearing of
  /// who is present and whether all met, and lets enqueue() be called `participants` times
  /// again. `stream` must run it after every probe of the previous round and before any of
  /// the next (in a graph: on the origin stream, before the fork).
  void enqueue_reset(Stream& stream);

  /// After the streams are synchronized: did all participants run at the same time, in
  /// every round?
  bool all_met() const;
  /// After the streams are synchronized: the most participants seen running at once, in
  /// the round where that number was lowest.
  int max_present() const;

 private:
  struct HostState;
  Backend backend_;
  int participants_;
  int enqueued_ = 0;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<HostState> host_;  // host backend
  Buffer cuda_flags_;  // cuda: [present per slot | most seen per slot | met | fewest | rounds]
};

}  // namespace towers
