// SPDX-License-Identifier: MIT
// Chapter 1: one GPU — cifar10_train.py and cifar10_eval.py in C++.
// The model every later chapter splits into towers: each step copies a distorted batch
// to the device, runs forward and backward, applies SGD and updates the moving averages.
// There are no towers yet, so nothing meets; the host waits once per step to log the loss.
// The variables live on that one device (OneDeviceVariables); what a run does around its
// steps (resume, log, checkpoints, --save-params, --eval) is TrainingRun's, the same for
// every chapter.
#include <algorithm>
#include <chrono>
#include <thread>

#include "base/usage_error.hpp"
#include "data/preprocess.hpp"
#include "harness/evaluate.hpp"
#include "harness/input_queue.hpp"
#include "harness/micro_batches.hpp"
#include "harness/training.hpp"
#include "harness/training_run.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/one_device_variables.hpp"

using namespace towers;
using namespace towers::model;

int main(int argc, char** argv) {
  CLI::App app{"Chapter 1: train the tutorial's CIFAR-10 model on one device, then evaluate."};
  TrainingFlags flags;
  int device_index = 0;
  // One device, one tower: on the host backend let each op use every core (the later
  // chapters give each simulated device one core instead).
  int host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int accumulate = 1;
  add_training_flags(app, flags, /*with_towers=*/false);
  app.add_option("--accumulate", accumulate,
                 "m: cut each batch into m micro-batches and sum their gradients before one "
                 "update (gradient accumulation; chapter 9's pipeline equals it bit for bit)")
      ->capture_default_str()->check(whole_number(1, 1024, "micro-batches"));
  add_save_params_flag(app, flags.save_params);
  app.add_option("--device", device_index, "which device to train on")->capture_default_str()
      ->check(whole_number(0, kMaxDevices - 1));
  app.add_option("--host-threads", host_threads,
                 "host backend: threads each op may use (default: one per core)")
      ->capture_default_str()->check(whole_number(1, 1024));
  add_checkpoint_flags(app, flags.checkpoints);
  add_eval_flag(app, flags.eval);

  return run_program(app, argc, argv, [&] {
    // Everything this run will write or read at the end is checked first: a typo costs
    // seconds, never a run (the trace paths were checked when the flags were parsed).
    if (auto problem = micro_batch_problem(flags.layout.batch_size, accumulate, "--accumulate");
        !problem.empty()) {
      throw UsageError(problem);
    }
    TrainingRun run(flags);  // --checkpoint-dir and --resume settled, --eval's test set read
    flags.runtime.devices = device_index + 1;
    auto runtime = Runtime::create(flags.runtime);
    Device& device = runtime->device(device_index);
    ops::set_host_op_threads(host_threads);
    runtime->trace().set_enabled(!flags.trace_files.json.empty() || !flags.trace_files.svg.empty());

    data::Dataset train = load_training_set(flags.data_dir);
    const int batch_size = flags.layout.batch_size;
    InputQueue queue(train, batch_size, flags.seed);
    run.restore_input(queue);  // a checkpoint of another --batch-size or --seed: refused now
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

    // The variables, on the one device: parameters and their moving averages, fresh or
    // from the newest checkpoint (then the queue continues where its input stood).
    OneDeviceVariables vars(device, *stream);
    const std::size_t param_bytes = kNumParameters * sizeof(float);
    Buffer grads = device.allocate(param_bytes);
    Buffer images = device.allocate(sizeof(float) * batch_size * data::kCropValues);
    Buffer labels = device.allocate(sizeof(int) * batch_size);
    Buffer host_images = device.allocate_pinned(images.bytes());
    Buffer host_labels = device.allocate_pinned(labels.bytes());
    Buffer host_losses = device.allocate_pinned(sizeof(float) * kLossCount * accumulate);
    Buffer micro_grads = device.allocate(accumulate > 1 ? param_bytes : sizeof(float));
    run.start(vars, &queue, batch_size, 1);  // Ctrl-C from here on: finish the step, save
    const std::int64_t steps_per_decay = decay_steps(batch_size, 1);

    for (int step = 0; step < flags.steps && !run.stopping(); ++step) {
      auto start = std::chrono::steady_clock::now();
      const std::int64_t global_step = run.first_global_step() + step;
      runtime->trace().set_step(step);
      // docs-begin: train-step
      queue.dequeue(host_images.as<float>(), host_labels.as<std::int32_t>());
      stream->copy(images.data(), host_images.data(), images.bytes(), "copy images");
      stream->copy(labels.data(), host_labels.data(), labels.bytes(), "copy labels");
      if (accumulate == 1) {
        network.forward_backward(*stream, vars.params(), images.as<float>(), labels.as<int>(),
                                 grads.as<float>());
        stream->copy(host_losses.data(), network.losses(), sizeof(float) * kLossCount,
                     "copy loss");
      } else {  // --accumulate m: m forward-backwards, their gradients summed, then / m
        forward_backward_accumulated(*stream, network, vars.params(), images.as<float>(),
                                     labels.as<int>(), accumulate, micro_grads.as<float>(),
                                     grads.as<float>(), host_losses.as<float>());
      }
      apply_gradients(*stream, learning_rate(global_step, steps_per_decay), grads.as<float>(),
                      vars.params());
      update_moving_averages(*stream, moving_average_decay(global_step), vars.params(),
                             vars.averages());
      stream->synchronize();  // the host waits here, once per step, to read the loss
      // docs-end: train-step
      // The log, the divergence check and a checkpoint when one is due.
      run.end_step(step, mean_total_loss(host_losses.as<float>(), accumulate), seconds_since(start));
    }
    bool written = run.write_save_params();
    if (runtime->trace().enabled()) {
      written &= write_output([&] {
        write_trace_files(flags.trace_files, runtime->trace().collect(), "chapter 1: one device");
      });
    }

    Summary summary;
    summary.add("backend", std::string(to_string(runtime->backend())))
        .add("steps", run.steps_run()).add("global_step", static_cast<long long>(run.global_step()))
        .add("batch_size", batch_size).add("accumulate", accumulate)
        .add("final_loss", static_cast<double>(run.last_loss()), 4)
        .add("step_ms", run.log().mean_step_ms(), 2)
        .add("examples_per_sec", run.log().examples_per_sec(), 1);
    run.evaluate_if_asked(device, *stream, network, summary);
    const int status = run.exit_status(written, summary);
    summary.print();
    return status;
  });
}
