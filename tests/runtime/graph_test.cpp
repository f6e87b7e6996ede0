// SPDX-License-Identifier: MIT
// Graphs: a captured step replays exactly what the eager step does, reads its inputs anew
// at every launch, refuses what a graph cannot hold, and can be walked node by node.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "runtime/graph.hpp"
#include "trace/trace.hpp"

namespace towers {
namespace {

constexpr int kN = 8;  // floats per branch

// Two branches (one stream on each of two devices) fork from an origin stream on device 0,
// each copies its slice of a pinned input in and transforms it (x -> 2x + branch), then
// the origin joins both, adds them into an accumulator, and copies it out.
struct TwoBranchStep {
  explicit TwoBranchStep(Runtime& rt, bool with_math) : with_math_(with_math) {
    Device& d0 = rt.device(0);
    origin = d0.create_stream();
    fork = d0.create_event();
    input = d0.allocate_pinned(2 * kN * sizeof(float));
    output = d0.allocate_pinned(kN * sizeof(float));
    acc = d0.allocate(kN * sizeof(float));
    for (int b = 0; b < 2; ++b) {
      Device& d = rt.device(b);
      branch.push_back(d.create_stream());
      branch.back()->set_tower(b);
      done.push_back(d.create_event());
      slice.push_back(d.allocate(kN * sizeof(float)));
      received.push_back(d0.allocate(kN * sizeof(float)));
      prepare_for_capture(*branch.back());  // it launches work inside the capture
    }
    origin->fill_zero(acc.data(), kN * sizeof(float));
    origin->synchronize();
  }

  void set_input(float base) {
    for (int i = 0; i < 2 * kN; ++i) input.as<float>()[i] = base + static_cast<float>(i);
  }

  // The step, as a chapter's loop would enqueue it.
  void enqueue() {
    origin->record(*fork);
    for (int b = 0; b < 2; ++b) {
      Stream& s = *branch[b];
      s.wait(*fork);  // joins the capture, when capturing
      s.copy(slice[b].data(), input.as<float>() + b * kN, kN * sizeof(float), "copy in");
      if (with_math_) {
        float* x = slice[b].as<float>();
        // Slow on purpose: a sum that does not wait for the branches reads stale values.
        s.launch("transform",
                 [x, b] {
                   std::this_thread::sleep_for(std::chrono::milliseconds(5));
                   for (int i = 0; i < kN; ++i) x[i] = 2 * x[i] + b;
                 },
                 [](const CudaLaunchContext&) {});
      }
      s.copy(received[b].data(), slice[b].data(), kN * sizeof(float), "send");
      s.record(*done[b]);
    }
    for (int b = 0; b < 2; ++b) origin->wait(*done[b]);  // where the branches meet
    if (with_math_) {
      float* a = acc.as<float>();
      const float* r0 = received[0].as<float>();
      const float* r1 = received[1].as<float>();
      origin->launch("sum", [=] { for (int i = 0; i < kN; ++i) a[i] += r0[i] + r1[i]; },
                     [](const CudaLaunchContext&) {});
    } else {
      origin->copy(acc.data(), received[1].data(), kN * sizeof(float), "sum");
    }
    origin->copy(output.data(), acc.data(), kN * sizeof(float), "copy out");
  }

  std::vector<float> result() const {
    return std::vector<float>(output.as<float>(), output.as<float>() + kN);
  }

  bool with_math_;
  std::unique_ptr<Stream> origin;
  std::unique_ptr<Event> fork;
  std::vector<std::unique_ptr<Stream>> branch;
  std::vector<std::unique_ptr<Event>> done;
  Buffer input, output, acc;
  std::vector<Buffer> slice, received;
};

RuntimeOptions host_devices(int n) {
  RuntimeOptions options;
  options.backend = BackendChoice::kHost;
  options.devices = n;
  return options;
}

// Three steps eagerly, three launches of the captured step, from the same inputs.
TEST(HostGraph, ReplayProducesExactlyWhatTheEagerStepsProduce) {
  auto rt = Runtime::create(host_devices(2));
  TwoBranchStep eager(*rt, true), graphed(*rt, true);
  std::vector<std::vector<float>> expected, got;
  for (int step = 0; step < 3; ++step) {
    eager.set_input(10.0f * step);
    eager.enqueue();
    rt->synchronize();
    expected.push_back(eager.result());
  }
  auto graph = capture_graph(*rt, *graphed.origin, [&] { graphed.enqueue(); });
  for (int step = 0; step < 3; ++step) {
    graphed.set_input(10.0f * step);  // the fixed input buffer, refilled before each launch
    graph->launch(*graphed.origin);
    graphed.origin->synchronize();
    got.push_back(graphed.result());
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(graph->launches(), 3);
}

TEST(HostGraph, ReplayReadsTheInputsAsTheyAreAtLaunch) {
  auto rt = Runtime::create(host_devices(2));
  TwoBranchStep step(*rt, true);
  step.set_input(0.0f);
  auto graph = capture_graph(*rt, *step.origin, [&] { step.enqueue(); });
  step.set_input(100.0f);  // changed after the capture: the launch must see 100 + i
  graph->launch(*step.origin);
  step.origin->synchronize();
  // acc[i] = (2 (100 + i) + 0) + (2 (100 + kN + i) + 1)
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(step.result()[i], 2.0f * (100 + i) + 2.0f * (100 + kN + i) + 1) << "at " << i;
  }
}

TEST(HostGraph, CapturingRunsNothing) {
  auto rt = Runtime::create(host_devices(2));
  TwoBranchStep step(*rt, true);
  step.set_input(1.0f);
  std::fill(step.output.as<float>(), step.output.as<float>() + kN, -1.0f);
  auto graph = capture_graph(*rt, *step.origin, [&] { step.enqueue(); });
  rt->synchronize();
  EXPECT_EQ(step.result(), std::vector<float>(kN, -1.0f)) << "a captured op ran during capture";
}

TEST(HostGraph, StructureIsTwoBranchesJoiningAtTheSum) {
  auto rt = Runtime::create(host_devices(2));
  TwoBranchStep step(*rt, true);
  auto graph = capture_graph(*rt, *step.origin, [&] { step.enqueue(); });
  const std::vector<GraphNode> nodes = graph->nodes();
  // copy in, transform, send on each branch; sum, copy out on the origin.
  ASSERT_EQ(nodes.size(), 8u);
  std::vector<int> last_of_branch(2, -1);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const GraphNode& node = nodes[i];
    for (int dependency : node.dependencies) EXPECT_LT(dependency, static_cast<int>(i));
    if (node.tower < 0) continue;
    // A branch is a chain: its first node depends on nothing (the fork had no nodes yet),
    // every other one only on the node before it on the same branch.
    if (last_of_branch[node.tower] < 0) {
      EXPECT_TRUE(node.dependencies.empty()) << node.name;
    } else {
      EXPECT_EQ(node.dependencies, std::vector<int>{last_of_branch[node.tower]}) << node.name;
    }
    EXPECT_EQ(node.device, node.tower);
    last_of_branch[node.tower] = static_cast<int>(i);
  }
  auto sum = std::find_if(nodes.begin(), nodes.end(), [](const GraphNode& n) { return n.name == "sum"; });
  ASSERT_NE(sum, nodes.end());
  std::vector<int> joined = sum->dependencies;
  std::sort(joined.begin(), joined.end());
  EXPECT_EQ(joined, (std::vector<int>{last_of_branch[0], last_of_branch[1]}));
  EXPECT_EQ(nodes.back().name, "copy out");
  EXPECT_EQ(nodes.back().dependencies, std::vector<int>{static_cast<int>(sum - nodes.begin())});
}

TEST(HostGraph, ALaunchIsOneHostCallAndTracesEveryNode) {
  auto rt = Runtime::create(host_devices(2));
  TwoBranchStep step(*rt, true);
  auto graph = capture_graph(*rt, *step.origin, [&] { step.enqueue(); });
  rt->trace().set_enabled(true);
  rt->trace().set_step(7);
  const auto before = rt->trace().host_enqueues();
  graph->launch(*step.origin);
  EXPECT_EQ(rt->trace().host_enqueues() - before, 1u);
  rt->synchronize();
  std::vector<TraceEvent> spans = rt->trace().collect();
  ASSERT_EQ(spans.size(), graph->nodes().size());
  int transforms = 0;
  for (const TraceEvent& span : spans) {
    EXPECT_EQ(span.step, 7);
    if (span.name == "transform") {
      ++transforms;
      EXPECT_EQ(span.device, span.tower);
    }
  }
  EXPECT_EQ(transforms, 2);
}

TEST(HostGraph, AStreamThatNeverJoinedRunsEagerly) {
  auto rt = Runtime::create(host_devices(1));
  Device& d = rt->device(0);
  auto origin = d.create_stream(), outsider = d.create_stream();
  Buffer value = d.allocate_pinned(sizeof(int)), dev = d.allocate(sizeof(int));
  *value.as<int>() = 5;
  auto graph = capture_graph(*rt, *origin, [&] {
    outsider->copy(dev.data(), value.data(), sizeof(int));  // not in the capture: runs now
    origin->fill_zero(dev.data(), sizeof(int));
  });
  outsider->synchronize();
  EXPECT_EQ(graph->nodes().size(), 1u);
  *value.as<int>() = 0;
  outsider->copy(value.data(), dev.data(), sizeof(int));
  outsider->synchronize();
  EXPECT_EQ(*value.as<int>(), 5);
}

// Each op a graph cannot hold, and the name its error must give.
struct Forbidden {
  std::string op;
  std::function<void(Runtime&, Stream&, Event&)> call;
};

class RefusedInCapture : public ::testing::TestWithParam<int> {};

const std::vector<Forbidden>& forbidden_ops() {
  static const std::vector<Forbidden> ops = {
      {"Stream::synchronize", [](Runtime&, Stream& s, Event&) { s.synchronize(); }},
      {"Device::synchronize", [](Runtime& rt, Stream&, Event&) { rt.device(0).synchronize(); }},
      {"Device::synchronize", [](Runtime& rt, Stream&, Event&) { rt.synchronize(); }},
      {"Device::allocate on", [](Runtime& rt, Stream&, Event&) { rt.device(0).allocate(64); }},
      {"Device::allocate_pinned", [](Runtime& rt, Stream&, Event&) { rt.device(0).allocate_pinned(64); }},
      {"Event::query", [](Runtime&, Stream&, Event& e) { e.query(); }},
      {"Event::synchronize", [](Runtime&, Stream&, Event& e) { e.synchronize(); }},
  };
  return ops;
}

// Captures a zeroing of `dev` on `origin` followed by `forbidden`'s call; returns the
// CaptureError's message, or nothing when the capture was accepted.
std::optional<std::string> capture_refusal(Runtime& rt, Stream& origin, const Forbidden& forbidden,
                                           Buffer& dev, Event& event) {
  try {
    capture_graph(rt, origin, [&] {
      origin.fill_zero(dev.data(), sizeof(int));
      forbidden.call(rt, origin, event);
    });
    return std::nullopt;
  } catch (const CaptureError& e) {
    return std::string(e.what());
  }
}

// What comes back of a 3 sent from `pinned` to `dev` and back on `stream`, `pinned` zeroed
// in between: 3 when the stream runs its work eagerly.
int round_trip(Stream& stream, Buffer& dev, Buffer& pinned) {
  *pinned.as<int>() = 3;
  stream.copy(dev.data(), pinned.data(), sizeof(int));
  stream.fill_zero(pinned.data(), sizeof(int));
  stream.copy(pinned.data(), dev.data(), sizeof(int));
  stream.synchronize();
  return *pinned.as<int>();
}

TEST_P(RefusedInCapture, FailsNamingTheOpAndLeavesTheStreamUsable) {
  const Forbidden& forbidden = forbidden_ops()[GetParam()];
  auto rt = Runtime::create(host_devices(1));
  auto origin = rt->device(0).create_stream();
  auto event = rt->device(0).create_event();
  Buffer dev = rt->device(0).allocate(sizeof(int));
  Buffer pinned = rt->device(0).allocate_pinned(sizeof(int));
  const auto message = capture_refusal(*rt, *origin, forbidden, dev, *event);
  ASSERT_TRUE(message.has_value()) << forbidden.op << " was captured";
  EXPECT_NE(message->find("cannot capture " + forbidden.op), std::string::npos) << *message;
  // The capture was abandoned: the stream runs eagerly again.
  EXPECT_EQ(round_trip(*origin, dev, pinned), 3);
}

INSTANTIATE_TEST_SUITE_P(Ops, RefusedInCapture,
                         ::testing::Range(0, static_cast<int>(forbidden_ops().size())));

// Captures on `origin` a fork onto `branch` whose work (an op named "orphan") the origin
// never waits for, and returns the CaptureError's message ("" and a failure if accepted).
std::string capture_an_unjoined_branch(Runtime& rt, Stream& origin, Stream& branch, void* dev) {
  auto fork = origin.device().create_event();
  try {
    capture_graph(rt, origin, [&] {
      origin.record(*fork);
      branch.wait(*fork);
      branch.fill_zero(dev, sizeof(int), "orphan");  // the origin never waits for it
    });
  } catch (const CaptureError& e) {
    return e.what();
  }
  ADD_FAILURE() << "an unjoined branch was accepted";
  return "";
}

TEST(HostGraph, AStreamLeftUnjoinedIsRefused) {
  auto rt = Runtime::create(host_devices(1));
  Device& d = rt->device(0);
  auto origin = d.create_stream(), branch = d.create_stream();
  Buffer dev = d.allocate(sizeof(int));
  const std::string error = capture_an_unjoined_branch(*rt, *origin, *branch, dev.data());
  EXPECT_NE(error.find("not joined back"), std::string::npos) << error;
  EXPECT_NE(error.find("orphan"), std::string::npos) << error;
}

TEST(HostGraph, WaitingOnAnEventRecordedOutsideIsRefused) {
  auto rt = Runtime::create(host_devices(1));
  Device& d = rt->device(0);
  auto outside = d.create_event();  // outlives the streams, whose workers complete it
  auto origin = d.create_stream(), other = d.create_stream();
  other->record(*outside);
  EXPECT_THROW(capture_graph(*rt, *origin, [&] { origin->wait(*outside); }), CaptureError);
}

// Chapter 7's old mistake, caught without a GPU: a stream that joins the capture and
// launches work there without prepare_for_capture() is refused (on a GPU it would make its
// cuBLAS handle inside the capture, an allocation CUDA refuses), naming the op and the
// remedy; the capture is abandoned, and once prepared the same step is captured.
TEST(HostGraph, ALaunchOnAStreamThatJoinedUnpreparedIsRefused) {
  auto rt = Runtime::create(host_devices(1));
  Device& d = rt->device(0);
  auto origin = d.create_stream(), branch = d.create_stream();
  auto fork = d.create_event(), done = d.create_event();
  int runs = 0;
  auto step = [&] {
    origin->record(*fork);
    branch->wait(*fork);  // joins the capture
    branch->launch("axpy", [&runs] { ++runs; }, [](const CudaLaunchContext&) {});
    branch->record(*done);
    origin->wait(*done);
  };
  try {
    capture_graph(*rt, *origin, step);
    FAIL() << "a launch on an unprepared stream that joined the capture was accepted";
  } catch (const CaptureError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("cannot capture launch 'axpy' on host:0 stream 1"), std::string::npos) << message;
    EXPECT_NE(message.find("prepare_for_capture()"), std::string::npos) << message;
  }
  EXPECT_FALSE(branch->prepared_for_capture());
  prepare_for_capture(*branch);
  EXPECT_TRUE(branch->prepared_for_capture());
  auto graph = capture_graph(*rt, *origin, step);
  EXPECT_EQ(graph->nodes().size(), 1u);
  graph->launch(*origin);
  rt->synchronize();
  EXPECT_EQ(runs, 1) << "the launch ran at capture time, or not in the replay";
}

// What a stream makes on first use only a launch needs: an unprepared stream may join with
// copies and fills, and is captured as it is (CUDA captures those without a handle too).
TEST(HostGraph, AnUnpreparedStreamMayJoinWithCopiesAndFills) {
  auto rt = Runtime::create(host_devices(1));
  Device& d = rt->device(0);
  auto origin = d.create_stream(), branch = d.create_stream();
  auto fork = d.create_event(), done = d.create_event();
  Buffer dev = d.allocate(sizeof(int));
  auto graph = capture_graph(*rt, *origin, [&] {
    origin->record(*fork);
    branch->wait(*fork);
    branch->fill_zero(dev.data(), sizeof(int));
    branch->copy(dev.data(), dev.data(), sizeof(int));
    branch->record(*done);
    origin->wait(*done);
  });
  EXPECT_EQ(graph->nodes().size(), 2u);
}

// The origin is in every capture, so capture_graph() prepares it: chapter 7 never
// prepared its meeting stream, whose average (cuBLAS axpy and scal on a GPU) runs inside
// the capture. Fails where capture_graph() leaves the origin unprepared.
TEST(HostGraph, CaptureGraphPreparesItsOrigin) {
  auto rt = Runtime::create(host_devices(1));
  auto meet = rt->device(0).create_stream();
  ASSERT_FALSE(meet->prepared_for_capture());
  int runs = 0;
  auto graph = capture_graph(*rt, *meet, [&] {
    meet->launch("average", [&runs] { ++runs; }, [](const CudaLaunchContext&) {});
  });
  EXPECT_TRUE(meet->prepared_for_capture());
  graph->launch(*meet);
  meet->synchronize();
  EXPECT_EQ(runs, 1);
}

TEST(HostGraph, AnErrorInANodeReachesTheLaunchStream) {
  auto rt = Runtime::create(host_devices(1));
  auto origin = rt->device(0).create_stream();
  auto graph = capture_graph(*rt, *origin, [&] {
    origin->launch("fails", [] { throw std::runtime_error("node failed"); },
                   [](const CudaLaunchContext&) {});
  });
  graph->launch(*origin);
  EXPECT_THROW(origin->synchronize(), std::runtime_error);
}

// Copies only, so the same step runs on GPUs: eager and replayed outputs agree.
TOWERS_BOTH_BACKENDS_SUITE(Graphs);

TEST_P(Graphs, ReplayOfCopiesMatchesTheEagerCopies) {
  TOWERS_RUNTIME_OR_SKIP(rt, 2);
  TwoBranchStep eager(*rt, false), graphed(*rt, false);
  eager.set_input(4.0f);
  eager.enqueue();
  rt->synchronize();
  for (auto& s : graphed.branch) prepare_for_capture(*s);
  auto graph = capture_graph(*rt, *graphed.origin, [&] { graphed.enqueue(); });
  graphed.set_input(4.0f);
  graph->launch(*graphed.origin);
  graphed.origin->synchronize();
  EXPECT_EQ(graphed.result(), eager.result());
  EXPECT_FALSE(graph->nodes().empty());
}

// What a graph cannot hold is the documented CaptureError naming the op on both backends
// (on cuda it was CUDA's runtime_error from inside the call), and the stream runs eagerly
// again afterwards. The cuda instance runs on a GPU (scripts/gpu-check).
TEST_P(Graphs, WhatAGraphCannotHoldIsACaptureErrorNamingTheOp) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  auto origin = rt->device(0).create_stream();
  auto event = rt->device(0).create_event();
  Buffer dev = rt->device(0).allocate(sizeof(int));
  Buffer pinned = rt->device(0).allocate_pinned(sizeof(int));
  prepare_for_capture(*origin);
  for (const Forbidden& forbidden : forbidden_ops()) {
    const auto message = capture_refusal(*rt, *origin, forbidden, dev, *event);
    EXPECT_TRUE(message.has_value()) << forbidden.op << " was captured";
    if (message) {
      EXPECT_NE(message->find("cannot capture " + forbidden.op), std::string::npos) << *message;
    }
    EXPECT_EQ(round_trip(*origin, dev, pinned), 3)
        << "the stream is not usable after refusing " << forbidden.op;
  }
}

TEST_P(Graphs, AStreamLeftUnjoinedIsACaptureError) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  Device& d = rt->device(0);
  auto origin = d.create_stream(), branch = d.create_stream();
  Buffer dev = d.allocate(sizeof(int));
  prepare_for_capture(*origin);
  prepare_for_capture(*branch);
  const std::string error = capture_an_unjoined_branch(*rt, *origin, *branch, dev.data());
  EXPECT_NE(error.find("join"), std::string::npos) << error;
  // Both streams run eagerly again (one after the other: the same int on two unordered
  // streams would be a race of the test's own making; ThreadSanitizer caught one).
  branch->fill_zero(dev.data(), sizeof(int));
  branch->synchronize();
  origin->fill_zero(dev.data(), sizeof(int));
  rt->synchronize();
}

}  // namespace
}  // namespace towers
