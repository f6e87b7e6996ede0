// SPDX-License-Identifier: MIT
// HostCapture and HostGraph: stream capture and graph replay for simulated devices.
//
// While a HostCapture is open, HostStreams that belong to it hand their ops to it instead
// of their workers: each op becomes a node that depends on the stream's frontier (the
// nodes its next op must follow; at first, the frontier of the event it joined through).
// A captured record stores the stream's frontier in the event; a captured wait adds the
// event's frontier to the waiting stream's, joining the stream to the capture if it was
// not in it. finish() checks that every stream joined back to the origin and yields the
// nodes; HostGraph replays them (see runtime/graph.hpp for the semantics).
//
// The capture is bound to the host thread that opened it (cudaStreamCaptureModeThreadLocal):
// refuse_if_capturing() throws CaptureError on that thread for what a graph cannot hold.
#pragma once

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/graph.hpp"
#include "runtime/stream.hpp"

namespace towers {

class HostEvent;
class HostStream;
class Trace;

/// Throws CaptureError naming `op` when the calling thread is capturing a graph.
void refuse_if_capturing(std::string_view op);

/// One recorded node: what GraphNode shows, plus the stream to replay on and the work.
struct HostGraphNode {
  GraphNode info;                ///< name, device, stream, tower, dependencies
  HostStream* stream = nullptr;  ///< the stream it was captured on; replays on its worker
  HostWork work;                 ///< the op's host half, run at every replay
};

/// A graph being recorded. Used from the capturing thread only.
class HostCapture {
 public:
  /// Opens a capture on `origin` for the calling thread; throws CaptureError if this
  /// thread is already capturing.
  explicit HostCapture(HostStream& origin);
  /// Closes the capture if finish() was not reached: every stream goes back to running
  /// its ops eagerly; events recorded in it forget that record.
  ~HostCapture();
  HostCapture(const HostCapture&) = delete;
  HostCapture& operator=(const HostCapture&) = delete;

  /// Adds op `name` of `stream` (which has joined) as a node after the stream's frontier.
  void add_node(HostStream& stream, std::string_view name, HostWork work);
  /// A record of `event` on `stream`: the event now stands for the stream's frontier.
  void record(HostStream& stream, HostEvent& event);
  /// A wait of `stream` on `event`, which was recorded in this capture: joins the stream
  /// if needed and adds the event's frontier to the stream's.
  void wait(HostStream& stream, HostEvent& event);

  /// Ends the capture. Throws CaptureError naming a stream that did not join back to the
  /// origin. Returns the nodes, each after its dependencies.
  std::vector<HostGraphNode> finish();

 private:
  struct Joined {
    HostStream* stream;
    std::vector<int> frontier;
  };
  Joined& joined(HostStream& stream);
  void close();

  std::vector<HostGraphNode> nodes_;
  std::vector<Joined> streams_;    // origin first, then in order of joining
  std::vector<HostEvent*> events_;  // recorded in this capture
  bool open_ = true;
};

/// A recorded graph of the host backend, replayed on the captured streams' workers.
class HostGraph final : public Graph {
 public:
  /// The nodes from HostCapture::finish(); launches are counted and traced in `trace`.
  HostGraph(std::vector<HostGraphNode> nodes, Trace& trace);
  void launch(Stream& stream) override;
  std::vector<GraphNode> nodes() const override;

 private:
  std::shared_ptr<const std::vector<HostGraphNode>> nodes_;  // shared with running replays
  Trace& trace_;
};

}  // namespace towers
