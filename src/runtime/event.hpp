// SPDX-License-Identifier: MIT
// Event: a marker in a stream, as cudaEvent_t.
//
// Stream::record(e) enqueues the marker; the event completes when the stream reaches it.
// Stream::wait(e) makes another stream (on any device) wait for the most recent record
// enqueued before the wait call, without blocking the host. Waiting on an event that was
// never recorded does not wait, as in CUDA. Methods may be called from any host thread.
// Each event has a number of its own (trace_id) by which the trace's record and wait
// markers name it (trace/trace.hpp).
#pragma once

#include <atomic>

namespace towers {

/// A point in a stream's work that other streams and the host can wait for.
/// Introduced in chapter 0; used in chapter 3 to order the gradient average.
class Event {
 public:
  /// Takes the next trace_id().
  Event() : trace_id_(next_trace_id()) {}
  virtual ~Event() = default;
  /// Not copyable: a copy would share the original's trace_id().
  Event(const Event&) = delete;
  /// Not assignable, for the same reason.
  Event& operator=(const Event&) = delete;

  /// This event's number, unique in the process: the trace's record and wait markers
  /// carry it (TraceEvent::event_id), so a wait is matched with the record it waits for.
  int trace_id() const { return trace_id_; }

  /// True when the most recent record has completed (or there was none); does not block.
  virtual bool query() = 0;
  /// Blocks the calling host thread until the most recent record has completed.
  /// Rethrows an error raised by the recording stream before the marker.
  virtual void synchronize() = 0;
  /// Milliseconds between two completed records: `end.elapsed_ms_since(start)`.
  virtual float elapsed_ms_since(Event& start) = 0;

 private:
  static int next_trace_id() {
    static std::atomic<int> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  const int trace_id_;
};

}  // namespace towers
