// SPDX-License-Identifier: MIT
// Graph: one training step captured once and replayed, as cudaGraph_t / cudaGraphExec_t.
//
// capture_graph(runtime, origin, enqueue) calls `enqueue` once. Everything it enqueues on
// `origin`, and on every stream that joins by waiting on an event recorded inside the
// capture, becomes a node of the graph instead of running; the dependencies between nodes
// are each stream's order plus the captured event waits (CUDA's stream capture). Every
// stream that joined must be joined back to `origin` (origin waits on an event recorded
// on it after its last op) before `enqueue` returns.
//
// Graph::launch(stream) then enqueues the whole graph with one host call: its nodes run
// after the work already on `stream`, each as soon as its dependencies have run, and work
// enqueued on `stream` later waits for all of them. Captured event records and waits make
// no nodes; they only add dependencies (and the events are not recorded by a launch).
//
// What a graph cannot hold is refused while capturing, naming the op, as CUDA does:
// making the host wait (any synchronize, Event::query), allocating memory, and waiting on
// an event recorded outside the capture. Host reads of device memory need a synchronize,
// so they are refused with it. Inputs therefore come through fixed buffers that the host
// refills before each launch and the graph reads (chapter 7).
//
// A stream makes some of what it needs on its first use: on cuda its cuBLAS handle and
// workspace (cublasCreate, cudaMalloc), which a capture cannot hold either. So every
// stream that launches work inside a capture must be prepared before it begins
// (prepare_for_capture): capture_graph() prepares `origin` itself; a stream that joins
// does so inside the capture, too late, so whoever owns it prepares it first (chapter 7:
// TowerTraining::prepare_for_capture, for the tower streams). Both backends refuse a
// launch on a stream that joined unprepared (copies, fills, records and waits need nothing
// and are captured as they are), so the mistake shows on the host backend too.
//
// Host backend: a recorded graph replayed on the simulated devices' stream workers, each
// node on the worker of the stream it was captured on, traced like an eager op. Cuda:
// cudaStreamBeginCapture/EndCapture, cudaGraphInstantiate, cudaGraphLaunch; tracing is off
// while capturing (a timing event cannot be read back from inside a graph), and a launch is
// traced as one span. Capture from one host thread; launch from one host thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/runtime.hpp"

namespace towers {

/// One node of a graph, for walking its structure. Introduced in chapter 7.
struct GraphNode {
  std::string name;               ///< the op's name ("conv1", "copy images"); cuda: the node type
  int device = -1;                ///< device the op runs on; -1 where the backend does not say (cuda)
  int stream = -1;                ///< stream it was captured on; -1 on cuda
  int tower = -1;                 ///< tower it belongs to; -1: none, or unknown (cuda)
  std::vector<int> dependencies;  ///< indices of the nodes that must run before it
};

/// A captured step, ready to launch (cudaGraphExec_t). Introduced in chapter 7.
/// Destroy it only after its launches have finished (synchronize first).
class Graph {
 public:
  virtual ~Graph() = default;
  /// Enqueues one replay of the whole graph on `stream` with one host call
  /// (cudaGraphLaunch). Returns at once.
  virtual void launch(Stream& stream) = 0;
  /// The nodes, in an order where every node comes after its dependencies.
  virtual std::vector<GraphNode> nodes() const = 0;
  /// How many times launch() has been called.
  int launches() const { return launches_; }

 protected:
  int launches_ = 0;  ///< counted by launch()
};

/// Thrown when the captured code does what a graph cannot hold; says which op and why.
class CaptureError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Captures what `enqueue` enqueues on `origin` and on the streams that join it (see the
/// file comment) and returns the graph, instantiated. Prepares `origin` first
/// (prepare_for_capture); prepare every stream that will join before calling it. Throws
/// CaptureError for a refused op, a launch on a stream that joined unprepared, or a stream
/// left unjoined; the capture is then abandoned and the streams are usable.
std::unique_ptr<Graph> capture_graph(Runtime& runtime, Stream& origin,
                                     const std::function<void()>& enqueue);

/// Makes now what `stream` would otherwise make on its first use (on cuda its cuBLAS
/// handle and workspace: an allocation, which a capture cannot hold) and marks it
/// prepared, so that it may launch work inside a capture. Enqueues one empty op; call it
/// outside any capture, for every stream that will join one. Calling it again does nothing.
void prepare_for_capture(Stream& stream);

}  // namespace towers
