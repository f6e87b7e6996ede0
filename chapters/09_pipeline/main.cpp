// SPDX-License-Identifier: MIT
// Chapter 9: the towers become stages — pipeline parallel.
// Chapters 2-7 gave every device the whole model and a slice of the batch. Here the
// model's layers are cut into p stages, one per device, and the batch into m
// micro-batches. Stage s can run a micro-batch's forward only after stage s-1 has sent
// its activations, and its backward only after stage s+1 has sent the gradient: this loop
// really is partly serial. A schedule (GPipe, 1F1B, interleaved) orders each stage's ops
// so that the stages overlap except for a *bubble* of (p-1)/(v*m + p-1) of their time.
//
// The stages are simulated devices (or GPUs), one stream each; a stage's forward is a
// stand-in kernel of --kernel-ms, its backward --backward-ratio times that, so every
// stage costs the same and the formula holds. Activations and gradients cross stages as
// device copies ordered by events, as the ring all-reduce's chunks do (chapter 4). The
// bubble is then *read from the trace*: each stage's idle time over the whole flush.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/usage_error.hpp"
#include "cifar_stages.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "harness/stage_trace.hpp"
#include "harness/training.hpp"  // write_output
#include "model/network.hpp"
#include "model/ops.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "runtime/busy.hpp"
#include "runtime/rendezvous.hpp"
#include "runtime/runtime.hpp"

using namespace towers;

namespace {

// Floats per micro-batch's activations (and gradients): small, the lesson is the order.
constexpr int kActivationFloats = 256;

// One virtual stage's buffers for one micro-batch, on the device of the stage running it.
struct Slot {
  Buffer input;     // activations from the virtual stage before (or the micro-batch)
  Buffer output;    // this virtual stage's activations, stashed until the backward
  Buffer grad_in;   // gradient from the virtual stage after (or of the loss)
  Buffer grad_out;  // gradient this virtual stage sends back
  std::unique_ptr<Event> forward_done;   // output has reached the next stage
  std::unique_ptr<Event> backward_done;  // grad_out has reached the previous stage
};

// A first op on every stage's stream that holds it until open(). Declared after the
// buffers the stages use, it is destroyed before them: if an error left it closed, it
// opens and waits for the streams, so no queued op outlives the memory it touches and no
// worker waits forever. On GPUs the op is empty.
class StartGate {
 public:
  explicit StartGate(std::vector<std::unique_ptr<Stream>>& streams) {
    std::shared_future<void> opened = open_.get_future().share();
    for (auto& stream : streams) {
      stream->launch("gate", [opened] { opened.wait(); }, [](const CudaLaunchContext&) {});
      streams_.push_back(stream.get());
    }
  }
  StartGate(const StartGate&) = delete;
  StartGate& operator=(const StartGate&) = delete;
  ~StartGate() {
    if (opened_) return;
    open();
    for (Stream* stream : streams_) {
      try {
        stream->synchronize();
      } catch (...) {  // the error that closed the gate is already on its way out
      }
    }
  }
  void open() {
    if (!opened_) open_.set_value();
    opened_ = true;
  }

 private:
  std::promise<void> open_;
  bool opened_ = false;
  std::vector<Stream*> streams_;
};

std::string joined(const std::vector<int>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

std::string joined(const std::vector<double>& values) {
  std::string text;
  char number[32];
  for (double v : values) {
    std::snprintf(number, sizeof number, "%.3f", v);
    text += (text.empty() ? "" : ",") + std::string(number);
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 9: the model's layers as p pipeline stages on p devices; each stage "
               "runs its schedule of micro-batch forwards and backwards, and the bubble is "
               "read from the trace."};
  RuntimeOptions runtime_options;
  TraceFiles trace_files;
  std::string schedule_name = "1f1b";
  PipelineShape shape{4, 8, 1};
  double kernel_ms = 10;
  double backward_ratio = 2;
  bool skip_waits = false;
  bool probe = false;
  std::string model_name = "synthetic";
  CifarPipelineFlags cifar;
  add_runtime_flags(app, runtime_options);
  add_trace_flags(app, trace_files);
  app.add_option("--schedule", schedule_name, "gpipe, 1f1b or interleaved")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            if (parse_pipeline_schedule(name)) return "";
            return "'" + name + "' is not a schedule; use gpipe, 1f1b or interleaved";
          },
          "gpipe|1f1b|interleaved"));
  app.add_option("--stages", shape.stages, "p: pipeline stages, one per device")
      ->capture_default_str()->check(whole_number(1, 64, "stages"));
  app.add_option("--micro-batches", shape.micro_batches, "m: micro-batches per batch")
      ->capture_default_str()->check(whole_number(1, 1024, "micro-batches"));
  app.add_option("--virtual", shape.chunks,
                 "v: model chunks per stage (interleaved only; 1 otherwise)")
      ->capture_default_str()->check(whole_number(1, 16, "chunks per stage"));
  app.add_option("--kernel-ms", kernel_ms,
                 "one stage's forward of one micro-batch, in ms (split over its chunks)")
      ->capture_default_str()->check(finite_number(0.1, 10000, " ms"));
  app.add_option("--backward-ratio", backward_ratio, "a backward costs this many forwards")
      ->capture_default_str()->check(finite_number(0.1, 100, " forwards"));
  app.add_flag("--probe", probe,
               "prove with a rendezvous whether the stages ever all run at once: each stage "
               "probes inside its forward of micro-batch min(p-s-1, m-1), the moment the "
               "pipeline is full (rendezvous=met|timeout; the probes' waits count as busy)");
  app.add_option("--model", model_name,
                 "synthetic: equal stand-in stages of --kernel-ms (the formula's case); cifar: "
                 "the CIFAR-10 model's layers cut into the stages, trained for --steps")
      ->capture_default_str()->check(CLI::IsMember({"synthetic", "cifar"}));
  app.add_option("--split", cifar.split,
                 "--model cifar: the first layer of each stage after the first, in forward "
                 "order, e.g. conv2,norm2,local3 (default: the most even split)");
  app.add_option("--batch-size", cifar.batch_size,
                 "--model cifar: images per step, cut into --micro-batches equal parts")
      ->capture_default_str()->check(whole_number(1, model::kMaxBatchSize, "images"));
  app.add_option("--steps", cifar.steps, "--model cifar: training steps")
      ->capture_default_str()->check(whole_number(1, 1000000, "steps"));
  app.add_option("--seed", cifar.seed, "--model cifar: initialization and input, as chapter 1's")
      ->capture_default_str()->check(unsigned_64());  // "-1" wrapped to 2^64 - 1 unchecked
  app.add_option("--data-dir", cifar.data_dir,
                 "--model cifar: CIFAR-10 binaries (default: the embedded synthetic set)");
  add_save_params_flag(app, cifar.save_params,
                       " (--model cifar: the same bytes as 01_single_gpu --accumulate m's)");
  add_checkpoint_flags(app, cifar.checkpoints);  // chapter 1's, for --model cifar
  app.add_flag("--skip-waits", skip_waits,
               "for tests: stages do not wait for each other's activations and gradients "
               "(the trace then shows ops out of order and the data check fails)");

  return run_program(app, argc, argv, [&] {
    // Every flag is settled before any device work.
    const PipelineSchedule schedule = *parse_pipeline_schedule(schedule_name);
    if (auto problem = pipeline_shape_problem(schedule, shape); !problem.empty()) {
      throw UsageError(problem);
    }
    const bool real_model = model_name == "cifar";
    std::vector<StageLayers> split;
    std::unique_ptr<TrainingRun> run;  // --checkpoint-dir settled before any device work
    if (real_model) {
      split = cifar_split_or_refuse(app, schedule, shape, cifar, probe, skip_waits);
      run = std::make_unique<TrainingRun>(training_flags(cifar));
    } else {
      refuse_cifar_flags_in_synthetic(app);
    }
    const int p = shape.stages;
    const int num_virtual = shape.virtual_stages();
    // One simulated device per stage unless --devices says otherwise; with fewer devices
    // (or GPUs) than stages, stages share them, each on its own stream.
    if (!runtime_options.devices && resolve_backend(runtime_options.backend) == Backend::kHost) {
      runtime_options.devices = p;
    }
    auto runtime = Runtime::create(runtime_options);
    if (real_model) {
      return run_cifar_pipeline(*runtime, schedule, shape, split, cifar, *run, trace_files);
    }

    // Stage s: its device, its stream, its schedule.
    std::vector<Device*> devices;
    std::vector<std::unique_ptr<Stream>> streams;
    std::vector<StageStream> stage_streams;
    std::vector<std::vector<StageOp>> schedules;
    for (int s = 0; s < p; ++s) {
      devices.push_back(&runtime->device(s % runtime->device_count()));
      streams.push_back(devices[s]->create_stream());
      stage_streams.push_back({devices[s]->index(), streams[s]->index()});
      schedules.push_back(stage_schedule(schedule, shape, s));
    }
    std::printf("%d stage(s) on %d %s device(s), %d micro-batch(es), schedule %s%s; "
                "forward %.2f ms, backward %.2f ms per stage and micro-batch\n",
                p, runtime->device_count(), std::string(to_string(runtime->backend())).c_str(),
                shape.micro_batches, to_string(schedule).c_str(),
                shape.chunks > 1 ? (", " + std::to_string(shape.chunks) + " chunks per stage").c_str()
                                 : "",
                kernel_ms, kernel_ms * backward_ratio);
    for (int s = 0; s < p; ++s) {
      std::printf("stage %d (warm-up %d): %s\n", s, warmup_forwards(schedule, shape, s),
                  to_string(schedules[s], shape.chunks > 1).c_str());
    }

    // Buffers: slots[virtual stage][micro-batch] on the device of the stage that runs it,
    // plus a vector of ones per stage (a stage's "layer" adds one to what it receives).
    const std::size_t bytes = kActivationFloats * sizeof(float);
    std::vector<std::vector<Slot>> slots(num_virtual);
    for (int vs = 0; vs < num_virtual; ++vs) try {
      Device& device = *devices[vs % p];
      for (int mb = 0; mb < shape.micro_batches; ++mb) {
        Slot slot{device.allocate(bytes), device.allocate(bytes), device.allocate(bytes),
                  device.allocate(bytes), device.create_wait_event(), device.create_wait_event()};
        slots[vs].push_back(std::move(slot));
      }
    } catch (const OutOfMemory& e) {  // in this mode's flags: it has no batch and no towers
      throw UsageError(e.fact() + " (" + std::to_string(num_virtual) + " virtual stage(s) of " +
                       std::to_string(shape.micro_batches) + " micro-batch slots on " +
                       std::to_string(runtime->device_count()) + " device(s)). Use fewer "
                       "--micro-batches or --virtual chunks (a stage keeps 4 buffers per "
                       "micro-batch and chunk), or more --devices (stages share a device when "
                       "there are fewer devices than stages).");
    }
    std::vector<Buffer> ones;
    for (int s = 0; s < p; ++s) {
      ones.push_back(devices[s]->allocate(bytes));
      ops::fill(*streams[s], kActivationFloats, 1.0f, ones[s].as<float>());
    }
    // Micro-batch mb's input is 1000 * mb in every element.
    for (int mb = 0; mb < shape.micro_batches; ++mb) {
      ops::fill(*streams[0], kActivationFloats, 1000.0f * mb, slots[0][mb].input.as<float>());
    }
    // On GPUs, what a first use makes is made now, not inside the measured flush: each
    // stream's cuBLAS handle (the axpy below), the first load of each kernel's module
    // (CUDA loads them lazily) and the first peer copy. Otherwise the trace would time
    // start-up, and the bubble and probe would measure it. The host backend has nothing
    // to make: it skips this, and its runs stay as they were.
    if (runtime->backend() == Backend::kCuda) {
      for (int s = 0; s < p; ++s) {
        Buffer scratch = devices[s]->allocate(bytes);
        ops::axpy(*streams[s], kActivationFloats, 0.0f, ones[s].as<float>(), scratch.as<float>());
        busy_kernel(*streams[s], 0.01, "warm-up");
        const int next = (s + 1) % p;
        streams[s]->copy(scratch.data(), ones[next].data(), bytes, "warm-up copy");
        streams[s]->synchronize();  // before `scratch` is freed
      }
    }
    for (auto& stream : streams) stream->synchronize();

    // The rendezvous: every stage's probe waits (at most 500 ms) until all stages are
    // inside theirs. Stage s probes in its forward of micro-batch min(p-s-1, m-1), after
    // the wait for its input. With m >= p those forwards all run at the same moment, the
    // pipeline full (ideally at (p-1) forwards' time). With m = 1 each stage's probe needs
    // the stage before's forward, probe included, to be done: one probe at a time.
    std::unique_ptr<Rendezvous> rendezvous;
    if (probe) rendezvous = std::make_unique<Rendezvous>(*runtime, p, std::chrono::milliseconds(500));
    auto probes_here = [&](int s, const StageOp& op) {
      return rendezvous && op.pass == Pass::kForward && op.chunk == 0 &&
             op.micro_batch == std::min(p - s - 1, shape.micro_batches - 1);
    };

    runtime->trace().set_enabled(true);
    runtime->trace().set_step(0);
    // docs-begin: stage-op
    // Enqueues one op of stage s: wait for what it needs, compute, send, record.
    auto enqueue_stage_op = [&](int s, const StageOp& op) {
      Stream& stream = *streams[s];
      stream.set_tower(op.micro_batch);  // the trace tags the op with its micro-batch
      const int vs = virtual_stage(shape, s, op.chunk);
      Slot& slot = slots[vs][op.micro_batch];
      const double ms = kernel_ms / shape.chunks;
      if (op.pass == Pass::kForward) {
        // Waits for the activations the stage before sent (event, not host).
        if (vs > 0 && !skip_waits) stream.wait(*slots[vs - 1][op.micro_batch].forward_done);
        if (probes_here(s, op)) rendezvous->enqueue(stream);  // --probe: all stages at once?
        busy_kernel(stream, ms, to_string(op, true));  // this stage's layers
        stream.copy(slot.output.data(), slot.input.data(), bytes, "activations");
        ops::axpy(stream, kActivationFloats, 1.0f, ones[s].as<float>(), slot.output.as<float>());
        if (vs + 1 < num_virtual) {  // send them on: a peer copy into the next stage
          stream.copy(slots[vs + 1][op.micro_batch].input.data(), slot.output.data(), bytes,
                      "send activations");
        }
        stream.record(*slot.forward_done);
      } else {
        if (vs + 1 == num_virtual) {  // the last stage: the loss's gradient starts here
          stream.copy(slot.grad_in.data(), slot.output.data(), bytes, "loss gradient");
        } else if (!skip_waits) {     // waits for the gradient the stage after sent
          stream.wait(*slots[vs + 1][op.micro_batch].backward_done);
        }
        busy_kernel(stream, ms * backward_ratio, to_string(op, true));
        stream.copy(slot.grad_out.data(), slot.grad_in.data(), bytes, "gradient");
        ops::axpy(stream, kActivationFloats, 1.0f, ones[s].as<float>(), slot.grad_out.as<float>());
        if (vs > 0) {  // send it back: a peer copy into the previous stage
          stream.copy(slots[vs - 1][op.micro_batch].grad_in.data(), slot.grad_out.data(), bytes,
                      "send gradient");
        }
        stream.record(*slot.backward_done);
      }
    };
    // docs-end: stage-op

    // The stages start together once the whole flush is enqueued, so that the trace times
    // the devices' schedule, not how fast a busy host enqueues. Host backend: a first op
    // on every stage that waits for the host; on GPUs the host enqueues far ahead anyway.
    StartGate gate(streams);
    const auto start = std::chrono::steady_clock::now();
    // docs-begin: stage-loop
    // The host walks the stages' schedules and only enqueues. An event waited on before
    // it is recorded does not wait (as in CUDA), so an op is enqueued only after the op it
    // depends on (src/parallel/pipeline_schedule.cpp): each pass takes every stage as far
    // as it can go.
    enqueue_in_dependency_order(shape, schedules, enqueue_stage_op);
    gate.open();  // everything is enqueued: the stages may start
    for (auto& stream : streams) stream->synchronize();  // the one place the host waits
    // docs-end: stage-loop
    const double step_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    // Did the data flow in order? Micro-batch mb went through every virtual stage forward
    // (+1 each) and back (+1 each): 1000*mb + 2*(p*v) at stage 0.
    Buffer host = devices[0]->allocate_pinned(bytes);
    int wrong = 0;
    std::string first_wrong;
    for (int mb = 0; mb < shape.micro_batches; ++mb) {
      streams[0]->copy(host.data(), slots[0][mb].grad_out.data(), bytes, "check gradient");
      streams[0]->synchronize();
      const float expected = 1000.0f * mb + 2.0f * num_virtual;
      for (int i = 0; i < kActivationFloats; ++i) {
        const float got = host.as<float>()[i];
        if (got != expected && wrong++ == 0) {
          first_wrong = "micro-batch " + std::to_string(mb) + " has " + std::to_string(got) +
                        ", not " + std::to_string(expected);
        }
      }
    }

    const auto events = runtime->trace().collect();
    const StageTraceAnalysis analysis = analyze_stage_trace(events, shape, stage_streams);
    const auto ideal = simulate_pipeline(schedule, shape, kernel_ms, kernel_ms * backward_ratio);
    std::vector<int> expected_peaks;
    for (const auto& ops : schedules) expected_peaks.push_back(peak_stashed_activations(ops));
    double ideal_ms = 0;
    for (const auto& stage : ideal) ideal_ms = std::max(ideal_ms, stage.back().end);
    // The formula's timeline and the measured one, on one time axis.
    const double axis_ms = std::max(ideal_ms, analysis.window_ms);
    std::printf("\nschedule %s on ideal devices (hand-offs free): the formula\n%s",
                to_string(schedule).c_str(), render_stage_gantt(ideal, 64, axis_ms).c_str());
    std::printf("\nschedule %s, from the trace\n%s", to_string(schedule).c_str(),
                render_stage_gantt(analysis.timeline, 64, axis_ms).c_str());
    std::printf("bubble: measured %.3f (mean idle share per stage), formula (p-1)/(%sm+p-1) = %.3f\n",
                analysis.bubble, shape.chunks > 1 ? "v*" : "",
                ideal_bubble_fraction(schedule, shape));
    // A trace that cannot be written (a full disk) fails the run, but after the summary:
    // the measurement is not lost with it.
    const bool written = write_output(
        [&] { write_trace_files(trace_files, events, "chapter 9: pipeline, " + to_string(schedule)); });
    Summary()
        .add("backend", std::string(to_string(runtime->backend())))
        .add("devices", runtime->device_count())
        .add("schedule", to_string(schedule))
        .add("stages", p)
        .add("micro_batches", shape.micro_batches)
        .add("virtual", shape.chunks)
        .add("warmup_forwards", joined([&] {
               std::vector<int> counts;
               for (int s = 0; s < p; ++s) counts.push_back(warmup_forwards(schedule, shape, s));
               return counts;
             }()))
        .add("bubble_share", analysis.bubble, 3)
        .add("bubble_formula", ideal_bubble_fraction(schedule, shape), 3)
        .add("stage_idle_share", joined(analysis.idle_fraction))
        .add("peak_activations", *std::max_element(analysis.peak_activations.begin(),
                                                   analysis.peak_activations.end()))
        .add("peak_activations_per_stage", joined(analysis.peak_activations))
        .add("schedule_peak_activations", joined(expected_peaks))
        .add("stage_ops", analysis.stage_ops)
        .add("order_violations", analysis.order_violations)
        .add("step_ms", step_ms, 1)
        .add("trace_ms", analysis.window_ms, 1)
        .add("ideal_ms", ideal_ms, 1)
        .add("data_checked", wrong == 0 ? "yes" : "no")
        .append(rendezvous ? Summary()
                                 .add("rendezvous", rendezvous->all_met() ? "met" : "timeout")
                                 .add("probe_concurrent_stages", rendezvous->max_present())
                           : Summary())
        .print();
    if (wrong != 0) {
      std::fprintf(stderr, "error: %d gradient value(s) at stage 0 are wrong (%s): an op ran "
                   "before the activations or gradient it needs had arrived\n", wrong,
                   first_wrong.c_str());
      return 1;
    }
    return written ? 0 : 1;
  });
}
