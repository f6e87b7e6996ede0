// SPDX-License-Identifier: MIT
#include "trace/trace.hpp"

#include <algorithm>
#include <iterator>

#include "trace/span_names.hpp"

namespace towers {

TraceEvent event_marker(TraceKind kind, int device, int stream, int tower, int step,
                        int event_id, std::uint64_t record) {
  TraceEvent marker{device, stream, tower, step,
                    kind == TraceKind::kWait ? span::kEventWait : span::kEventRecord, 0, 0};
  marker.kind = kind;
  marker.event_id = event_id;
  marker.record = record;
  return marker;
}

Trace::Trace() : epoch_(std::chrono::steady_clock::now()) {}

double Trace::now_us() const {
  auto elapsed = std::chrono::steady_clock::now() - epoch_;
  return std::chrono::duration<double, std::micro>(elapsed).count();
}

void Trace::add(TraceEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

void Trace::add_pending(TraceEvent event, Resolve resolve) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back({std::move(event), std::move(resolve)});
}

void Trace::add_host_span(std::string name, double start_us) {
  TraceEvent event;
  event.step = step();
  event.name = std::move(name);
  event.start_us = start_us;
  event.end_us = now_us();
  add(std::move(event));
}

void Trace::resolve_finished() {
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending.swap(pending_);
  }
  // Resolving may call into CUDA (cudaEventQuery, cudaEventElapsedTime), so it runs
  // outside the lock; streams keep adding spans meanwhile.
  std::vector<TraceEvent> resolved;
  std::vector<Pending> in_flight;
  resolved.reserve(pending.size());
  for (auto& p : pending) {
    if (p.resolve(p.event)) {
      resolved.push_back(std::move(p.event));
    } else {
      in_flight.push_back(std::move(p));
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  events_.insert(events_.end(), std::make_move_iterator(resolved.begin()),
                 std::make_move_iterator(resolved.end()));
  pending_.insert(pending_.end(), std::make_move_iterator(in_flight.begin()),
                  std::make_move_iterator(in_flight.end()));
}

namespace {

void sort_by_start(std::vector<TraceEvent>& events) {
  std::stable_sort(events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return a.start_us < b.start_us;
  });
}

}  // namespace

std::vector<TraceEvent> Trace::collect() {
  resolve_finished();
  std::vector<TraceEvent> all;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    all = events_;
  }
  sort_by_start(all);
  return all;
}

std::vector<TraceEvent> Trace::take() {
  resolve_finished();
  std::vector<TraceEvent> taken;
  {
    // One swap under the lock: a span added before it is taken, one added after stays.
    std::lock_guard<std::mutex> lock(mutex_);
    taken.swap(events_);
  }
  sort_by_start(taken);
  return taken;
}

std::size_t Trace::pending_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

void Trace::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
  pending_.clear();
}

}  // namespace towers
