// SPDX-License-Identifier: MIT
// HostEvent: cudaEvent_t semantics for simulated devices.
//
// Each Stream::record() takes a new generation number at enqueue time; the marker op
// completes that generation when the stream's worker reaches it. A wait captures the
// generation current at the wait call and blocks only the waiting stream's worker until
// it completes. An error in the recording stream travels with the event to its waiters.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>

#include "runtime/event.hpp"

namespace towers {

class HostCapture;

/// An event of the host backend. Thread-safe.
class HostEvent final : public Event {
 public:
  bool query() override;
  void synchronize() override;
  float elapsed_ms_since(Event& start) override;

  /// Called by Stream::record on the enqueuing thread: the generation to complete.
  std::uint64_t next_generation();
  /// Called by the marker op on the recording stream's worker.
  void complete(std::uint64_t generation, std::exception_ptr stream_error);
  /// The most recent generation handed out (0: never recorded).
  std::uint64_t recorded_generation();
  /// Blocks until `generation` has completed; returns the recording stream's error, if any.
  std::exception_ptr wait_for(std::uint64_t generation);

  /// Graph capture (host_graph.hpp): this event's last record was captured in `capture`
  /// after the nodes `frontier`. An eager record, or forget_capture(capture), undoes it.
  void set_captured(HostCapture* capture, std::vector<int> frontier);
  /// The capture of the last record, or null when it was eager (or none).
  HostCapture* captured_in();
  /// The nodes a captured record stands for.
  std::vector<int> captured_frontier();
  /// Called when `capture` ends.
  void forget_capture(HostCapture* capture);

 private:
  std::mutex mutex_;
  std::condition_variable completed_cv_;
  std::uint64_t recorded_ = 0;
  std::uint64_t completed_ = 0;
  double completed_at_ms_ = 0;
  std::exception_ptr error_;
  HostCapture* captured_in_ = nullptr;
  std::vector<int> captured_frontier_;
};

}  // namespace towers
