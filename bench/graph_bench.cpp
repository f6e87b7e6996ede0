// SPDX-License-Identifier: MIT
// bench_graph: the host's time per step, chapter 3's eager enqueue against chapter 7's
// graph launch, for 1 to 8 towers at small batches, where launch cost matters.
//
//   build/bin/bench_graph                                # host: 1, 2, 4, 8 towers, batch 8
//   build/bin/bench_graph --backend cuda --towers 1 2 4 8 --towers-per-device 8 --batch-size 4
//
// --towers-per-device is the most towers that share one device: a row with fewer towers
// puts them all on one device (1 2 4 8 with 8 per device: every row on one GPU), a row with
// more fills whole devices, and a count that would leave a device part-filled is refused
// before anything runs.
// For each tower count it builds chapter 3's step (tower_loss on each tower's stream,
// the average on device 0 waiting for each tower's event, SGD, moving averages, the
// broadcast) and runs it `steps` times enqueued op by op, then captures the same step once
// as a graph (chapter 7) and launches it `steps` times, from the same parameters and batch.
//   eager_ms   median host time of enqueueing one step (the tower loop and the update)
//   launch_ms  median host time of the one Graph::launch() call of a step
//   capture_ms host time to capture and instantiate the graph, once
//   host_x     eager_ms / launch_ms: how much host time per step the graph saves
//   #wrong     parameters that differ, bit for bit, between the two runs: must be 0
// The first step of each mode is not timed. Device time is not measured: the host waits
// for each step before the next, so both modes run the same device work.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/timing.hpp"
#include "base/usage_error.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "data/preprocess.hpp"
#include "harness/step_scalars.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/average.hpp"
#include "parallel/tower_loss.hpp"
#include "runtime/graph.hpp"

namespace towers {
namespace {

using base::Clock;
using base::median;
using base::ms_since;

struct BenchOptions {
  std::string backend = "host";
  std::vector<int> towers = {1, 2, 4, 8};
  int towers_per_device = 1;
  int batch_size = 8;
  int steps = 5;
};

// The layout of one row: `towers` towers, at most --towers-per-device on each device.
TowerLayout row_layout(const BenchOptions& options, int towers) {
  if (towers < 1 || options.towers_per_device < 1) {
    throw UsageError("--towers and --towers-per-device need counts of at least 1 (got " +
                     std::to_string(towers) + " and " + std::to_string(options.towers_per_device) + ").");
  }
  const int per_device = std::min(towers, options.towers_per_device);
  if (towers % per_device != 0) {
    throw UsageError("--towers " + std::to_string(towers) + " does not fill devices of " +
                     std::to_string(per_device) + " towers (--towers-per-device " +
                     std::to_string(options.towers_per_device) +
                     "): give tower counts that are multiples of it, or at most it.");
  }
  return TowerLayout{towers, per_device, options.batch_size};
}

// Chapter 3's step on `towers` towers, runnable eagerly or captured.
class Step {
 public:
  Step(const BenchOptions& options, int towers) {
    const TowerLayout layout = row_layout(options, towers);
    RuntimeOptions runtime_options;
    runtime_options.backend = parse_backend_choice(options.backend);
    runtime_options.devices = towers / layout.towers_per_device;
    runtime_ = Runtime::create(runtime_options);
    set_ = make_towers(*runtime_, layout);
    Device& root = *set_.replicas[0]->device;
    averager_ = std::make_unique<DeviceAverage>(root, set_.towers);
    scalars_ = std::make_unique<StepScalars>(root);
    averages_ = root.allocate(kParamBytes);
    fork_ = root.create_event();
    params_ready_ = root.create_event();
    const std::size_t images = std::size_t(towers) * options.batch_size * data::kCropValues;
    images_ = root.allocate_pinned(images * sizeof(float));
    labels_ = root.allocate_pinned(std::size_t(towers) * options.batch_size * sizeof(std::int32_t));
    for (std::size_t i = 0; i < images; ++i) images_.as<float>()[i] = float(i % 251) / 251.0f - 0.5f;
    for (int i = 0; i < towers * options.batch_size; ++i) labels_.as<std::int32_t>()[i] = i % 10;
    initial_ = root.allocate_pinned(kParamBytes);
    model::initialize_parameters(1, initial_.as<float>());
  }

  void reset_parameters() {
    Stream& meet = averager_->stream();
    for (auto& replica : set_.replicas) meet.copy(replica->params.data(), initial_.data(), kParamBytes);
    meet.copy(averages_.data(), initial_.data(), kParamBytes);
    meet.synchronize();
  }

  // Chapter 3's step, enqueued op by op; the towers of the next step wait for params_ready.
  void enqueue_eager(int step) {
    Stream& meet = averager_->stream();
    for (auto& tower : set_.towers) {
      tower_loss(*tower, images_.as<float>(), labels_.as<std::int32_t>());
      tower->stream->record(*tower->done);
    }
    update(meet, step, /*captured=*/false);
    meet.record(*params_ready_);
    for (auto& tower : set_.towers) tower->stream->wait(*params_ready_);
  }

  // Chapter 7's capture of the same step.
  std::unique_ptr<Graph> capture() {
    Stream& meet = averager_->stream();
    for (auto& tower : set_.towers) prepare_for_capture(*tower->stream);
    return capture_graph(*runtime_, meet, [&] {
      meet.record(*fork_);
      scalars_->copy_to_device(meet);
      for (auto& tower : set_.towers) {
        tower->stream->wait(*fork_);
        tower_loss(*tower, images_.as<float>(), labels_.as<std::int32_t>());
        tower->stream->record(*tower->done);
      }
      update(meet, 0, /*captured=*/true);
    });
  }

  void set_scalars(int step) { scalars_->set(learning_rate(step), decay(step)); }
  Stream& meet() { return averager_->stream(); }
  Runtime& runtime() { return *runtime_; }

  std::vector<float> parameters() {
    Buffer out = set_.replicas[0]->device->allocate_pinned(kParamBytes);
    meet().copy(out.data(), set_.replicas[0]->params.data(), kParamBytes);
    meet().synchronize();
    return std::vector<float>(out.as<float>(), out.as<float>() + model::kNumParameters);
  }

 private:
  static constexpr std::size_t kParamBytes = model::kNumParameters * sizeof(float);
  static float learning_rate(int step) { return model::learning_rate(step, 1000); }
  static float decay(int step) { return model::moving_average_decay(step); }

  void update(Stream& meet, int step, bool captured) {
    float* params = set_.replicas[0]->params.as<float>();
    const float* grads = averager_->average_gradients();
    if (captured) {
      model::apply_gradients(meet, scalars_->learning_rate(), grads, params);
      model::update_moving_averages(meet, scalars_->decay(), params, averages_.as<float>());
    } else {
      model::apply_gradients(meet, learning_rate(step), grads, params);
      model::update_moving_averages(meet, decay(step), params, averages_.as<float>());
    }
    for (auto& replica : set_.replicas) {
      if (replica != set_.replicas[0]) meet.copy(replica->params.data(), params, kParamBytes, "broadcast params");
    }
  }

  std::unique_ptr<Runtime> runtime_;
  TowerSet set_;
  std::unique_ptr<DeviceAverage> averager_;
  std::unique_ptr<StepScalars> scalars_;
  Buffer averages_, images_, labels_, initial_;
  std::unique_ptr<Event> fork_, params_ready_;
};

int run(const BenchOptions& options) {
  ops::set_host_op_threads(1);  // one core per simulated device, as the chapters
  for (int towers : options.towers) (void)row_layout(options, towers);  // refused before any row runs
  std::printf("# bench_graph: host time per step, eager enqueue (chapter 3) vs graph launch "
              "(chapter 7), %s backend, batch %d per tower, %d steps (first not timed)\n",
              options.backend.c_str(), options.batch_size, options.steps);
  std::printf("# %6s  %6s  %10s  %10s  %10s  %8s  %6s\n", "towers", "nodes", "eager_ms",
              "launch_ms", "capture_ms", "host_x", "#wrong");
  long long total_wrong = 0;
  for (int towers : options.towers) {
    Step step(options, towers);
    std::vector<double> eager, launch;
    step.reset_parameters();
    for (int s = 0; s < options.steps; ++s) {
      const auto start = Clock::now();
      step.enqueue_eager(s);
      if (s > 0) eager.push_back(ms_since(start));
      step.runtime().synchronize();
    }
    const std::vector<float> eager_params = step.parameters();

    step.reset_parameters();
    const auto capture_start = Clock::now();
    auto graph = step.capture();
    const double capture_ms = ms_since(capture_start);
    for (int s = 0; s < options.steps; ++s) {
      const auto start = Clock::now();
      step.set_scalars(s);
      graph->launch(step.meet());
      if (s > 0) launch.push_back(ms_since(start));
      step.runtime().synchronize();
    }
    const std::vector<float> graph_params = step.parameters();
    long long wrong = 0;
    for (std::size_t i = 0; i < eager_params.size(); ++i) {
      wrong += std::memcmp(&eager_params[i], &graph_params[i], sizeof(float)) != 0;
    }
    total_wrong += wrong;
    const double e = median(eager), l = median(launch);
    std::printf("  %6d  %6zu  %10.4f  %10.4f  %10.3f  %8.1f  %6lld\n", towers, graph->nodes().size(),
                e, l, capture_ms, l > 0 ? e / l : 0.0, wrong);
    Summary()
        .add("bench", "graph")
        .add("backend", options.backend)
        .add("towers", towers)
        .add("batch_size", options.batch_size)
        .add("graph_nodes", static_cast<long long>(graph->nodes().size()))
        .add("eager_enqueue_ms", e, 4)
        .add("graph_launch_ms", l, 4)
        .add("capture_ms", capture_ms, 3)
        .add("wrong", total_wrong)
        .print();
  }
  if (total_wrong != 0) {
    std::fprintf(stderr, "error: the graph's parameters differ from the eager step's\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  towers::BenchOptions options;
  CLI::App app{"Host time per step: eager enqueue (chapter 3) vs graph launch (chapter 7)"};
  app.add_option("--backend", options.backend, "host or cuda")->check(CLI::IsMember({"host", "cuda"}));
  app.add_option("--towers", options.towers, "tower counts, one row each");
  app.add_option("--towers-per-device", options.towers_per_device,
                 "the most towers sharing one device (a row with fewer puts them all on one)");
  app.add_option("--batch-size", options.batch_size, "images per tower per step");
  app.add_option("--steps", options.steps, "steps per mode (the first is not timed)");
  return towers::run_program(app, argc, argv, [&] { return towers::run(options); });
}
