// SPDX-License-Identifier: MIT
// Chapter 7: the loop runs once.
// One change from chapter 3: the tower loop leaves the step. It runs once, at start, while
// the whole step (towers, average_gradients(), update) is captured as a graph, exactly as
// TF1's `for i in xrange(num_gpus)` runs once while the graph is built. Each step then
// replays the graph with one host call (sess.run(train_op)). The towers still meet once a
// step, in average_gradients() on device 0, which waits for each tower's event.
//
// Inputs reach the graph through fixed buffers it reads, as TF1's queue ops did: the
// host refills the pinned global batch and the step's learning rate and decay before each
// launch, and the graph's first nodes copy them to the devices.
#include <chrono>

#include "harness/graph_file.hpp"
#include "harness/launch_times.hpp"
#include "harness/step_scalars.hpp"
#include "harness/tower_flags.hpp"
#include "harness/tower_training.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/average.hpp"
#include "parallel/device_zero_variables.hpp"
#include "parallel/tower_loss.hpp"
#include "runtime/graph.hpp"

using namespace towers;
using namespace towers::model;

int main(int argc, char** argv) {
  TowerFlags flags{"Chapter 7: chapter 3's step captured once as a graph (the tower loop runs "
                   "once), then replayed each step with one host call."};
  std::string save_graph;
  flags.app.add_option("--save-graph", save_graph,
                       "write the captured graph's nodes and dependencies to this file (one line "
                       "per node)")
      ->check(writable_file());

  return run_program(flags.app, argc, argv, [&] {
    TowerTraining training(flags);
    auto& towers = training.towers();
    const int num_gpus = training.num_towers();
    const std::size_t param_bytes = kNumParameters * sizeof(float);
    // As chapter 3: the variables live on device 0; every other device holds a copy.
    Replica& root = *training.replicas()[0];
    DeviceAverage averager(*root.device, towers);
    Stream& meet = averager.stream();  // where towers meet, and where the graph is launched
    DeviceZeroVariables vars(training.replicas(), meet);
    training.start(vars);  // from --seed, or where a checkpoint stood
    const std::int64_t steps_per_decay = decay_steps(training.batch_size(), num_gpus);
    // Everything the graph touches is allocated before the capture: a graph cannot allocate.
    // That includes what a stream makes on first use (its cuBLAS handle, on a GPU): the
    // tower streams, which join the capture, are prepared here; `meet`, the origin, by
    // capture_graph() itself.
    StepScalars scalars(*root.device);
    auto fork = root.device->create_event();
    training.prepare_for_capture();
    int tower_bodies_run = 0;

    const auto capture_started = std::chrono::steady_clock::now();
    // docs-begin: capture-step
    auto train_op = capture_graph(training.runtime(), meet, [&] {
      training.probe_round_in_capture(meet);  // --probe: each replay's towers must meet anew
      meet.record(*fork);            // the fork: each tower stream joins the capture here
      scalars.copy_to_device(meet);  // this step's learning rate and decay, read at replay
      for (auto& tower : towers) {   // runs once per program, not once per step
        ++tower_bodies_run;
        tower->stream->wait(*fork);
        training.probe_in_capture(*tower);
        tower_loss(*tower, training.images(), training.labels());  // a node per op, not run
        tower->stream->record(*tower->done);
      }
      const float* grads = averager.average_gradients();  // waits for each tower: the join
      apply_gradients(meet, scalars.learning_rate(), grads, vars.params());
      update_moving_averages(meet, scalars.decay(), vars.params(), vars.averages());
      for (auto& replica : training.replicas()) {
        if (replica.get() != &root) {
          meet.copy(replica->params.data(), root.params.data(), param_bytes, "broadcast params");
        }
      }
    });
    // docs-end: capture-step
    const double capture_ms = 1000.0 * seconds_since(capture_started);
    save_graph_if_asked(save_graph, *train_op);

    LaunchTimes launch_times;  // host_launch_ms: the untraced steps after the first
    const auto host_calls_before = training.runtime().trace().host_enqueues();
    int steps_run = 0;
    for (int run_step = 0; run_step < flags.steps && !training.stop_requested();
         ++run_step, ++steps_run) {
      StepScope step = training.step(run_step);  // refills the pinned batch the graph reads
      const std::int64_t global_step = step.global_step();  // counts from --resume's step
      const auto launch_started = std::chrono::steady_clock::now();  // host_launch_ms
      // docs-begin: launch-step
      scalars.set(learning_rate(global_step, steps_per_decay), moving_average_decay(global_step));
      train_op->launch(meet);  // the whole step: every tower, the average, the update
      // docs-end: launch-step
      // A traced step's launch on cuda also records the trace's events: timed, left out.
      launch_times.add(run_step, step.traced(), 1000.0 * seconds_since(launch_started));
      step.enqueued();
      training.runtime().synchronize();  // the one wait of the step: read the loss
      step.end(towers.back()->losses.as<float>()[kTotalLoss]);
    }
    const auto host_calls = training.runtime().trace().host_enqueues() - host_calls_before;

    const double steps = steps_run > 0 ? steps_run : 1;
    Summary graph_keys;
    graph_keys.add("graph_nodes", static_cast<long long>(train_op->nodes().size()))
        .add("capture_ms", capture_ms, 3)
        .add("host_launch_ms", launch_times.mean_ms(), 4)
        .add("host_launch_steps", launch_times.counted())
        .add("host_launch_from", launch_times.from())
        .add("host_calls_per_step", static_cast<double>(host_calls) / steps, 2)
        .add("graph_launches", train_op->launches())
        .add("tower_bodies_run", tower_bodies_run);
    return training.finish("chapter 7: the step as a graph", "device0", graph_keys);
  });
}
