// SPDX-License-Identifier: MIT
// Chapter 3: stream towers.
// Two changes from chapter 2. The lesson: the tower loop only enqueues work, one stream
// per tower, so towers run at the same time. And the meeting point moves from the host to
// device 0: average_gradients() runs there and waits for each tower with an event, since
// a meeting on the host would need the host wait that the first change removes. The sums
// keep chapter 2's order, so the parameters stay bit-identical.
#include "harness/tower_flags.hpp"
#include "harness/tower_training.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/average.hpp"
#include "parallel/device_zero_variables.hpp"
#include "parallel/tower_loss.hpp"

using namespace towers;
using namespace towers::model;

int main(int argc, char** argv) {
  TowerFlags flags{"Chapter 3: N towers whose loop only enqueues (concurrent); gradients "
                   "averaged on device 0 with peer copies ordered by events."};

  return run_program(flags.app, argc, argv, [&] {
    TowerTraining training(flags);
    auto& towers = training.towers();
    const int num_gpus = training.num_towers();
    const std::size_t param_bytes = kNumParameters * sizeof(float);
    // The variables live on device 0; every other device holds a copy of the parameters.
    Replica& root = *training.replicas()[0];
    DeviceAverage averager(*root.device, towers);
    Stream& meet = averager.stream();  // where towers meet: device 0, no tower
    DeviceZeroVariables vars(training.replicas(), meet);
    training.start(vars);  // from --seed, or where a checkpoint stood
    auto params_ready = root.device->create_event();
    const std::int64_t steps_per_decay = decay_steps(training.batch_size(), num_gpus);

    for (int run_step = 0; run_step < flags.steps && !training.stop_requested(); ++run_step) {
      StepScope step = training.step(run_step);
      const std::int64_t global_step = step.global_step();  // counts from --resume's step
      // docs-begin: enqueue-towers
      for (auto& tower : towers) {
        step.probe(*tower);  // --probe: between the enqueues, where chapter 2's timed out
        tower_loss(*tower, training.images(), training.labels());  // returns at once
        tower->stream->record(*tower->done);
      }
      // docs-end: enqueue-towers
      // docs-begin: device-average
      const float* grads = averager.average_gradients();  // waits for each tower's event
      apply_gradients(meet, learning_rate(global_step, steps_per_decay), grads, vars.params());
      update_moving_averages(meet, moving_average_decay(global_step), vars.params(),
                             vars.averages());
      for (auto& replica : training.replicas()) {
        if (replica.get() != &root) {
          meet.copy(replica->params.data(), root.params.data(), param_bytes, "broadcast params");
        }
      }
      meet.record(*params_ready);
      for (auto& tower : towers) tower->stream->wait(*params_ready);  // next step's reads
      // docs-end: device-average
      step.enqueued();
      training.runtime().synchronize();  // the one wait of the step: read the loss
      step.end(towers.back()->losses.as<float>()[kTotalLoss]);
    }
    return training.finish("chapter 3: stream towers", "device0");
  });
}
