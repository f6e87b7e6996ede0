// SPDX-License-Identifier: MIT
#include "runtime/host/host_event.hpp"

#include <chrono>
#include <stdexcept>
#include <utility>

#include "runtime/host/host_graph.hpp"

namespace towers {
namespace {

double steady_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::uint64_t HostEvent::next_generation() {
  std::lock_guard<std::mutex> lock(mutex_);
  captured_in_ = nullptr;  // the last record is eager again
  return ++recorded_;
}

void HostEvent::set_captured(HostCapture* capture, std::vector<int> frontier) {
  std::lock_guard<std::mutex> lock(mutex_);
  captured_in_ = capture;
  captured_frontier_ = std::move(frontier);
}

HostCapture* HostEvent::captured_in() {
  std::lock_guard<std::mutex> lock(mutex_);
  return captured_in_;
}

std::vector<int> HostEvent::captured_frontier() {
  std::lock_guard<std::mutex> lock(mutex_);
  return captured_frontier_;
}

void HostEvent::forget_capture(HostCapture* capture) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (captured_in_ == capture) captured_in_ = nullptr;
}

std::uint64_t HostEvent::recorded_generation() {
  std::lock_guard<std::mutex> lock(mutex_);
  return recorded_;
}

void HostEvent::complete(std::uint64_t generation, std::exception_ptr stream_error) {
  // Notify while holding the lock: a host thread woken by synchronize() may destroy this
  // event as soon as it returns, so the notify must finish before it can.
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation > completed_) {
    completed_ = generation;
    completed_at_ms_ = steady_ms();
    error_ = stream_error;
  }
  completed_cv_.notify_all();
}

std::exception_ptr HostEvent::wait_for(std::uint64_t generation) {
  std::unique_lock<std::mutex> lock(mutex_);
  completed_cv_.wait(lock, [&] { return completed_ >= generation; });
  return error_;
}

bool HostEvent::query() {
  refuse_if_capturing("Event::query");
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ >= recorded_;
}

void HostEvent::synchronize() {
  refuse_if_capturing("Event::synchronize");
  std::exception_ptr error = wait_for(recorded_generation());
  if (error) std::rethrow_exception(error);
}

float HostEvent::elapsed_ms_since(Event& start_event) {
  auto* start = dynamic_cast<HostEvent*>(&start_event);
  if (start == nullptr) throw std::invalid_argument("elapsed_ms_since: events of two backends");
  double start_ms = 0, end_ms = 0;
  {
    std::lock_guard<std::mutex> lock(start->mutex_);
    if (start->completed_ == 0 || start->completed_ < start->recorded_) {
      throw std::logic_error("elapsed_ms_since: the start event has not completed");
    }
    start_ms = start->completed_at_ms_;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_ == 0 || completed_ < recorded_) {
      throw std::logic_error("elapsed_ms_since: the end event has not completed");
    }
    end_ms = completed_at_ms_;
  }
  return static_cast<float>(end_ms - start_ms);
}

}  // namespace towers
