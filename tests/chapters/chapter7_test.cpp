// SPDX-License-Identifier: MIT
// Chapter 7's claims: the step captured once and replayed does chapter 3's math bit for
// bit; the tower loop runs once; a step costs the host one launch; the graph is N tower
// branches joining where the gradients are averaged; and the towers still overlap.
#include <gtest/gtest.h>

#include <algorithm>

#include <fstream>
#include <set>
#include <sstream>

#include "program.hpp"

namespace towers {
namespace {

using testing::run;
using testing::saved_params;

const std::string kSmall = "--backend host --batch-size 16 --log-every 1 ";

std::filesystem::path temp_file(const std::string& name) {
  return testing::temp_file("towers-ch7", name);
}

TEST(StepGraph, SameParametersAsStreamTowersBitForBit) {
  auto eager = temp_file("ch3.ckpt"), graphed = temp_file("ch7.ckpt");
  auto a = run("03_stream_towers", kSmall + "--steps 3 --devices 2 --save-params " + eager.string());
  auto b = run("07_graph", kSmall + "--steps 3 --devices 2 --save-params " + graphed.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(saved_params(eager), saved_params(graphed))
      << "the same ops on the same data: capturing them must not change the math";
  EXPECT_EQ(a.last("final_loss"), b.last("final_loss"));
}

TEST(StepGraph, TheTowerLoopRunsOncePerProgram) {
  auto r = run("07_graph", kSmall + "--steps 3 --devices 2 --towers-per-device 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("towers"), "4");
  EXPECT_EQ(r.last("tower_bodies_run"), "4") << "once per tower, not once per tower per step";
  EXPECT_EQ(r.last("graph_launches"), "3");
}

TEST(StepGraph, EachStepIsOneHostCall) {
  auto r = run("07_graph", kSmall + "--steps 3 --devices 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("host_calls_per_step"), "1.00") << r.output;
  EXPECT_GT(r.number("graph_nodes"), 20.0);
}

TEST(StepGraph, TowersStillOverlapWithinAStep) {
  auto r = run("07_graph", kSmall + "--steps 3 --devices 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("max_concurrent_towers"), "2") << r.output;
  EXPECT_GT(r.number("overlap"), 0.0) << r.output;
  EXPECT_EQ(r.last("towers_meet"), "device0");
}

// host_launch_ms averages the launches of the steps after the first whose ops were not
// traced (a traced launch on cuda also records the trace's events; LaunchTimes' tests hold
// the choice). The host backend traces every step, so here it averages the traced steps
// after the first, and the summary says how many and which.
TEST(StepGraph, HostLaunchTimeSaysWhichLaunchesItAverages) {
  auto r = run("07_graph", kSmall + "--steps 4 --devices 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("host_launch_from"), "traced_steps") << r.output;
  EXPECT_EQ(r.last("host_launch_steps"), "3") << "steps 1-3: the first is left out";
  EXPECT_GT(r.number("host_launch_ms"), 0.0);
}

TEST(StepGraph, RendezvousInsideTheGraphMeets) {
  auto r = run("07_graph", kSmall + "--devices 4 --steps 2 --probe");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("rendezvous"), "met") << r.output;
}

struct Node {
  std::string name;
  int device = -1, stream = -1, tower = -1;
  std::vector<int> dependencies;
};

std::vector<Node> read_graph(const std::filesystem::path& file) {
  std::vector<Node> nodes;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string index, name, device, stream, tower, deps;
    std::getline(fields, index, '\t');
    std::getline(fields, name, '\t');
    std::getline(fields, device, '\t');
    std::getline(fields, stream, '\t');
    std::getline(fields, tower, '\t');
    std::getline(fields, deps, '\t');
    Node node{name, std::stoi(device), std::stoi(stream), std::stoi(tower), {}};
    if (deps != "-") {
      std::istringstream list(deps);
      std::string d;
      while (std::getline(list, d, ',')) node.dependencies.push_back(std::stoi(d));
    }
    nodes.push_back(node);
  }
  return nodes;
}

// The probes are nodes of the graph, replayed at every launch: each launch must start a new
// round (a "rendezvous reset" node before the fork that every tower's probe follows), or
// after the first launch every probe "meets" at once on the flags the first one left set.
TEST(StepGraph, EveryReplayStartsANewRoundOfTheProbe) {
  auto file = temp_file("probe-graph.tsv");
  auto r = run("07_graph", kSmall + "--steps 3 --devices 2 --probe --save-graph " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("rendezvous"), "met") << r.output;
  const std::vector<Node> nodes = read_graph(file);
  std::vector<int> resets, probes;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == "rendezvous reset") resets.push_back(static_cast<int>(i));
    if (nodes[i].name == "rendezvous") probes.push_back(static_cast<int>(i));
  }
  ASSERT_EQ(resets.size(), 1u) << "one reset per replay";
  ASSERT_EQ(probes.size(), 2u) << "one probe per tower";
  for (int probe : probes) {
    const auto& deps = nodes[probe].dependencies;
    EXPECT_NE(std::find(deps.begin(), deps.end(), resets[0]), deps.end())
        << "tower " << nodes[probe].tower << "'s probe does not wait for the reset";
  }
}

// Walks the graph the chapter captured: each tower is one branch that depends on nothing
// outside itself, every branch ends in a node the averaging depends on, and everything
// leads to one final node.
TEST(StepGraph, GraphIsNTowerBranchesJoiningAtTheAverage) {
  const int n = 3;
  auto file = temp_file("graph.tsv");
  auto r = run("07_graph", kSmall + "--steps 1 --devices " + std::to_string(n) +
               " --save-graph " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<Node> nodes = read_graph(file);
  ASSERT_EQ(std::to_string(nodes.size()), r.last("graph_nodes"));
  const std::set<std::string> averaging = {"peer copy grads", "axpy", "scal"};
  std::vector<int> last_of(n, -1), first_of(n, -1);
  std::set<int> towers_joined;
  std::vector<int> used(nodes.size(), 0);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    for (int d : node.dependencies) {
      ASSERT_LT(d, static_cast<int>(i));
      ++used[d];
      const int from = nodes[d].tower;
      if (node.tower >= 0) {
        EXPECT_EQ(from, node.tower) << "tower " << node.tower << "'s " << node.name
                                    << " depends on a node outside its branch";
      } else if (from >= 0) {
        EXPECT_TRUE(averaging.count(node.name)) << node.name << " joins a tower branch";
        EXPECT_EQ(d, last_of[from]) << "the join must follow tower " << from << "'s last node";
        towers_joined.insert(from);
      }
    }
    if (node.tower >= 0) {
      if (first_of[node.tower] < 0) {
        first_of[node.tower] = static_cast<int>(i);
        EXPECT_TRUE(node.dependencies.empty()) << "a branch starts at the fork";
      }
      last_of[node.tower] = static_cast<int>(i);
      EXPECT_EQ(node.device, node.tower) << "tower i runs on device i";
    }
  }
  EXPECT_EQ(towers_joined.size(), static_cast<std::size_t>(n)) << "every branch joins the average";
  int sinks = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) sinks += used[i] == 0;
  EXPECT_EQ(sinks, 1) << "the step ends in one node (the last broadcast)";
  EXPECT_EQ(nodes.back().name, "broadcast params");
}

}  // namespace
}  // namespace towers
