// SPDX-License-Identifier: MIT
// CudaGraph: capture_graph() on real GPUs — stream capture, instantiate, launch.
//
// The origin stream is put into capture mode (cudaStreamCaptureModeThreadLocal: this
// thread may not call cudaMalloc or synchronize meanwhile). Other streams join by waiting
// on events recorded in the capture, exactly as the chapter's code does.
//
// What a graph cannot hold is a CaptureError, as on the host backend (runtime/graph.hpp):
// the backend's synchronize, allocate and Event::query refuse it by name while this thread
// captures (refuse_if_capturing_cuda), and any other call that CUDA refuses during the
// capture (cudaErrorStreamCapture*: an unjoined stream, a wait on an event recorded
// outside) is turned into a CaptureError that keeps CUDA's message.
#include <cuda_runtime.h>

#include <string>
#include <unordered_map>

#include "base/cuda/check.hpp"
#include "runtime/cuda/cuda_capture.hpp"
#include "runtime/graph_backends.hpp"
#include "trace/trace.hpp"

namespace towers {
namespace {

thread_local bool t_capturing = false;  // this thread is inside capture_cuda_graph()

// Marks this thread as capturing for the lifetime of the object.
class CapturingHere {
 public:
  CapturingHere() {
    if (t_capturing) throw CaptureError("cannot capture a graph inside another capture on the same thread");
    t_capturing = true;
  }
  ~CapturingHere() { t_capturing = false; }
  CapturingHere(const CapturingHere&) = delete;
  CapturingHere& operator=(const CapturingHere&) = delete;
};

// Ends an abandoned capture so the stream is usable again, and clears the error it left,
// so that the next kernel launch's cudaGetLastError() does not report it as its own.
void abandon_capture(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(stream, &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
}

[[noreturn]] void throw_capture_error(const cuda::CudaError& error) {
  throw CaptureError(std::string("cannot capture a call that CUDA refuses while capturing a "
                                 "graph (a graph holds only work for the devices, and every "
                                 "stream that joined must join back):\n") +
                     error.what());
}

// The cudaStream_t behind `stream`: Stream::launch calls its cuda half at once on this
// thread with the handles. It makes no cuBLAS handle (only ctx.blas() would): that is
// prepare_for_capture's job, done for the origin just before the capture begins.
cudaStream_t handle_of(Stream& stream) {
  cudaStream_t handle = nullptr;
  stream.launch("stream handle", [] {}, [&](const CudaLaunchContext& ctx) {
    handle = static_cast<cudaStream_t>(ctx.stream);
  });
  return handle;
}

std::string node_type_name(cudaGraphNodeType type) {
  switch (type) {
    case cudaGraphNodeTypeKernel: return "kernel";
    case cudaGraphNodeTypeMemcpy: return "memcpy";
    case cudaGraphNodeTypeMemset: return "memset";
    case cudaGraphNodeTypeHost: return "host";
    case cudaGraphNodeTypeGraph: return "child graph";
    case cudaGraphNodeTypeEmpty: return "empty";
    case cudaGraphNodeTypeWaitEvent: return "wait event";
    case cudaGraphNodeTypeEventRecord: return "event record";
    default: return "node type " + std::to_string(static_cast<int>(type));
  }
}

// Tracing stays off while capturing: a traced op records a timing event pair, and events
// recorded inside a graph cannot be timed afterwards.
class TracePaused {
 public:
  explicit TracePaused(Trace& trace) : trace_(trace), was_enabled_(trace.enabled()) {
    trace_.set_enabled(false);
  }
  ~TracePaused() { trace_.set_enabled(was_enabled_); }
  TracePaused(const TracePaused&) = delete;
  TracePaused& operator=(const TracePaused&) = delete;

 private:
  Trace& trace_;
  bool was_enabled_;
};

class CudaGraph final : public Graph {
 public:
  CudaGraph(cudaGraph_t graph, cudaGraphExec_t exec) : graph_(graph), exec_(exec) {}
  ~CudaGraph() override {
    (void)cudaGraphExecDestroy(exec_);  // teardown: nothing useful to do on failure
    (void)cudaGraphDestroy(graph_);
  }

  void launch(Stream& stream) override {
    ++launches_;
    cudaGraphExec_t exec = exec_;
    // One traced op on `stream`: its span covers the whole graph's run.
    stream.launch("graph launch", [] {}, [exec](const CudaLaunchContext& ctx) {
      CUDA_CHECK(cudaGraphLaunch(exec, static_cast<cudaStream_t>(ctx.stream)));
    });
  }

  std::vector<GraphNode> nodes() const override {
    std::size_t count = 0;
    CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &count));
    std::vector<cudaGraphNode_t> handles(count);
    CUDA_CHECK(cudaGraphGetNodes(graph_, handles.data(), &count));
    // Kahn's order, so that every node comes after its dependencies.
    std::unordered_map<cudaGraphNode_t, std::vector<cudaGraphNode_t>> dependencies;
    for (cudaGraphNode_t node : handles) {
      std::size_t n = 0;
      CUDA_CHECK(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &n));
      std::vector<cudaGraphNode_t> deps(n);
      if (n > 0) CUDA_CHECK(cudaGraphNodeGetDependencies(node, deps.data(), nullptr, &n));
      dependencies[node] = deps;
    }
    std::unordered_map<cudaGraphNode_t, int> index;
    std::vector<GraphNode> ordered;
    while (ordered.size() < handles.size()) {
      const std::size_t before = ordered.size();
      for (cudaGraphNode_t node : handles) {
        if (index.count(node)) continue;
        bool ready = true;
        for (cudaGraphNode_t dep : dependencies[node]) ready = ready && index.count(dep) > 0;
        if (!ready) continue;
        cudaGraphNodeType type{};
        CUDA_CHECK(cudaGraphNodeGetType(node, &type));
        GraphNode out;
        out.name = node_type_name(type);
        for (cudaGraphNode_t dep : dependencies[node]) out.dependencies.push_back(index[dep]);
        index[node] = static_cast<int>(ordered.size());
        ordered.push_back(std::move(out));
      }
      if (ordered.size() == before) throw std::logic_error("CudaGraph: the graph has a cycle");
    }
    return ordered;
  }

 private:
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
};

}  // namespace

bool capturing_cuda_on_this_thread() { return t_capturing; }

void refuse_if_capturing_cuda(std::string_view op) {
  if (!t_capturing) return;
  throw CaptureError("cannot capture " + std::string(op) +
                     " while capturing a graph: a graph holds only work for the devices, "
                     "never a host wait, an allocation or a host read. Do it before "
                     "capture_graph() or after Graph::launch() (CUDA refuses it too)");
}

std::unique_ptr<Graph> capture_cuda_graph(Trace& trace, Stream& origin,
                                          const std::function<void()>& enqueue) {
  if (t_capturing) throw CaptureError("cannot capture a graph inside another capture on the same thread");
  prepare_for_capture(origin);  // before the capture: the origin is in every one
  TracePaused paused(trace);
  cudaStream_t stream = handle_of(origin);
  CUDA_CHECK(cudaSetDevice(origin.device().index()));
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    CapturingHere capturing;
    enqueue();
  } catch (const cuda::CudaError& error) {
    // Abandon the capture so the stream is usable again; the first error is the one to report.
    abandon_capture(stream);
    if (cuda::is_stream_capture_error(error.code())) throw_capture_error(error);
    throw;
  } catch (...) {
    abandon_capture(stream);
    throw;
  }
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (ended != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    try {
      CUDA_CHECK(ended);
    } catch (const cuda::CudaError& error) {
      // cudaErrorStreamCaptureUnjoined: a stream that joined was not joined back.
      if (cuda::is_stream_capture_error(error.code())) throw_capture_error(error);
      throw;
    }
  }
  cudaGraphExec_t exec = nullptr;
  try {
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  } catch (...) {
    (void)cudaGraphDestroy(graph);
    throw;
  }
  return std::make_unique<CudaGraph>(graph, exec);
}

}  // namespace towers
