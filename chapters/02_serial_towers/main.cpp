// SPDX-License-Identifier: MIT
// Chapter 2: serial towers — what the learner feared.
// One change from chapter 1: N towers, each on its own device (or stream), share one
// step. But the tower loop synchronizes after each tower, so tower i+1 starts only when
// tower i has finished: the towers take turns. They meet on the host, in
// average_gradients(), as the tutorial's towers meet on /cpu:0.
#include <vector>

#include "harness/tower_flags.hpp"
#include "harness/tower_training.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/average.hpp"
#include "parallel/host_variables.hpp"
#include "parallel/tower_loss.hpp"

using namespace towers;
using namespace towers::model;

int main(int argc, char** argv) {
  TowerFlags flags{"Chapter 2: N towers driven by a loop that waits for each tower (serial); "
                   "gradients averaged on the host."};

  return run_program(flags.app, argc, argv, [&] {
    TowerTraining training(flags);
    auto& towers = training.towers();
    const int num_gpus = training.num_towers();
    const int n = static_cast<int>(kNumParameters);
    // The variables live on the host ("/cpu:0"): parameters, moving averages, gradients.
    Device& host_side = training.runtime().device(0);
    HostVariables vars(host_side);
    training.start(vars);  // from --seed, or where a checkpoint stood
    std::vector<float> grads(n);
    std::vector<Buffer> tower_grads;
    std::vector<const float*> tower_grad_ptrs;
    for (int i = 0; i < num_gpus; ++i) {
      tower_grads.push_back(host_side.allocate_pinned(n * sizeof(float)));
      tower_grad_ptrs.push_back(tower_grads.back().as<float>());
    }
    const std::int64_t steps_per_decay = decay_steps(training.batch_size(), num_gpus);
    auto copy_params_to_devices = [&] {  // one device after the other, like the towers
      for (auto& replica : training.replicas()) {
        Stream& stream = *towers[replica->device->index()]->stream;
        stream.copy(replica->params.data(), vars.params(), n * sizeof(float), "copy params");
        stream.synchronize();
      }
    };
    copy_params_to_devices();

    for (int run_step = 0; run_step < flags.steps && !training.stop_requested(); ++run_step) {
      StepScope step = training.step(run_step);
      const std::int64_t global_step = step.global_step();  // counts from --resume's step
      // docs-begin: serial-towers
      for (int i = 0; i < num_gpus; ++i) {
        Tower& tower = *towers[i];
        step.probe(tower);
        tower_loss(tower, training.images(), training.labels());
        tower.stream->copy(tower_grads[i].data(), tower.grads.data(), n * sizeof(float),
                           "copy grads to host");
        tower.stream->synchronize();  // waits for tower i before tower i+1 starts: serial
      }
      // docs-end: serial-towers
      step.enqueued();
      Trace& trace = training.runtime().trace();
      const double average_start = trace.now_us();
      // docs-begin: host-average
      average_gradients_on_host(tower_grad_ptrs, n, grads.data());  // towers meet here
      apply_gradients_on_host(learning_rate(global_step, steps_per_decay), grads.data(),
                              vars.params());
      update_moving_averages_on_host(moving_average_decay(global_step), vars.params(),
                                     vars.averages());
      // docs-end: host-average
      trace.add_host_span("average_gradients + apply", average_start);
      copy_params_to_devices();  // every device gets the new parameters
      step.end(towers.back()->losses.as<float>()[kTotalLoss]);
    }
    return training.finish("chapter 2: serial towers", "host");
  });
}
