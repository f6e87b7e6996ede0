// SPDX-License-Identifier: MIT
// Stream: an in-order queue of work on one device, as cudaStream_t.
//
// Everything enqueued on a stream runs in enqueue order, one op at a time; different
// streams run independently, also on the same device. Enqueueing returns at once, before
// the work runs, exactly like a kernel launch. An error inside the work is reported by
// the next synchronize() of that stream (host: the exception it threw; cuda: the CUDA
// error), never lost. A stream is used from one host thread at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace towers {

class Device;
class Event;
class KernelStampSink;

/// Handles a CUDA launch needs, passed to the cuda half of Stream::launch. Opaque here so
/// that headers outside kernels/cuda never include CUDA headers.
struct CudaLaunchContext {
  void* stream = nullptr;       ///< cudaStream_t
  /// The stream's cublasHandle_t, bound to `stream`, made on the first call: only streams
  /// that run a GEMM pay for a handle and its workspace, and for its destruction, which
  /// synchronizes the whole device. Empty in a context made by hand (tests).
  std::function<void*()> blas = {};
  int device = 0;               ///< CUDA device ordinal; already current during the call
  KernelStampSink* stamps = nullptr;  ///< where kernels stamp their run; null: untraced
};

/// The host half of an op: runs on the stream's worker thread, on host memory.
using HostWork = std::function<void()>;
/// The cuda half of an op: called at once on the enqueuing thread; it must only
/// *enqueue* (launch kernels, call cuBLAS) on ctx.stream, never wait.
using CudaWork = std::function<void(const CudaLaunchContext& ctx)>;

/// An in-order work queue on one device. Introduced in chapter 0.
class Stream {
 public:
  virtual ~Stream() = default;

  /// The device whose work this stream queues.
  virtual Device& device() = 0;
  /// Index of this stream among its device's streams, for traces ("s0", "s1", ...).
  virtual int index() const = 0;

  /// Tags later ops with a tower (for traces and their analysis); -1 means "no tower".
  void set_tower(int tower) { tower_ = tower; }
  /// The tower later ops are tagged with; -1: none.
  int tower() const { return tower_; }
  /// Prefixes the traced names of later ops, as tf.name_scope does: under "conv2" a
  /// "gemm" is traced as "conv2 gemm", so a trace tells the model's 14 products apart.
  /// Empty (the default): no prefix.
  void set_scope(std::string scope) { scope_ = std::move(scope); }
  /// `name` as the trace records it under the current scope.
  std::string traced_name(std::string_view name) const {
    return scope_.empty() ? std::string(name) : scope_ + " " + std::string(name);
  }

  /// Enqueues one op named `name`. The host backend queues `host` for this stream's
  /// worker thread; the cuda backend calls `cuda` now to launch kernels on this stream.
  /// Returns before the work has run. Traced as one span when tracing is on.
  virtual void launch(std::string_view name, HostWork host, CudaWork cuda) = 0;

  /// Enqueues an async copy of `bytes` bytes. Works for every pair of memories of this
  /// runtime: pinned host <-> device, within a device, and device <-> another device
  /// (peer; cudaMemcpyDefault under unified addressing). Use pinned host memory for
  /// host copies, as with cudaMemcpyAsync.
  virtual void copy(void* dst, const void* src, std::size_t bytes,
                    std::string_view name = "copy") = 0;

  /// Enqueues setting `bytes` bytes at `dst` to zero.
  virtual void fill_zero(void* dst, std::size_t bytes, std::string_view name = "zero") = 0;

  /// Enqueues a marker that completes `event` when reached (cudaEventRecord).
  virtual void record(Event& event) = 0;
  /// Makes later work on this stream wait for `event`'s most recent record
  /// (cudaStreamWaitEvent). Blocks neither the host nor other streams.
  virtual void wait(Event& event) = 0;

  /// Blocks the host until all work enqueued so far has finished. Rethrows the first
  /// error raised by that work (once; the stream stays usable afterwards).
  virtual void synchronize() = 0;

  /// Whether prepare_for_capture() (runtime/graph.hpp) ran for this stream: only a
  /// prepared stream may launch work inside a graph capture.
  bool prepared_for_capture() const { return prepared_for_capture_; }

 protected:
  int tower_ = -1;  ///< see set_tower()
  std::string scope_;  ///< see set_scope()
  /// Set by prepare_for_capture(), once its resources exist.
  bool prepared_for_capture_ = false;
  friend void prepare_for_capture(Stream& stream);
};

}  // namespace towers
