// SPDX-License-Identifier: MIT
// HostStream: a simulated CUDA stream — a FIFO queue drained by one worker thread.
//
// launch() appends an op and returns; the worker runs ops one at a time in enqueue order,
// so two streams (two workers) run at the same time, like two CUDA streams. When an op
// throws, the stream remembers the first error and skips the remaining compute ops until
// synchronize() reports it (CUDA's errors are sticky too); event markers still complete,
// carrying the error to waiting streams, so nothing that waits on this stream can hang.
// The destructor drains the queue, then joins the worker. Errors never synchronized are
// printed to stderr rather than lost.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "runtime/stream.hpp"
#include "trace/trace.hpp"

namespace towers {

class HostCapture;
class HostDevice;

/// A stream of the host backend. Enqueue from one host thread at a time.
class HostStream final : public Stream {
 public:
  /// Stream `index` of `device`; starts its worker thread. Ops are traced into `trace`.
  HostStream(HostDevice& device, int index, Trace& trace);
  ~HostStream() override;

  Device& device() override;
  int index() const override { return index_; }
  void launch(std::string_view name, HostWork host, CudaWork cuda) override;
  void copy(void* dst, const void* src, std::size_t bytes, std::string_view name) override;
  void fill_zero(void* dst, std::size_t bytes, std::string_view name) override;
  void record(Event& event) override;
  void wait(Event& event) override;
  void synchronize() override;

  /// Graph capture (host_graph.hpp): while set, this stream's ops become nodes of `capture`.
  void set_capture(HostCapture* capture) { capture_ = capture; }
  /// The capture this stream belongs to, or null.
  HostCapture* capture() const { return capture_; }
  /// Enqueues `op`, which runs even after an error: it gets this stream's error (null if
  /// none) and returns the error the stream has after it. Graph replay uses it.
  void enqueue_always(std::function<std::exception_ptr(std::exception_ptr)> op);

 private:
  struct Op {
    std::function<void()> work;
    bool always_runs = false;  // markers and waits run even after an error
    bool traced = false;
    TraceEvent span;           // filled when traced: an op's span, or a record/wait marker
  };
  void enqueue(Op op);
  void enqueue_work(std::string_view name, std::function<void()> work);
  void worker_loop();
  void run(Op& op);

  HostDevice& device_;
  const int index_;
  Trace& trace_;

  std::mutex mutex_;
  std::condition_variable work_cv_;  // worker: new op or stop
  std::condition_variable idle_cv_;  // synchronize: queue drained
  std::deque<Op> queue_;
  bool running_op_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;  // first error since the last synchronize
  HostCapture* capture_ = nullptr;  // set while this stream is being captured (host thread only)
  std::thread worker_;        // last member: starts after everything above exists
};

}  // namespace towers
