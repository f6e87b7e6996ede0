// SPDX-License-Identifier: MIT
#include "harness/tower_training.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "cli/output_paths.hpp"
#include "data/iterator_plan.hpp"
#include "data/preprocess.hpp"
#include "harness/divergence.hpp"
#include "harness/evaluate.hpp"
#include "harness/link_sizing.hpp"
#include "harness/tower_flags.hpp"
#include "model/checkpoint.hpp"
#include "trace/analysis.hpp"
#include "model/ops.hpp"
#include "model/parameters.hpp"
#include "runtime/graph.hpp"
#include "trace/span_names.hpp"

namespace towers {

RuntimeOptions TowerTraining::sized_runtime(TrainingFlags& flags) {
  LinkModel& link = flags.runtime.link;
  if (!link.sized_to_compute) return flags.runtime;
  // Asked for cuda (or auto finding a GPU): said before anything looks for the GPU.
  if (flags.runtime.backend == BackendChoice::kCuda ||
      resolve_backend(flags.runtime.backend) != Backend::kHost) {
    throw UsageError("--link-gbps auto sizes the simulated link between host devices; on "
                     "GPUs the real link is used. Leave it out, or add --backend host.");
  }
  const int towers = flags.layout.towers > 0
                         ? flags.layout.towers
                         : flags.runtime.devices.value_or(kDefaultHostDevices) *
                               flags.layout.towers_per_device;
  const LinkSizing sizing = size_link_to_backward(towers, flags.layout.batch_size);
  link.gbps = sizing.gbps;
  link.sized_to_compute = false;
  std::printf("%s\n", sizing.gbps > 0 ? sizing.describe(towers).c_str()
                                      : "link: --link-gbps auto: one tower, no link needed");
  return flags.runtime;
}

TowerTraining::TowerTraining(const TrainingFlags& flags, bool probe, TowerInput input,
                             int job_towers)
    : flags_(flags), run_(flags), runtime_(Runtime::create(sized_runtime(flags_))) {
  // One compute thread per simulated device, so N devices use N cores and the trace
  // shows honest overlap. Real GPUs ignore this.
  ops::set_host_op_threads(1);
  set_ = make_towers(*runtime_, flags.layout);
  train_ = load_training_set(flags.data_dir);
  job_towers_ = job_towers > 0 ? job_towers : num_towers();
  // The batches a step reads: one per tower, or one shared by all (chapter 10's ranks).
  batches_ = input == TowerInput::kSharedBatch ? 1 : job_towers_;
  const int global_batch = batches_ * flags.layout.batch_size;
  Device& host_side = runtime_->device(0);
  if (input != TowerInput::kOwnIterators) {
    queue_ = std::make_unique<InputQueue>(train_, global_batch, flags.seed);
    images_ = host_side.allocate_pinned(sizeof(float) * global_batch * data::kCropValues);
    labels_ = host_side.allocate_pinned(sizeof(std::int32_t) * global_batch);
  }
  traces_ = std::make_unique<StepTraces>(*runtime_, flags.trace_files);
  if (probe) {
    rendezvous_ = std::make_unique<Rendezvous>(*runtime_, num_towers(), std::chrono::milliseconds(500));
  }
  std::printf("%d tower(s) of batch %d on %d %s device(s)\n", num_towers(), flags.layout.batch_size,
              runtime_->device_count(), std::string(to_string(runtime_->backend())).c_str());
}

TowerTraining::TowerTraining(const TowerFlags& flags, TowerInput input)
    : TowerTraining(flags, flags.probe, input) {}

TowerTraining::~TowerTraining() = default;

void TowerTraining::start(Placement& variables, InputSource* own_input) {
  if (queue_ && own_input) {
    throw std::logic_error("TowerTraining::start: the towers read the global batch's queue, "
                           "so they have no input of their own");
  }
  run_.start(variables, queue_ ? queue_.get() : own_input, batches_ * flags_.layout.batch_size,
             batches_);
}

StepScope TowerTraining::step(int step) {
  if (step_open_) throw std::logic_error("TowerTraining::step: the previous step is still open");

  step_ = step;
  step_start_ = std::chrono::steady_clock::now();
  if (queue_) queue_->dequeue(images_.as<float>(), labels_.as<std::int32_t>());
  runtime_->trace().set_step(step);
  runtime_->trace().set_enabled(traces_step(step));
  enqueue_start_us_ = runtime_->trace().now_us();
  step_open_ = true;
  return StepScope(*this, step);
}

std::int64_t StepScope::global_step() const { return training_.first_global_step() + step_; }

StepScope::~StepScope() { training_.step_open_ = false; }

void StepScope::probe(Tower& tower) {
  if (enqueued_ || ended_) throw std::logic_error("StepScope::probe after enqueued()");
  training_.probe(tower);
}

void StepScope::enqueued() {
  if (enqueued_) throw std::logic_error("StepScope::enqueued called twice");
  enqueued_ = true;
  training_.end_enqueue();
}

void StepScope::end(float loss) {
  if (!enqueued_) throw std::logic_error("StepScope::end before enqueued()");
  if (ended_) throw std::logic_error("StepScope::end called twice");
  ended_ = true;
  training_.end_step(step_, loss);
}

namespace {

// The step the probe runs in: the first after the warm-up step, when there is one.
int probe_step(int steps) { return steps > 1 ? 1 : 0; }

}  // namespace

bool step_is_traced(Backend backend, bool trace_file, int step, int steps) {
  if (backend == Backend::kHost || trace_file) return true;
  return step == probe_step(steps) || step == steps - 1;
}

bool TowerTraining::traces_step(int step) const {
  const bool trace_file = !flags_.trace_files.json.empty() || !flags_.trace_files.svg.empty();
  return step_is_traced(runtime_->backend(), trace_file, step, flags_.steps);
}

bool StepScope::traced() const { return training_.traces_step(step_); }

void TowerTraining::probe(Tower& tower) {
  // Not in step 0 when there is a step 1: step 0 is the warm-up, where every kernel and
  // cuBLAS routine runs for the first time and cuBLAS handles are made. A first launch may
  // need a device-wide synchronization (module loading, workspace allocation), which would
  // wait for tower 0's spinning probe while tower 1's probe is not yet enqueued: a false
  // timeout. (CUDA loads modules lazily; the probe kernels themselves are loaded when the
  // devices are made: runtime/cuda_environment.hpp says why.)
  if (rendezvous_ && step_ == probe_step(flags_.steps)) {
    rendezvous_->enqueue(*tower.stream);
    probed_ = true;
  }
}

void TowerTraining::probe_in_capture(Tower& tower) {
  if (!rendezvous_) return;
  probe_every_step_ = true;
  rendezvous_->enqueue(*tower.stream);
  probed_ = true;
}

void TowerTraining::prepare_for_capture() {
  for (auto& tower : set_.towers) towers::prepare_for_capture(*tower->stream);
}

void TowerTraining::probe_round_in_capture(Stream& origin) {
  if (rendezvous_) rendezvous_->enqueue_reset(origin);
}

void TowerTraining::end_enqueue() { runtime_->trace().add_host_span(span::kEnqueue, enqueue_start_us_); }

void TowerTraining::end_step(int step, float loss) {
  // The probe's step is left out of step_ms and host_enqueue_ms: a rendezvous that times
  // out holds the step for its timeout (chapter 2: once per tower), which is no cost of
  // the schedule being measured. Chapter 7 replays its probe in every step: all count.
  const bool in_mean = !(rendezvous_ && !probe_every_step_ && step == probe_step(flags_.steps));
  const double step_seconds = seconds_since(step_start_);
  // Outside step_ms, so reported on its own: trace_collect_ms.
  const auto collect_start = std::chrono::steady_clock::now();
  traces_->collect(step, in_mean);
  trace_collect_seconds_ += seconds_since(collect_start);
  run_.end_step(step, loss, step_seconds, in_mean);  // the log, the checks, a due checkpoint
}

void TowerTraining::watch_trace(std::function<void(const std::vector<TraceEvent>&)> watch) {
  traces_->set_watch(std::move(watch));
}

int TowerTraining::finish(const std::string& title, const std::string& towers_meet, Summary extra) {
  print_timeline(title);
  return write_outputs_and_summary(towers_meet, std::move(extra));
}

int TowerTraining::write_outputs_and_summary(const std::string& towers_meet, Summary extra) {
  bool written = run_.write_save_params();
  written &= write_output([&] { traces_->write_trace_files(); });
  Summary summary = tower_summary(flags_, *runtime_, job_towers_, *traces_, run_.log(),
                                  run_.last_loss());
  print_lost_stamps_warning(traces_->lost_stamp_ops());
  summary.add("towers_meet", towers_meet);
  summary.add("trace_collect_ms", trace_collect_seconds_ * 1000.0 / std::max(1, steps_run()), 3);
  if (rendezvous_) {
    // Evidence that the towers' kernels ran at the same time, counted by the probe kernels
    // themselves on the device: on cuda, unlike max_concurrent_towers, it cannot be
    // produced by work that only sat queued on a stream.
    summary.add("rendezvous", !probed_ ? "none" : rendezvous_->all_met() ? "met" : "timeout")
        .add("probe_concurrent_towers", rendezvous_->max_present());
  }
  if (flags_.resumable) {  // as chapter 1: steps since --seed, resumed runs included
    summary.add("global_step", static_cast<long long>(run_.global_step()));
  }
  // The moving averages through tower 0's network (batch --batch-size). The trace files
  // were written: spans would only pile up.
  runtime_->trace().set_enabled(false);
  Tower& tower = *set_.towers[0];
  run_.evaluate_if_asked(*tower.device, *tower.stream, *tower.network, summary);
  const int status = run_.exit_status(written, summary);
  summary.append(extra).print();
  return status;
}

}  // namespace towers
