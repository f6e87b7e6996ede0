// SPDX-License-Identifier: MIT
#include "trace/trace.hpp"

#include <algorithm>

namespace towers {

Trace::Trace() : epoch_(std::chrono::steady_clock::now()) {}

double Trace::now_us() const {
  auto elapsed = std::chrono::steady_clock::now() - epoch_;
  return std::chrono::duration<double, std::micro>(elapsed).count();
}

void Trace::add(TraceEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

void Trace::add_pending(TraceEvent event, std::function<void(TraceEvent&)> resolve) {
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

std::vector<TraceEvent> Trace::collect() {
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending.swap(pending_);
  }
  // Resolving may call into CUDA (cudaEventElapsedTime), so it runs outside the lock.
  std::vector<TraceEvent> resolved;
  resolved.reserve(pending.size());
  for (auto& p : pending) {
    p.resolve(p.event);
    resolved.push_back(std::move(p.event));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  events_.insert(events_.end(), resolved.begin(), resolved.end());
  std::vector<TraceEvent> all = events_;
  std::stable_sort(all.begin(), all.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return a.start_us < b.start_us;
  });
  return all;
}

void Trace::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
  pending_.clear();
}

}  // namespace towers
