// SPDX-License-Identifier: MIT
#include "runtime/host/host_stream.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "runtime/graph_backends.hpp"
#include "runtime/host/host_device.hpp"
#include "runtime/host/host_event.hpp"
#include "runtime/host/host_graph.hpp"

namespace towers {

HostStream::HostStream(HostDevice& device, int index, Trace& trace)
    : device_(device), index_(index), trace_(trace), worker_([this] { worker_loop(); }) {
  device_.register_stream(this);
}

HostStream::~HostStream() {
  device_.unregister_stream(this);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_one();
  worker_.join();  // the worker drains the queue before it exits
  if (error_) {
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "towers: error on %s stream %d was never synchronized: %s\n",
                   device_.name().c_str(), index_, e.what());
    } catch (...) {
      std::fprintf(stderr, "towers: unknown error on a stream was never synchronized\n");
    }
  }
}

Device& HostStream::device() { return device_; }

void HostStream::enqueue(Op op) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(op));
  }
  work_cv_.notify_one();
}

void HostStream::enqueue_work(std::string_view name, std::function<void()> work) {
  if (capture_ != nullptr) {
    capture_->add_node(*this, name, std::move(work));  // a node of the graph, not run now
    return;
  }
  trace_.count_host_enqueue();
  Op op;
  op.work = std::move(work);
  // Tracing off costs one relaxed load: no clock reads, no strings.
  if (trace_.enabled()) {
    op.traced = true;
    op.span = TraceEvent{device_.index(), index_, tower(), trace_.step(), traced_name(name), 0, 0};
  }
  enqueue(std::move(op));
}

void HostStream::launch(std::string_view name, HostWork host, CudaWork /*cuda*/) {
  // As on cuda, where such a stream would make its cuBLAS handle inside the capture:
  // refused, so that a forgotten prepare_for_capture() fails without a GPU too.
  if (capture_ != nullptr && !prepared_for_capture()) {
    throw CaptureError(unprepared_stream_message(
        "launch '" + traced_name(name) + "'", device_.name() + " stream " + std::to_string(index_)));
  }
  enqueue_work(name, std::move(host));
}

void HostStream::copy(void* dst, const void* src, std::size_t bytes, std::string_view name) {
  const HostLink* link = device_.link();
  const double link_seconds = link != nullptr ? link->copy_seconds(dst, src, bytes) : 0.0;
  if (link_seconds == 0) {
    enqueue_work(name, [=] { std::memcpy(dst, src, bytes); });
    return;
  }
  // A peer copy over the simulated link (link_model.hpp): the data moves at memory speed,
  // then the worker sleeps, holding no core, until the link would have delivered it.
  enqueue_work(name, [=] {
    const auto delivered = std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(link_seconds));
    std::memcpy(dst, src, bytes);
    std::this_thread::sleep_until(delivered);
  });
}

void HostStream::fill_zero(void* dst, std::size_t bytes, std::string_view name) {
  enqueue_work(name, [=] { std::memset(dst, 0, bytes); });
}

void HostStream::record(Event& event) {
  auto& host_event = dynamic_cast<HostEvent&>(event);
  if (capture_ != nullptr) {
    capture_->record(*this, host_event);  // no node: an edge for whoever waits on it
    return;
  }
  trace_.count_host_enqueue();
  const std::uint64_t generation = host_event.next_generation();
  Op op;
  op.always_runs = true;
  if (trace_.enabled()) {
    // The record marker: which record of which event, stamped when the stream reaches it.
    op.traced = true;
    op.span = event_marker(TraceKind::kRecord, device_.index(), index_, tower(), trace_.step(),
                           event.trace_id(), generation);
  }
  op.work = [this, &host_event, generation] {
    // Runs on this stream's worker, which alone writes error_ while ops run.
    host_event.complete(generation, error_);
  };
  enqueue(std::move(op));
}

void HostStream::wait(Event& event) {
  auto& host_event = dynamic_cast<HostEvent&>(event);
  HostCapture* recorded_in = host_event.captured_in();
  if (capture_ != nullptr || recorded_in != nullptr) {
    if (recorded_in == nullptr || (capture_ != nullptr && recorded_in != capture_)) {
      throw CaptureError("cannot capture Stream::wait on " + device_.name() + " stream " +
                         std::to_string(index_) +
                         ": the event was last recorded outside this capture, and a graph "
                         "cannot wait for work outside it. Record the event inside the "
                         "captured step (CUDA: cudaErrorStreamCaptureIsolation)");
    }
    recorded_in->wait(*this, host_event);  // joins this stream to the capture if needed
    return;
  }
  trace_.count_host_enqueue();
  const std::uint64_t generation = host_event.recorded_generation();
  if (generation == 0) return;  // never recorded: nothing to wait for, as in CUDA
  Op op;
  op.always_runs = true;
  // The wait marker carries the number of the record it waits for (its generation).
  if (trace_.enabled()) {
    op.traced = true;
    op.span = event_marker(TraceKind::kWait, device_.index(), index_, tower(), trace_.step(),
                           event.trace_id(), generation);
  }
  op.work = [this, &host_event, generation] {
    std::exception_ptr upstream = host_event.wait_for(generation);
    if (upstream && !error_) error_ = upstream;
  };
  enqueue(std::move(op));
}

void HostStream::synchronize() {
  refuse_if_capturing("Stream::synchronize on " + device_.name() + " stream " + std::to_string(index_));
  std::unique_lock<std::mutex> lock(mutex_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !running_op_; });
  if (error_) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void HostStream::enqueue_always(std::function<std::exception_ptr(std::exception_ptr)> op) {
  Op always;
  always.always_runs = true;
  always.work = [this, op = std::move(op)] {
    // Runs on this stream's worker, which alone writes error_ while ops run.
    std::exception_ptr error = op(error_);
    if (error && !error_) error_ = error;
  };
  enqueue(std::move(always));
}

void HostStream::run(Op& op) {
  // error_ is read here without the lock: only this worker writes it while ops run, and
  // synchronize() touches it only when the worker is idle (under the lock).
  if (error_ && !op.always_runs) return;
  if (op.traced) op.span.start_us = trace_.now_us();
  try {
    op.work();
  } catch (...) {
    if (!error_) error_ = std::current_exception();
  }
  if (op.traced) {
    op.span.end_us = trace_.now_us();
    if (op.span.kind == TraceKind::kRecord) {
      // The instant the stream reached the record: stamped before complete() woke the
      // waiters, so that no wait on it is ever stamped earlier.
      op.span.end_us = op.span.start_us;
    } else if (op.span.kind == TraceKind::kWait) {
      // The instant the wait was over; it began when the stream reached it.
      op.span.waited_from_us = op.span.start_us;
      op.span.start_us = op.span.end_us;
    }
    trace_.add(std::move(op.span));
  }
}

void HostStream::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything has run
    Op op = std::move(queue_.front());
    queue_.pop_front();
    running_op_ = true;
    lock.unlock();
    run(op);
    lock.lock();
    running_op_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace towers
