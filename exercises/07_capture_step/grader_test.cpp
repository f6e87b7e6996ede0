// SPDX-License-Identifier: MIT
// Grader of exercise 07: capture_step() returns a graph of the whole step — N tower
// branches joining at the average — whose launches compute the exact average of whatever
// the towers' inputs hold at launch time, with the tower loop run once. On simulated
// devices (the host backend); concurrency is proved by a rendezvous. Each test is one point.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "capture_step.hpp"
#include "exercises/grader.hpp"
#include "exercises/todo.hpp"
#include "runtime/busy.hpp"
#include "runtime/rendezvous.hpp"
#include "trace/trace.hpp"

namespace towers::exercises {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kCount = 129;  // gradient elements per tower
// The average of a step in which some tower's gradients were never written.
constexpr float kUnwritten = -1000.0f;

// N simulated devices, tower i's stream on device i, `meet` and `fork` on device 0.
// What tower work touches is declared before the runtime, so it outlives the streams.
struct Towers {
  explicit Towers(int n) : inputs(n, std::vector<float>(kCount, 0.0f)), grads(n) {
    runtime = Runtime::create(RuntimeOptions{BackendChoice::kHost, n});
    for (int i = 0; i < n; ++i) {
      streams.push_back(runtime->device(i).create_stream());
      streams.back()->set_tower(i);
      done.push_back(runtime->device(i).create_event());
      step.push_back(StepTower{streams.back().get(), done.back().get()});
      // What chapter 7's harness does: a tower stream joins the capture and launches work
      // there, so it is prepared first (capture_graph prepares `meet`, its origin).
      prepare_for_capture(*streams.back());
    }
    meet = runtime->device(0).create_stream();
    fork = runtime->device(0).create_event();
  }

  // The model, cut down: tower i works for a while (tower 0 longest, so an average that
  // does not wait for every tower reads stale gradients), then its gradients become its
  // inputs *as they are when the work runs* — the fixed buffer a graph reads.
  TowerLoss tower_loss() {
    return [this](int i) {
      // capture_step is called from one host thread, and a capture is fed from it alone.
      if (std::this_thread::get_id() != capturing_thread) called_off_thread = true;
      ++tower_loss_calls;
      const int n = static_cast<int>(streams.size());
      busy_kernel(*streams[i], 5.0 + 15.0 * (n - 1 - i));
      streams[i]->launch("backward", [this, i] { grads[i] = inputs[i]; ++tower_work_runs; }, nullptr);
    };
  }

  AverageGradients average_gradients() {
    return [this](Stream& s) {
      ++average_calls;
      average_stream = &s;
      s.launch("average", [this] {
        const int n = static_cast<int>(grads.size());
        const bool unwritten = std::any_of(grads.begin(), grads.end(),
                                           [](const std::vector<float>& g) { return g.empty(); });
        average.assign(kCount, kUnwritten);
        for (std::size_t j = 0; j < kCount && !unwritten; ++j) {
          float sum = 0;
          for (int t = 0; t < n; ++t) sum += grads[t][j];
          average[j] = sum / static_cast<float>(n);
        }
        ++average_runs;
      }, nullptr);
    };
  }

  // Calls the student's capture_step. An unfinished TODO (NotImplemented) is reported as a
  // note; any other exception fails the test, with its message and the hint its cause
  // names (ASSERT_GRAPH then adds no second line).
  std::unique_ptr<Graph> capture(const TowerLoss& loss, const AverageGradients& average) {
    std::unique_ptr<Graph> graph;
    capturing_thread = std::this_thread::get_id();
    try {
      graph = capture_step(*runtime, step, *meet, *fork, loss, average);
    } catch (const NotImplemented& e) {
      std::printf("note: capture_step is unfinished: %s\n", e.what());
      unfinished = true;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "expected capture_step to return a graph, got an exception: " << e.what()
                    << "; hint: " << capture_error_hint(e.what());
      threw = true;
    }
    for (auto& s : streams) s->synchronize();  // whatever ran eagerly, let it finish
    meet->synchronize();
    return graph;
  }
  std::unique_ptr<Graph> capture() { return capture(tower_loss(), average_gradients()); }

  // The cause a refused capture's message names, as a hint.
  static std::string capture_error_hint(const std::string& message) {
    if (message.find("synchronize") != std::string::npos || message.find("query") != std::string::npos) {
      return "nothing inside the capture may make the host wait: no synchronize()";
    }
    if (message.find("recorded outside this capture") != std::string::npos) {
      return "record `fork` on `meet` inside the capture first, then make each tower's stream "
             "wait for it before its work";
    }
    if (message.find("not joined back") != std::string::npos) {
      return "make `meet` wait for EVERY tower's done event, recorded on the tower's stream "
             "after its work";
    }
    return "inside the capture only enqueue: fork the tower streams from `fork`, record each "
           "tower's done event after its work and make `meet` wait for all of them";
  }

  std::vector<std::vector<float>> inputs;  // [towers][kCount]: read by tower work when it runs
  std::vector<std::vector<float>> grads;   // [towers][kCount]: written by tower work
  std::vector<float> average;              // written by the average
  int tower_loss_calls = 0, average_calls = 0;
  bool unfinished = false, threw = false;  // how capture() ended without a graph
  std::thread::id capturing_thread;
  std::atomic<bool> called_off_thread{false};
  std::atomic<int> tower_work_runs{0}, average_runs{0};
  Stream* average_stream = nullptr;
  std::unique_ptr<Runtime> runtime;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::unique_ptr<Event>> done;
  std::unique_ptr<Stream> meet;
  std::unique_ptr<Event> fork;
  std::vector<StepTower> step;
};

// A test ends where capture_step gave no graph; the failure line says why once (capture()
// already reported an exception).
#define ASSERT_GRAPH(graph)                                                               \
  do {                                                                                    \
    if (graph) break;                                                                     \
    if (!towers.threw) {                                                                  \
      ADD_FAILURE() << "expected capture_step to return a graph, got none; hint: "        \
                    << (towers.unfinished ? "finish the TODOs in stub.cpp"                \
                                          : "return what capture_graph() returns");       \
    }                                                                                     \
    return;                                                                               \
  } while (false)

std::string name_of(const ::testing::TestParamInfo<int>& info) {
  return "N" + std::to_string(info.param);
}

class CapturedStep : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Towers, CapturedStep, ::testing::Values(1, 2, 3), name_of);

TEST_P(CapturedStep, EachLaunchAveragesTheInputsOfThatLaunchExactly) {
  const int n = GetParam();
  Towers towers(n);
  auto graph = towers.capture();
  ASSERT_GRAPH(graph);
  for (int launch = 0; launch < 3; ++launch) {
    ExactMeanData data = make_exact_mean_data(n, kCount, 100 + launch);
    towers.inputs = data.towers;  // refilled before the launch, as chapter 7's batch
    graph->launch(*towers.meet);
    towers.meet->synchronize();
    auto bad = first_mismatch(towers.average, data.mean);
    ASSERT_FALSE(bad) << "launch " << launch << ": expected the exact mean of " << n
                      << " towers' inputs, got "
                      << (bad ? describe_mismatch(towers.average, data.mean, *bad) : "")
                      << "; hint: "
                      << (bad && towers.average[*bad] == kUnwritten
                              ? "the average ran before a tower's work had ever run: make "
                                "`meet` wait for every tower's done event, recorded after "
                                "tower_loss(i), before average_gradients(meet)"
                              : "this launch did not average this launch's gradients: every "
                                "tower's work and the average must be inside the graph (fork "
                                "each tower's stream from `fork`), the average after every "
                                "tower's done event");
  }
}

TEST_P(CapturedStep, TheTowerLoopRunsOnceWhateverTheLaunches) {
  Towers towers(GetParam());
  auto graph = towers.capture();
  ASSERT_GRAPH(graph);
  for (int launch = 0; launch < 3; ++launch) graph->launch(*towers.meet);
  towers.meet->synchronize();
  EXPECT_EQ(towers.tower_loss_calls, GetParam())
      << "expected tower_loss to be called once per tower in all, got " << towers.tower_loss_calls
      << "; hint: call it once per tower, inside the capture";
  EXPECT_EQ(towers.average_calls, 1) << "expected average_gradients to be called once";
  EXPECT_EQ(towers.average_stream, towers.meet.get())
      << "expected average_gradients(meet), got another stream; hint: the average goes on "
         "the meeting stream, where the towers join";
  EXPECT_EQ(towers.tower_work_runs.load(), 3 * GetParam())
      << "expected 3 launches to run every tower's work 3 times, got "
      << towers.tower_work_runs.load() << " runs of " << GetParam() << " towers' work; hint: "
      << (towers.tower_work_runs.load() > 3 * GetParam()
              ? "the work ran more often than the graph was launched: capture_step only "
                "captures, it neither runs the step nor launches the graph"
              : "each launch runs only what is inside the graph: every tower's work must be");
}

TEST_P(CapturedStep, CapturingRunsNothing) {
  Towers towers(GetParam());
  auto graph = towers.capture();
  ASSERT_GRAPH(graph);
  EXPECT_EQ(towers.tower_work_runs.load(), 0)
      << "expected no tower work to run before the first launch, got "
      << towers.tower_work_runs.load() << " runs; hint: enqueue the step inside the capture "
                                          "(fork every tower stream from `fork` first), and "
                                          "return the graph without launching it";
  EXPECT_EQ(towers.average_runs.load(), 0) << "expected the average not to run before a launch";
}

TEST_P(CapturedStep, GraphIsNBranchesJoiningAtTheAverage) {
  const int n = GetParam();
  Towers towers(n);
  auto graph = towers.capture();
  ASSERT_GRAPH(graph);
  const std::vector<GraphNode> nodes = graph->nodes();
  std::vector<int> last(n, -1);
  int average = -1;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const GraphNode& node = nodes[i];
    if (node.name == "average") average = static_cast<int>(i);
    if (node.tower < 0) continue;
    for (int d : node.dependencies) {
      EXPECT_EQ(nodes[d].tower, node.tower)
          << "tower " << node.tower << "'s '" << node.name << "' depends on '" << nodes[d].name
          << "' outside its branch; hint: each branch starts at the fork";
    }
    last[node.tower] = static_cast<int>(i);
  }
  ASSERT_GE(average, 0) << "expected an 'average' node in the graph";
  for (int t = 0; t < n; ++t) {
    ASSERT_GE(last[t], 0) << "expected tower " << t << "'s work in the graph, found none";
    const auto& deps = nodes[average].dependencies;
    EXPECT_NE(std::find(deps.begin(), deps.end(), last[t]), deps.end())
        << "expected the average to depend on tower " << t << "'s last node; hint: make "
           "`meet` wait for every tower's done event before average_gradients(meet)";
  }
}

TEST_P(CapturedStep, ALaunchIsOneHostCall) {
  Towers towers(GetParam());
  auto graph = towers.capture();
  ASSERT_GRAPH(graph);
  const auto before = towers.runtime->trace().host_enqueues();
  graph->launch(*towers.meet);
  EXPECT_EQ(towers.runtime->trace().host_enqueues() - before, 1u);
  towers.meet->synchronize();
  EXPECT_EQ(towers.average_runs.load(), 1) << "expected one launch to run the average once";
}

TEST_P(CapturedStep, IsCapturedFromTheCallingThread) {
  Towers towers(GetParam());
  auto graph = towers.capture();
  ASSERT_GRAPH(graph);
  EXPECT_FALSE(towers.called_off_thread.load())
      << "expected tower_loss to be called on the thread that called capture_step, got a "
         "call from another thread; hint: a capture is fed from one host thread (its streams "
         "run the towers at once later, in each launch): call tower_loss(i) in a plain loop";
}

class ConcurrentBranches : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Towers, ConcurrentBranches, ::testing::Values(2, 4), name_of);

TEST_P(ConcurrentBranches, TowersRunAtOnceInALaunch) {
  Towers towers(GetParam());
  Rendezvous rendezvous(*towers.runtime, GetParam(), 1000ms);
  auto graph = towers.capture([&](int i) { rendezvous.enqueue(*towers.streams[i]); },
                              [](Stream& meet) { meet.launch("average", [] {}, nullptr); });
  ASSERT_GRAPH(graph);
  graph->launch(*towers.meet);
  towers.meet->synchronize();
  EXPECT_TRUE(rendezvous.all_met())
      << "expected all " << GetParam() << " towers running at once in a launch, got at most "
      << rendezvous.max_present() << "; hint: branches must depend only on the fork, not on "
                                     "each other";
}

}  // namespace
}  // namespace towers::exercises
