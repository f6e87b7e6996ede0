// SPDX-License-Identifier: MIT
// Trace: the record of what ran where and when — the proof of parallelism.
//
// Every op a stream runs is one TraceEvent: device, stream, tower, step, name, start, end
// (microseconds since the trace's epoch). The host backend stamps events in the worker
// thread with the steady clock; the cuda backend records a CUDA event pair around each op
// and resolves the pairs in collect(), together with the times its kernels stamped
// themselves (ran_us). Host-side spans (how long the tower loop took to *enqueue* a step)
// are added by programs with add_host_span().
//
// Besides spans, a trace holds *markers*: the instant a stream reached Stream::record(e)
// (e completed) and the instant a stream got past Stream::wait(e). Each names its event
// (Event::trace_id()) and which record of it, so a wait can be matched with the record it
// waited for: who waits for whom, drawn in the docs and shown as arrows in Perfetto.
// Markers have start_us == end_us and kind != kSpan; every analysis of spans skips them.
//
// Spans may be added by any thread at any time, also while collect() runs: an input
// producer enqueues traced copies whenever a slot frees up. So collect() resolves only
// the spans whose work has finished and keeps the others pending for the next call, and
// take() forgets exactly what it returns: a span added meanwhile is never lost.
//
// All methods are thread-safe. When disabled (the default), streams skip tracing
// entirely: no clock reads, no events, no locks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace towers {

/// What a TraceEvent stands for: a span of work or a marker of an event.
enum class TraceKind : std::uint8_t {
  kSpan,    ///< an op, or host-side work, from start_us to end_us
  kRecord,  ///< a stream reached Stream::record(e), completing e, at start_us (== end_us)
  kWait,    ///< a stream got past Stream::wait(e) at start_us (== end_us)
};

/// One span of work, or one marker (kind). device and stream are -1 for host-side spans. Introduced in chapter 0.
struct TraceEvent {
  int device = -1;  ///< device index; -1 for host-side spans
  int stream = -1;  ///< stream index within the device; -1 for host-side spans
  int tower = -1;  ///< -1: work that belongs to no tower (e.g. the gradient average)
  int step = -1;         ///< global_step the op belongs to; -1: none
  std::string name;      ///< op name: "busy", "copy", "conv1", "enqueue", ...
  double start_us = 0;   ///< start, microseconds since the trace's epoch
  double end_us = 0;     ///< end, microseconds since the trace's epoch
  /// cuda: when the op's own kernels ran, read off their %globaltimer stamps
  /// (runtime/kernel_stamps.hpp); start_us..end_us is then the stream's occupancy, which
  /// includes time queued behind other streams. Empty for ops with no stamped kernel
  /// (cuBLAS GEMMs, copies) and on the host backend.
  std::vector<std::pair<double, double>> ran_us = {};
  /// Whether ran_us is this op's full record of its own kernels (cuda, every launch stamped).
  bool stamped = false;
  /// cuda: some kernel of this op launched but left no stamp to read: the stamp ring was
  /// full (KernelStampBuffer::unstamped() counts those launches), or its record was given
  /// to a later launch before it was read. The op is then not `stamped` and counts as idle
  /// in the stamp analysis, which therefore reads less concurrency than ran.
  bool stamps_lost = false;
  /// A span, a record or a wait. Analyses of spans skip the other kinds (is_span()).
  TraceKind kind = TraceKind::kSpan;
  /// Record and wait markers: Event::trace_id() of the event; -1 for spans.
  int event_id = -1;
  /// Record and wait markers: which record of the event (1, 2, ...). A wait carries the
  /// number of the record it waits for, so (event_id, record) pairs a wait with its record.
  std::uint64_t record = 0;
  /// Wait markers: when the stream reached the wait; start_us - waited_from_us is how long
  /// the stream was blocked by it (0: the event had completed already).
  double waited_from_us = 0;

  /// Whether this is a span of work (not a record or wait marker).
  bool is_span() const { return kind == TraceKind::kSpan; }
};

/// A marker (kRecord or kWait) of record number `record` of event `event_id`, by stream
/// `stream` of `device`, tagged with `tower` and `step`; its times are set when it happens.
TraceEvent event_marker(TraceKind kind, int device, int stream, int tower, int step,
                        int event_id, std::uint64_t record);

/// Collects TraceEvents from every stream of a runtime.
class Trace {
 public:
  Trace();

  /// Turns recording on or off for ops enqueued from now on.
  void set_enabled(bool enabled) { enabled_.store(enabled, std::memory_order_relaxed); }
  /// Whether ops enqueued now are recorded.
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  /// The training step that ops enqueued from now on belong to (global_step).
  void set_step(int step) { step_.store(step, std::memory_order_relaxed); }
  /// The current step (global_step); -1 before set_step().
  int step() const { return step_.load(std::memory_order_relaxed); }

  /// Microseconds since this trace was made, on the steady clock.
  double now_us() const;

  /// Adds a finished span (host backend streams, host-side spans).
  void add(TraceEvent event);
  /// Fills a pending span's start_us and end_us and returns true once the device has run
  /// it; returns false, touching nothing, while the work is still queued or running.
  using Resolve = std::function<bool(TraceEvent&)>;
  /// Adds a span whose times are known only after the device has run it: collect()
  /// calls `resolve` until it returns true (cuda backend).
  void add_pending(TraceEvent event, Resolve resolve);
  /// Records host-side work from `start_us` to now, e.g. enqueueing one step.
  void add_host_span(std::string name, double start_us);

  /// Counts one host call that enqueued work for the devices (an op, a copy, a record, a
  /// wait, or a whole graph launch): chapter 7 shows that a graph needs one per step.
  void count_host_enqueue() { host_enqueues_.fetch_add(1, std::memory_order_relaxed); }
  /// Host calls counted so far by count_host_enqueue().
  std::uint64_t host_enqueues() const { return host_enqueues_.load(std::memory_order_relaxed); }

  /// Resolves the pending spans whose work has finished and returns every finished span
  /// so far, sorted by start time. Spans still in flight stay pending. Synchronize the
  /// streams whose spans you want first.
  std::vector<TraceEvent> collect();
  /// As collect(), and forgets the spans it returns; pending spans and spans added
  /// while it runs stay for the next call. For per-step analysis of long runs.
  std::vector<TraceEvent> take();
  /// Spans added but not yet resolved (their work had not finished at the last collect).
  std::size_t pending_count();
  /// Forgets every span (pending ones included).
  void clear();

 private:
  struct Pending {
    TraceEvent event;
    Resolve resolve;
  };
  // Resolves what it can of pending_ (outside the lock) into events_; keeps the rest.
  void resolve_finished();
  std::atomic<bool> enabled_{false};
  std::atomic<int> step_{-1};
  std::atomic<std::uint64_t> host_enqueues_{0};
  std::chrono::steady_clock::time_point epoch_;
  std::mutex mutex_;
  std::vector<TraceEvent> events_;
  std::vector<Pending> pending_;
};

}  // namespace towers
