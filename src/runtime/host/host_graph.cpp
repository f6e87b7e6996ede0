// SPDX-License-Identifier: MIT
#include "runtime/host/host_graph.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string>

#include "runtime/host/host_event.hpp"
#include "runtime/host/host_stream.hpp"
#include "runtime/graph_backends.hpp"
#include "trace/trace.hpp"

namespace towers {
namespace {

// The capture the calling thread has open, if any (cudaStreamCaptureModeThreadLocal).
thread_local HostCapture* t_capture = nullptr;

std::string stream_name(HostStream& stream) {
  return stream.device().name() + " stream " + std::to_string(stream.index());
}

// Adds `more` to the sorted set `frontier`.
void merge_into(std::vector<int>& frontier, const std::vector<int>& more) {
  frontier.insert(frontier.end(), more.begin(), more.end());
  std::sort(frontier.begin(), frontier.end());
  frontier.erase(std::unique(frontier.begin(), frontier.end()), frontier.end());
}

}  // namespace

void refuse_if_capturing(std::string_view op) {
  if (t_capture == nullptr) return;
  throw CaptureError("cannot capture " + std::string(op) +
                     " while capturing a graph: a graph holds only work for the devices, "
                     "never a host wait, an allocation or a host read. Do it before "
                     "capture_graph() or after Graph::launch() (CUDA refuses it too)");
}

HostCapture::HostCapture(HostStream& origin) {
  if (t_capture != nullptr) {
    throw CaptureError("cannot capture a graph inside another capture on the same thread");
  }
  if (origin.capture() != nullptr) {
    throw CaptureError("cannot capture on " + stream_name(origin) + ": it is already capturing");
  }
  t_capture = this;
  streams_.push_back(Joined{&origin, {}});
  origin.set_capture(this);
}

HostCapture::~HostCapture() {
  if (open_) close();
}

void HostCapture::close() {
  for (Joined& joined : streams_) joined.stream->set_capture(nullptr);
  for (HostEvent* event : events_) event->forget_capture(this);
  t_capture = nullptr;
  open_ = false;
}

HostCapture::Joined& HostCapture::joined(HostStream& stream) {
  for (Joined& joined : streams_) {
    if (joined.stream == &stream) return joined;
  }
  throw std::logic_error("HostCapture: " + stream_name(stream) + " has not joined the capture");
}

void HostCapture::add_node(HostStream& stream, std::string_view name, HostWork work) {
  Joined& on = joined(stream);
  HostGraphNode node;
  node.info = GraphNode{std::string(name), stream.device().index(), stream.index(), stream.tower(),
                        on.frontier};
  node.stream = &stream;
  node.work = std::move(work);
  nodes_.push_back(std::move(node));
  on.frontier = {static_cast<int>(nodes_.size()) - 1};  // the stream's next op follows this one
}

void HostCapture::record(HostStream& stream, HostEvent& event) {
  event.set_captured(this, joined(stream).frontier);
  if (std::find(events_.begin(), events_.end(), &event) == events_.end()) events_.push_back(&event);
}

void HostCapture::wait(HostStream& stream, HostEvent& event) {
  const std::vector<int> frontier = event.captured_frontier();
  for (Joined& joined : streams_) {
    if (joined.stream == &stream) {
      merge_into(joined.frontier, frontier);
      return;
    }
  }
  // A stream outside the capture waits on a captured event: it joins (the fork).
  streams_.push_back(Joined{&stream, frontier});
  stream.set_capture(this);
}

std::vector<HostGraphNode> HostCapture::finish() {
  // Everything the origin's frontier depends on, directly or not.
  std::vector<char> before_origin(nodes_.size(), 0);
  std::vector<int> todo = streams_.front().frontier;
  while (!todo.empty()) {
    const int node = todo.back();
    todo.pop_back();
    if (before_origin[node]) continue;
    before_origin[node] = 1;
    for (int dependency : nodes_[node].info.dependencies) todo.push_back(dependency);
  }
  for (const Joined& joined : streams_) {
    for (int node : joined.frontier) {
      if (!before_origin[node]) {
        throw CaptureError(
            "cannot end the capture: " + stream_name(*joined.stream) + " joined it but was not "
            "joined back to the origin stream (its last op '" + nodes_[node].info.name +
            "' is followed by nothing the origin waits for). Record an event on it after its "
            "last op and make the origin wait on that event (CUDA: cudaErrorStreamCaptureUnjoined)");
      }
    }
  }
  close();
  return std::move(nodes_);
}

namespace {

// One launch's progress: which nodes have run, and the first error.
class Replay {
 public:
  explicit Replay(std::size_t nodes) : done_(nodes, 0) {}

  void start() { finish_one(&started_, nullptr); }
  void complete(int node, std::exception_ptr error) { finish_one(&done_[node], error); }

  // Blocks until the launch has started (if `after_start`) and `nodes` have run; returns
  // the launch's first error, if any.
  std::exception_ptr wait_for(const std::vector<int>& nodes, bool after_start) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] {
      if (after_start && !started_) return false;
      return std::all_of(nodes.begin(), nodes.end(), [&](int n) { return done_[n] != 0; });
    });
    return error_;
  }

  std::exception_ptr wait_for_all() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return std::all_of(done_.begin(), done_.end(), [](char d) { return d; }); });
    return error_;
  }

 private:
  void finish_one(char* flag, std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);  // notify under the lock: waiters may free us
    *flag = 1;
    if (error && !error_) error_ = error;
    changed_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  char started_ = 0;
  std::vector<char> done_;
  std::exception_ptr error_;
};

}  // namespace

HostGraph::HostGraph(std::vector<HostGraphNode> nodes, Trace& trace)
    : nodes_(std::make_shared<const std::vector<HostGraphNode>>(std::move(nodes))), trace_(trace) {}

std::vector<GraphNode> HostGraph::nodes() const {
  std::vector<GraphNode> out;
  for (const HostGraphNode& node : *nodes_) out.push_back(node.info);
  return out;
}

void HostGraph::launch(Stream& stream) {
  auto& launch_stream = dynamic_cast<HostStream&>(stream);
  trace_.count_host_enqueue();  // the step's one host call
  ++launches_;
  auto replay = std::make_shared<Replay>(nodes_->size());
  const int step = trace_.step();
  // The graph starts after the work already on the launch stream.
  launch_stream.enqueue_always([replay](std::exception_ptr) {
    replay->start();
    return std::exception_ptr();
  });
  // Nodes go onto their own streams in capture order, so a stream's FIFO keeps its order;
  // a node blocks its worker only for dependencies captured on other streams.
  for (std::size_t i = 0; i < nodes_->size(); ++i) {
    const HostGraphNode& node = (*nodes_)[i];
    std::vector<int> elsewhere;
    for (int dependency : node.info.dependencies) {
      if ((*nodes_)[dependency].stream != node.stream) elsewhere.push_back(dependency);
    }
    const bool root = node.info.dependencies.empty();
    node.stream->enqueue_always([replay, nodes = nodes_, i, elsewhere = std::move(elsewhere), root,
                                 step, &trace = trace_](std::exception_ptr error) {
      const HostGraphNode& me = (*nodes)[i];
      std::exception_ptr upstream = replay->wait_for(elsewhere, root);
      if (!error) error = upstream;
      if (!error) {
        const double start_us = trace.enabled() ? trace.now_us() : 0;
        try {
          me.work();
        } catch (...) {
          error = std::current_exception();
        }
        if (trace.enabled()) {
          trace.add(TraceEvent{me.info.device, me.info.stream, me.info.tower, step, me.info.name,
                               start_us, trace.now_us()});
        }
      }
      replay->complete(static_cast<int>(i), error);
      return error;
    });
  }
  // Later work on the launch stream waits for the whole graph, and inherits its error.
  launch_stream.enqueue_always([replay](std::exception_ptr) { return replay->wait_for_all(); });
}

}  // namespace towers

namespace towers {

std::unique_ptr<Graph> capture_host_graph(Trace& trace, Stream& origin,
                                          const std::function<void()>& enqueue) {
  prepare_for_capture(origin);  // before the capture: the origin is in every one
  HostCapture capture(dynamic_cast<HostStream&>(origin));
  enqueue();  // if it throws, ~HostCapture abandons the capture
  return std::make_unique<HostGraph>(capture.finish(), trace);
}

}  // namespace towers
