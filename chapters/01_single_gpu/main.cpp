// SPDX-License-Identifier: MIT
// Chapter 1: one GPU — cifar10_train.py and cifar10_eval.py in C++.
// The model every later chapter splits into towers: each step copies a distorted batch
// to the device, runs forward and backward, applies SGD and updates the moving averages.
// There are no towers yet, so nothing meets; the host waits once per step to log the loss.
#include <algorithm>
#include <optional>
#include <cstdio>
#include <thread>
#include <vector>

#include "base/usage_error.hpp"
#include "cli/graceful_stop.hpp"
#include "data/preprocess.hpp"
#include "harness/checkpoint_dir.hpp"
#include "harness/divergence.hpp"
#include "harness/evaluate.hpp"
#include "harness/input_queue.hpp"
#include "harness/micro_batches.hpp"
#include "harness/training.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"

using namespace towers;
using namespace towers::model;

int main(int argc, char** argv) {
  CLI::App app{"Chapter 1: train the tutorial's CIFAR-10 model on one device, then evaluate."};
  TrainingFlags flags;
  int device_index = 0;
  // One device, one tower: on the host backend let each op use every core (the later
  // chapters give each simulated device one core instead).
  int host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CheckpointFlags checkpoint_flags;
  bool eval = false;
  int accumulate = 1;
  add_training_flags(app, flags, /*with_towers=*/false);
  app.add_option("--accumulate", accumulate,
                 "m: cut each batch into m micro-batches and sum their gradients before one "
                 "update (gradient accumulation; chapter 9's pipeline equals it bit for bit)")
      ->capture_default_str()->check(whole_number(1, 1024, "micro-batches"));
  app.add_option("--save-params", flags.save_params,
                 "write the final parameters to this file (checkpoint format), to compare runs")
      ->check(writable_file());
  app.add_option("--device", device_index, "which device to train on")->capture_default_str()
      ->check(whole_number(0, kMaxDevices - 1));
  app.add_option("--host-threads", host_threads,
                 "host backend: threads each op may use (default: one per core)")
      ->capture_default_str()->check(whole_number(1, 1024));
  add_checkpoint_flags(app, checkpoint_flags);
  add_eval_flag(app, eval);

  return run_program(app, argc, argv, [&] {
    // Everything this run will write or read at the end is checked first: a typo costs
    // seconds, never a run (the trace paths were checked when the flags were parsed).
    if (auto problem = micro_batch_problem(flags.layout.batch_size, accumulate, "--accumulate");
        !problem.empty()) {
      throw UsageError(problem);
    }
    CheckpointDir checkpoints(checkpoint_flags);
    std::optional<data::Dataset> test;
    if (eval) test = load_test_set(flags.data_dir);
    flags.runtime.devices = device_index + 1;
    auto runtime = Runtime::create(flags.runtime);
    Device& device = runtime->device(device_index);
    ops::set_host_op_threads(host_threads);
    runtime->trace().set_enabled(!flags.trace_files.json.empty() || !flags.trace_files.svg.empty());

    data::Dataset train = load_training_set(flags.data_dir);
    const int batch_size = flags.layout.batch_size;
    InputQueue queue(train, batch_size, flags.seed);
    auto stream = device.create_stream();
    stream->set_tower(0);
    // With --accumulate m the Network holds the activations of one micro-batch of B/m.
    // A device too small for them is refused before step 0, in this program's flags (the
    // default advice names the tower chapters' --towers, which this one does not have).
    Network network = [&] {
      try {
        return Network(device, batch_size / accumulate);
      } catch (const OutOfMemory& e) {
        throw UsageError(e.fact() + " (a batch of " + std::to_string(batch_size / accumulate) +
                         " images at once). Use a smaller --batch-size, or --accumulate m: the "
                         "batch then runs as m micro-batches of batch / m images, with the same "
                         "gradient.");
      }
    }();

    // State: parameters and their moving averages, fresh or from the newest checkpoint
    // (then the queue continues where the checkpoint's input stood).
    TrainingState state = starting_state(checkpoints, queue, flags.seed);
    const std::size_t param_bytes = kNumParameters * sizeof(float);
    Buffer params = device.allocate(param_bytes), grads = device.allocate(param_bytes);
    Buffer averages = device.allocate(param_bytes);
    Buffer images = device.allocate(sizeof(float) * batch_size * data::kCropValues);
    Buffer labels = device.allocate(sizeof(int) * batch_size);
    Buffer host_images = device.allocate_pinned(images.bytes());
    Buffer host_labels = device.allocate_pinned(labels.bytes());
    Buffer host_losses = device.allocate_pinned(sizeof(float) * kLossCount * accumulate);
    Buffer micro_grads = device.allocate(accumulate > 1 ? param_bytes : sizeof(float));
    stream->copy(params.data(), state.params.data(), param_bytes);
    stream->copy(averages.data(), state.moving_averages.data(), param_bytes);
    stream->synchronize();

    StepLog log(batch_size, 1, flags.log_every, flags.steps);
    const std::int64_t steps_per_decay = decay_steps(batch_size, 1);
    std::int64_t global_step = state.global_step;
    float loss = 0;
    GracefulStop stop;  // Ctrl-C: finish this step, save, then exit
    bool stopping = false;  // the stop as this step's save read it: the loop ends on it
    for (int step = 0; step < flags.steps && !stopping; ++step) {
      auto start = std::chrono::steady_clock::now();
      runtime->trace().set_step(step);
      // docs-begin: train-step
      queue.dequeue(host_images.as<float>(), host_labels.as<std::int32_t>());
      stream->copy(images.data(), host_images.data(), images.bytes(), "copy images");
      stream->copy(labels.data(), host_labels.data(), labels.bytes(), "copy labels");
      if (accumulate == 1) {
        network.forward_backward(*stream, params.as<float>(), images.as<float>(),
                                 labels.as<int>(), grads.as<float>());
        stream->copy(host_losses.data(), network.losses(), sizeof(float) * kLossCount,
                     "copy loss");
      } else {  // --accumulate m: m forward-backwards, their gradients summed, then / m
        forward_backward_accumulated(*stream, network, params.as<float>(), images.as<float>(),
                                     labels.as<int>(), accumulate, micro_grads.as<float>(),
                                     grads.as<float>(), host_losses.as<float>());
      }
      apply_gradients(*stream, learning_rate(global_step, steps_per_decay), grads.as<float>(),
                      params.as<float>());
      update_moving_averages(*stream, moving_average_decay(global_step), params.as<float>(),
                             averages.as<float>());
      stream->synchronize();  // the host waits here, once per step, to read the loss
      // docs-end: train-step
      loss = mean_total_loss(host_losses.as<float>(), accumulate);
      ++global_step;
      log.step_done(global_step - 1, loss, seconds_since(start));
      stopping = stop.requested();
      const bool last = step + 1 == flags.steps || stopping;
      const bool save = checkpoints.due(global_step, last);
      if (save || parameter_check_due(step + 1)) {  // a NaN weight can hide behind a ReLU
        stream->copy(state.params.data(), params.data(), param_bytes);
        stream->copy(state.moving_averages.data(), averages.data(), param_bytes);
        stream->synchronize();
        check_parameters(state.params.data(), global_step - 1);
        state.global_step = global_step;
        state.input = queue.position();
        if (save) std::printf("saved %s\n", checkpoints.save(state).string().c_str());
      }
    }
    bool written = true;
    if (!flags.save_params.empty()) {
      written &= write_output([&] {
        std::vector<float> final_params(kNumParameters);
        stream->copy(final_params.data(), params.data(), param_bytes);
        stream->synchronize();
        save_params_file(flags.save_params, static_cast<long long>(global_step),
                         final_params.data());
      });
    }
    if (runtime->trace().enabled()) {
      written &= write_output([&] {
        write_trace_files(flags.trace_files, runtime->trace().collect(), "chapter 1: one device");
      });
    }

    Summary summary;
    summary.add("backend", std::string(to_string(runtime->backend())))
        .add("steps", log.steps()).add("global_step", static_cast<long long>(global_step))
        .add("batch_size", batch_size).add("accumulate", accumulate).add("final_loss", static_cast<double>(loss), 4)
        .add("step_ms", log.mean_step_ms(), 2).add("examples_per_sec", log.examples_per_sec(), 1);
    if (test && !stop.requested()) {  // after Ctrl-C the user wants out: no evaluation
      Precision p = evaluate(device, *stream, network, averages.as<float>(), *test);
      print_precision(p);
      summary.add("precision_at_1", p.precision_at_1(), 4);
    }
    if (stop.requested()) summary.add("stopped_by", std::string(stop.signal_name()));
    summary.print();
    return stop.exit_status(written ? 0 : 1);
  });
}
