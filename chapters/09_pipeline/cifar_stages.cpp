// SPDX-License-Identifier: MIT
// --model cifar: the tutorial's network, its layers cut into p stages (--split), trained
// with m micro-batches per step in the schedule's order.
//
// Each stage keeps the flat parameter buffer but owns, updates and saves only its layers'
// range of it (src/parallel/pipeline_split.hpp). A micro-batch's activations live in a
// Network of the stage (a "slot") from its forward until its backward; a stage needs as
// many slots as the schedule stashes at once (GPipe m, 1F1B p - s), and since forwards and
// backwards each run in micro-batch order, slot mb % slots is free again when forward mb
// is enqueued. Activations and gradients cross stages as in the synthetic mode: the
// sender copies into a mailbox on the receiver's device (one per micro-batch, so a copy
// never overwrites one not yet read) and records an event the receiver's stream waits on.
// Every stage adds each micro-batch's gradients into its sum in micro-batch order, then
// takes the mean and updates: the order chapter 1's --accumulate m uses, hence its bits.
// It keeps the moving averages of its range too, as chapter 1 does, so that a checkpoint
// (the stages' ranges put together) is chapter 1's, and a run killed and resumed ends
// with the bits of one never stopped.
#include "cifar_stages.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "base/usage_error.hpp"
#include "cli/summary.hpp"
#include "data/preprocess.hpp"
#include "harness/input_queue.hpp"
#include "harness/micro_batches.hpp"
#include "harness/stage_trace.hpp"
#include "harness/training.hpp"
#include "model/gradient_accumulation.hpp"
#include "model/network.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/stage_variables.hpp"
#include "parallel/wire_bytes.hpp"

namespace towers {
namespace {

using model::Network;

// One stage: its layers, its device and stream, its gradients and its micro-batches (its
// variables are StageVariables').
struct ModelStage {
  StageLayers layers;
  ParameterRange range;  // its variables in the flat buffer
  Device* device = nullptr;
  std::unique_ptr<Stream> stream;
  Buffer grad_sum, micro_grads;                      // [kNumParameters]; only `range` is used
  std::vector<std::unique_ptr<Network>> slots;       // the activations of micro-batches in flight
  std::vector<Buffer> activations_in, gradients_in;  // mailboxes, one per micro-batch
  std::vector<std::unique_ptr<Event>> forward_done, backward_done;  // per micro-batch
};

// Drains every stage's stream when it goes, before the stages' memory does: if an error
// (out of memory while the stages are built, a failed op) leaves work queued, a queued
// copy must not write into a buffer already freed. Declared after what it protects.
class DrainStreams {
 public:
  explicit DrainStreams(std::vector<ModelStage>& stages) : stages_(stages) {}
  DrainStreams(const DrainStreams&) = delete;
  DrainStreams& operator=(const DrainStreams&) = delete;
  ~DrainStreams() {
    for (ModelStage& stage : stages_) {
      if (!stage.stream) continue;
      try {
        stage.stream->synchronize();
      } catch (...) {  // the error that ends the run is already on its way out
      }
    }
  }

 private:
  std::vector<ModelStage>& stages_;
};

// What to do when a stage's device is full, in this program's flags (the tower chapters'
// advice names --towers, which chapter 9 does not have): what `fact` ran out of, then what
// would shrink it for this schedule and these devices.
[[noreturn]] void refuse_out_of_memory(const OutOfMemory& e, const std::string& what,
                                       PipelineSchedule schedule, int stages, int devices) {
  std::string advice = "Use a smaller --batch-size or more --micro-batches (a stage keeps the "
                       "activations of whole micro-batches, each of batch / m images)";
  if (schedule == PipelineSchedule::kGpipe) {
    advice += ", or --schedule 1f1b (a stage then keeps at most p micro-batches, not all m)";
  }
  if (devices < stages) {
    advice += ", or more --devices (" + std::to_string(stages) + " stages share " +
              std::to_string(devices) + " device(s) now)";
  }
  throw UsageError(e.fact() + " (" + what + "). " + advice + ".");
}

std::size_t output_bytes(int layer, int micro_batch) {
  return sizeof(float) * static_cast<std::size_t>(micro_batch) *
         Network::layer_output_floats(layer);
}

std::string joined(const std::vector<double>& values, int decimals) {
  std::string text;
  char number[32];
  for (double v : values) {
    std::snprintf(number, sizeof number, "%.*f", decimals, v);
    text += (text.empty() ? "" : ",") + std::string(number);
  }
  return text;
}

}  // namespace

TrainingFlags training_flags(const CifarPipelineFlags& flags) {
  TrainingFlags training;
  training.steps = flags.steps;
  training.seed = flags.seed;
  training.data_dir = flags.data_dir;
  training.layout.batch_size = flags.batch_size;
  training.save_params = flags.save_params;
  training.checkpoints = flags.checkpoints;
  training.log_every = 1;  // a line every step: a pipeline's steps are few and slow
  return training;
}

void refuse_cifar_flags_in_synthetic(const CLI::App& app) {
  for (const char* flag : {"--split", "--batch-size", "--steps", "--seed", "--data-dir",
                           "--save-params"}) {
    if (app.get_option(flag)->count() > 0) {
      throw UsageError(std::string(flag) + " trains the real model: add --model cifar");
    }
  }
  for (const char* flag : {"--checkpoint-dir", "--checkpoint-every", "--resume",
                           "--resume-if-present", "--overwrite"}) {
    if (app.get_option(flag)->count() > 0) {
      throw UsageError(std::string(flag) + ": --model synthetic has no parameters to save or "
                       "resume (its stages are stand-in kernels of --kernel-ms). Add --model "
                       "cifar to train the CIFAR-10 model in stages with checkpoints.");
    }
  }
}

std::vector<StageLayers> cifar_split_or_refuse(const CLI::App& app, PipelineSchedule schedule,
                                               const PipelineShape& shape,
                                               const CifarPipelineFlags& flags, bool probe,
                                               bool skip_waits) {
  if (schedule == PipelineSchedule::kInterleaved) {
    throw UsageError(
        "--model cifar runs gpipe or 1f1b: interleaved chunks of the real model "
        "are not written yet; use --model synthetic for interleaved");
  }
  for (const char* flag : {"--kernel-ms", "--backward-ratio", "--probe", "--skip-waits"}) {
    if (app.get_option(flag)->count() > 0 || (probe && std::string(flag) == "--probe") ||
        (skip_waits && std::string(flag) == "--skip-waits")) {
      throw UsageError(std::string(flag) +
                       " belongs to --model synthetic; the real model's "
                       "stages cost what their layers cost");
    }
  }
  if (shape.stages > model::kLayerCount) {
    throw UsageError("--stages " + std::to_string(shape.stages) + ": the model has " +
                     std::to_string(model::kLayerCount) + " layers to cut between; use at most " +
                     std::to_string(model::kLayerCount) + " stages");
  }
  if (auto problem = micro_batch_problem(flags.batch_size, shape.micro_batches, "--micro-batches");
      !problem.empty()) {
    throw UsageError(problem);
  }
  if (flags.split.empty()) return default_split(shape.stages);
  std::string problem;
  auto split = parse_split(flags.split, shape.stages, problem);
  if (split.empty()) throw UsageError(problem);
  return split;
}

int run_cifar_pipeline(Runtime& runtime, PipelineSchedule schedule, const PipelineShape& shape,
                       const std::vector<StageLayers>& split, const CifarPipelineFlags& flags,
                       TrainingRun& run, const TraceFiles& trace_files) {
  const int p = shape.stages, m = shape.micro_batches;
  const int b = flags.batch_size / m;  // images per micro-batch
  // One thread per op, as every simulated device gets: the bits then do not depend on
  // the machine, and chapter 1 with --host-threads 1 computes the same ones.
  ops::set_host_op_threads(1);
  // The input first: a checkpoint of another --batch-size or --seed is refused before
  // the stages are built.
  data::Dataset train = load_training_set(flags.data_dir);
  InputQueue queue(train, flags.batch_size, flags.seed);
  run.restore_input(queue);
  const std::size_t param_bytes = model::kNumParameters * sizeof(float);

  std::vector<ModelStage> stages(static_cast<std::size_t>(p));
  StageVariables vars;  // where the variables live: a range per stage
  const DrainStreams drain_stages(stages);  // after the buffers: it goes before them
  std::vector<StageStream> stage_streams;
  std::vector<std::vector<StageOp>> schedules;
  for (int s = 0; s < p; ++s) try {  // a device too small is refused in this program's flags
    ModelStage& stage = stages[s];
    stage.layers = split[s];
    stage.range = stage_parameters(stage.layers);
    stage.device = &runtime.device(s % runtime.device_count());
    stage.stream = stage.device->create_stream();
    stage_streams.push_back({stage.device->index(), stage.stream->index()});
    schedules.push_back(stage_schedule(schedule, shape, s));
    vars.add_stage(*stage.device, *stage.stream, stage.range);
    stage.grad_sum = stage.device->allocate(param_bytes, MemoryCategory::kGradients);
    stage.micro_grads = stage.device->allocate(param_bytes, MemoryCategory::kGradients);
    const int slots = peak_stashed_activations(schedules[s]);
    for (int i = 0; i < slots; ++i) {
      stage.slots.push_back(std::make_unique<Network>(*stage.device, b));
    }
    for (int mb = 0; mb < m; ++mb) {
      if (s > 0) {  // mailboxes on this stage's device, written by its neighbours
        stage.activations_in.push_back(stage.device->allocate(output_bytes(split[s].first - 1, b),
                                                              MemoryCategory::kCommunication));
      }
      if (s + 1 < p) {
        stage.gradients_in.push_back(
            stage.device->allocate(output_bytes(split[s].last, b), MemoryCategory::kCommunication));
      }
      stage.forward_done.push_back(stage.device->create_wait_event());
      stage.backward_done.push_back(stage.device->create_wait_event());
    }
  } catch (const OutOfMemory& e) {
    refuse_out_of_memory(e, "stage " + std::to_string(s) + " of " + std::to_string(p) +
                                ", micro-batches of " + std::to_string(b) + " images",
                         schedule, p, runtime.device_count());
  }
  // From --seed, or the resumed checkpoint's (its input restored above); Ctrl-C from here.
  run.start(vars, &queue, flags.batch_size, 1, "cross-entropy");
  std::printf(
      "the CIFAR-10 model in %d stage(s) on %d %s device(s), %d micro-batch(es) of %d "
      "image(s), schedule %s, --split %s\n",
      p, runtime.device_count(), std::string(to_string(runtime.backend())).c_str(), m, b,
      to_string(schedule).c_str(), p > 1 ? split_flag(split).c_str() : "(none)");
  for (int s = 0; s < p; ++s) {
    std::printf("stage %d: %-28s %8zu parameters, %d activation slot(s): %s\n", s,
                stage_name(split[s]).c_str(), stages[s].range.count,
                static_cast<int>(stages[s].slots.size()), to_string(schedules[s]).c_str());
  }

  // The batch: images on the first stage's device, labels on the last's (the loss).
  ModelStage& first = stages.front();
  ModelStage& last = stages.back();
  Buffer images, labels, host_images, host_labels, host_losses;
  try {
    images = first.device->allocate(sizeof(float) * flags.batch_size * data::kCropValues);
    labels = last.device->allocate(sizeof(int) * flags.batch_size);
    host_images = first.device->allocate_pinned(images.bytes());
    host_labels = last.device->allocate_pinned(labels.bytes());
    host_losses = last.device->allocate_pinned(sizeof(float) * model::kLossCount * m);
  } catch (const OutOfMemory& e) {
    refuse_out_of_memory(e, "the batch of " + std::to_string(flags.batch_size) + " images",
                         schedule, p, runtime.device_count());
  }
  // Declared after the batch's buffers, gone before them: no queued copy outlives them.
  const DrainStreams drain_batch(stages);

  // Every copy between two stages' devices is counted in `wire` (bytes on the wire).
  WireBytes wire;
  // docs-begin: model-stage-op
  // One op of stage s on the real model: receive, run its layers, send, record.
  auto enqueue_stage_op = [&](int s, const StageOp& op) {
    ModelStage& stage = stages[s];
    Stream& stream = *stage.stream;
    const int mb = op.micro_batch;
    stream.set_tower(mb);
    Network& net = *stage.slots[mb % stage.slots.size()];
    const auto [from, to] = stage.layers;
    const float* params = vars.params(s);
    if (op.pass == Pass::kForward) {
      if (s > 0) {  // the activations the stage before sent, into this slot's input
        stream.wait(*stages[s - 1].forward_done[mb]);
        stream.copy(net.layer_output(from - 1), stage.activations_in[mb].data(),
                    output_bytes(from - 1, b), "receive activations");
      }
      net.forward_layers(stream, params, from, to,
                         images.as<float>() + static_cast<std::size_t>(mb) * b * data::kCropValues);
      if (s + 1 == p) {  // the last stage: the loss, and the logits' gradient
        net.loss(stream, params, labels.as<int>() + static_cast<std::size_t>(mb) * b);
        stream.copy(host_losses.as<float>() + mb * model::kLossCount, net.losses(),
                    sizeof(float) * model::kLossCount, "copy loss");
      } else {  // a peer copy into the next stage's mailbox
        stream.copy(stages[s + 1].activations_in[mb].data(), net.layer_output(to),
                    output_bytes(to, b), "send activations");
        wire.add(stage.device->index(), stages[s + 1].device->index(), output_bytes(to, b));
      }
      stream.record(*stage.forward_done[mb]);
    } else {
      if (s + 1 < p) {  // the gradient the stage after sent
        stream.wait(*stages[s + 1].backward_done[mb]);
        stream.copy(net.output_gradient(to), stage.gradients_in[mb].data(), output_bytes(to, b),
                    "receive gradient");
      }
      net.backward_layers(stream, params, from, to, stage.micro_grads.as<float>());
      if (stage.range.count > 0) {  // sum += this micro-batch's gradients, in order
        model::add_micro_batch_gradients(stream, static_cast<int>(stage.range.count),
                                         stage.micro_grads.as<float>() + stage.range.offset,
                                         stage.grad_sum.as<float>() + stage.range.offset);
      }
      if (s > 0) {
        stream.copy(stages[s - 1].gradients_in[mb].data(), net.output_gradient(from - 1),
                    output_bytes(from - 1, b), "send gradient");
        wire.add(stage.device->index(), stages[s - 1].device->index(), output_bytes(from - 1, b));
      }
      stream.record(*stage.backward_done[mb]);
    }
  };
  // docs-end: model-stage-op

  runtime.trace().set_enabled(true);
  const std::int64_t steps_per_decay = model::decay_steps(flags.batch_size, 1);
  std::vector<double> busy_ms(p, 0.0);
  double window_ms = 0, step_ms = 0, cross_entropy = 0;
  std::vector<TraceEvent> all_events;
  for (int step = 0; step < flags.steps && !run.stopping(); ++step) {
    const auto step_start = std::chrono::steady_clock::now();
    const std::int64_t global_step = run.first_global_step() + step;  // resumes count on
    runtime.trace().set_step(step);
    queue.dequeue(host_images.as<float>(), host_labels.as<std::int32_t>());
    first.stream->copy(images.data(), host_images.data(), images.bytes(), "copy images");
    last.stream->copy(labels.data(), host_labels.data(), labels.bytes(), "copy labels");
    for (auto& stage : stages) {
      if (stage.range.count == 0) continue;
      model::clear_gradient_sum(*stage.stream, static_cast<int>(stage.range.count),
                                stage.grad_sum.as<float>() + stage.range.offset);
    }
    enqueue_in_dependency_order(shape, schedules, enqueue_stage_op);
    // Each stage updates its own variables once its last backward is done: no stage
    // waits for another here, and nothing crosses stages but activations and gradients.
    const float lr = model::learning_rate(global_step, steps_per_decay);
    const float decay = model::moving_average_decay(global_step);
    for (int s = 0; s < p; ++s) {
      ModelStage& stage = stages[s];
      if (stage.range.count == 0) continue;
      const int count = static_cast<int>(stage.range.count);
      float* sum = stage.grad_sum.as<float>() + stage.range.offset;
      model::finish_gradient_mean(*stage.stream, count, m, sum);
      float* params = vars.params(s) + stage.range.offset;
      model::apply_gradients_range(*stage.stream, lr, count, sum, params);
      ops::ema_update(*stage.stream, count, decay, params, vars.averages(s) + stage.range.offset);
    }
    for (auto& stage : stages) stage.stream->synchronize();
    const double step_seconds = seconds_since(step_start);
    step_ms += 1000.0 * step_seconds;
    // The loss: cross-entropy only. The weight-decay term reads local3's and local4's
    // weights, which the last stage does not own (its copy of them is never updated).
    cross_entropy = 0;
    for (int mb = 0; mb < m; ++mb) cross_entropy += host_losses.as<float>()[mb * model::kLossCount];
    cross_entropy /= m;
    // The log line, the divergence check, a checkpoint when due (chapter 1's cadence).
    run.end_step(step, static_cast<float>(cross_entropy), step_seconds);
    const std::vector<TraceEvent> events = runtime.trace().collect();
    runtime.trace().clear();
    const StageBusy busy = stage_busy(events, stage_streams);
    window_ms += busy.window_ms;
    for (int s = 0; s < p; ++s) busy_ms[s] += busy.busy_ms[s];
    if (!trace_files.json.empty() || !trace_files.svg.empty()) {
      all_events.insert(all_events.end(), events.begin(), events.end());
    }
  }
  // Means over the steps run: --steps, or fewer after Ctrl-C.
  const int mean_over = std::max(1, run.steps_run());
  window_ms /= mean_over;
  step_ms /= mean_over;
  for (double& ms : busy_ms) ms /= mean_over;

  // The slowest stage sets the pace: no step is shorter than its busy time.
  const int slowest =
      static_cast<int>(std::max_element(busy_ms.begin(), busy_ms.end()) - busy_ms.begin());
  std::printf("\nper step, from the trace: ");
  for (int s = 0; s < p; ++s) {
    std::printf("stage %d busy %.1f ms%s", s, busy_ms[s], s + 1 < p ? ", " : "");
  }
  std::printf(
      "\nthe slowest stage, %d (%s), was busy %.0f%% of the step (%.1f ms): it sets the pace\n",
      slowest, stage_name(split[slowest]).c_str(), 100.0 * busy_ms[slowest] / window_ms, window_ms);
  bool written = run.write_save_params();
  if (!all_events.empty()) {
    written &= write_output([&] {
      write_trace_files(trace_files, all_events, "chapter 9: the CIFAR-10 model in stages");
    });
  }
  std::string stage_layers, slots;
  for (const auto& stage : split) {
    stage_layers += (stage_layers.empty() ? "" : ",") + stage_name(stage);
  }
  for (const auto& stage : stages) {
    slots += (slots.empty() ? "" : ",") + std::to_string(stage.slots.size());
  }
  Summary summary;
  summary.add("backend", std::string(to_string(runtime.backend())))
      .add("devices", runtime.device_count())
      .add("model", "cifar")
      .add("schedule", to_string(schedule))
      .add("stages", p)
      .add("micro_batches", m)
      .add("batch_size", flags.batch_size)
      .add("steps", run.steps_run())
      .add("global_step", static_cast<long long>(run.global_step()))
      .add("split", p > 1 ? split_flag(split) : "none")
      .add("stage_layers", stage_layers)
      .add("activation_slots", slots)
      .add("stage_busy_ms", joined(busy_ms, 1))
      .add("slowest_stage", slowest)
      .add("trace_ms", window_ms, 1)
      .add("step_ms", step_ms, 1)
      .add("final_cross_entropy", cross_entropy, 4)
      .add("wire_bytes", static_cast<long long>(wire.total()))
      .add("wire_bytes_per_step", static_cast<double>(wire.total()) / mean_over, 1);
  // Every stage's memory ledger, as chapters 8 and 10 print it: the largest over the
  // stages' devices per category, and each stage's (chapter 11's plan predicts both).
  // The workspace only where a device has any (on GPUs).
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    const auto category = static_cast<MemoryCategory>(c);
    std::vector<double> per_stage;
    for (const auto& stage : stages) {
      per_stage.push_back(static_cast<double>(stage.device->memory().peak(category)));
    }
    const double largest = *std::max_element(per_stage.begin(), per_stage.end());
    if (category == MemoryCategory::kWorkspace && largest == 0) continue;
    const std::string name(category_name(category));
    summary.add("peak_" + name + "_bytes", static_cast<long long>(largest))
        .add("peak_" + name + "_bytes_per_stage", joined(per_stage, 0));
  }
  const int status = run.exit_status(written, summary);
  summary.print();
  return status;
}

}  // namespace towers
