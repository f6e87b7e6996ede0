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
#include "model/checkpoint.hpp"
#include "trace/analysis.hpp"
#include "model/ops.hpp"
#include "model/parameters.hpp"
#include "runtime/graph.hpp"
#include "trace/span_names.hpp"

namespace towers {

void TowerTraining::add_flags(CLI::App& app, TrainingFlags& flags, bool& probe) {
  add_training_flags(app, flags, /*with_towers=*/true);
  app.add_flag("--probe", probe,
               "prove concurrency with a rendezvous across the towers in step 1, after "
               "step 0 has warmed up (step 0 with --steps 1; summary key "
               "rendezvous=met|timeout; none when that step did not run)");
  app.add_option("--save-params", flags.save_params,
                 "write the final parameters to this file (checkpoint format), to compare runs")
      ->check(writable_file());
}

void TowerTraining::add_checkpoint_flags(CLI::App& app, TrainingFlags& flags) {
  towers::add_checkpoint_flags(app, flags.checkpoints);
  add_eval_flag(app, flags.eval);
  flags.resumable = true;
}

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
    : flags_(flags),
      checkpoints_(flags.checkpoints),
      test_(flags.eval ? std::optional(load_test_set(flags.data_dir)) : std::nullopt),
      runtime_(Runtime::create(sized_runtime(flags_))) {
  // One compute thread per simulated device, so N devices use N cores and the trace
  // shows honest overlap. Real GPUs ignore this.
  ops::set_host_op_threads(1);
  set_ = make_towers(*runtime_, flags.layout);
  train_ = load_training_set(flags.data_dir);
  job_towers_ = job_towers > 0 ? job_towers : num_towers();
  // The batches a step reads: one per tower, or one shared by all (chapter 10's ranks).
  const int batches = input == TowerInput::kSharedBatch ? 1 : job_towers_;
  const int global_batch = batches * flags.layout.batch_size;
  Device& host_side = runtime_->device(0);
  if (input != TowerInput::kOwnIterators) {
    queue_ = std::make_unique<InputQueue>(train_, global_batch, flags.seed);
    images_ = host_side.allocate_pinned(sizeof(float) * global_batch * data::kCropValues);
    labels_ = host_side.allocate_pinned(sizeof(std::int32_t) * global_batch);
  }
  initial_params_ = host_side.allocate_pinned(sizeof(float) * model::kNumParameters);
  if (const auto& resumed = checkpoints_.resumed()) {
    std::printf("resumed from %s at step %lld\n", checkpoints_.resumed_from().c_str(),
                static_cast<long long>(resumed->global_step));
    first_global_step_ = resumed->global_step;
    std::copy(resumed->params.begin(), resumed->params.end(), initial_params());
    initial_averages_ = resumed->moving_averages;
    // The input continues where it stood, so resuming is the same as never stopping.
    // The global batch's queue is restored here; the towers' own iterators are made
    // later by the chapter (TowerInputs), at the global batch the position stood before.
    if (resumed->input && queue_) {
      queue_->restore(*resumed->input);
    } else if (resumed->input) {
      first_input_step_ = data::steps_before(*resumed->input, train_.size(), job_towers_,
                                             flags.layout.batch_size, flags.seed);
    } else {
      std::printf("%s", missing_input_note(*resumed, checkpoints_.resumed_from().string()).c_str());
    }
  } else {
    model::initialize_parameters(flags.seed, initial_params());
    initial_averages_.assign(initial_params(), initial_params() + model::kNumParameters);
  }
  log_ = std::make_unique<StepLog>(global_batch, batches, flags.log_every, flags.steps);
  traces_ = std::make_unique<StepTraces>(*runtime_, flags.trace_files);
  if (probe) {
    rendezvous_ = std::make_unique<Rendezvous>(*runtime_, num_towers(), std::chrono::milliseconds(500));
  }
  // Last, so that Ctrl-C during setup (making the synthetic cache) still quits at once.
  stop_ = std::make_unique<GracefulStop>();
  std::printf("%d tower(s) of batch %d on %d %s device(s)\n", num_towers(), flags.layout.batch_size,
              runtime_->device_count(), std::string(to_string(runtime_->backend())).c_str());
}

TowerTraining::~TowerTraining() = default;

const float* TowerTraining::initial_optimizer_state() const {
  const auto& resumed = checkpoints_.resumed();
  if (!resumed || resumed->optimizer_state.empty()) return nullptr;
  return resumed->optimizer_state.data();
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

std::int64_t StepScope::global_step() const { return training_.first_global_step_ + step_; }

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
  last_loss_ = loss;
  // The probe's step is left out of step_ms and host_enqueue_ms: a rendezvous that times
  // out holds the step for its timeout (chapter 2: once per tower), which is no cost of
  // the schedule being measured. Chapter 7 replays its probe in every step: all count.
  const bool in_mean = !(rendezvous_ && !probe_every_step_ && step == probe_step(flags_.steps));
  log_->step_done(first_global_step_ + step, loss, seconds_since(step_start_), in_mean);
  // Outside step_ms, so reported on its own: trace_collect_ms.
  const auto collect_start = std::chrono::steady_clock::now();
  traces_->collect(step, in_mean);
  trace_collect_seconds_ += seconds_since(collect_start);
  if (read_params_ && parameter_check_due(step + 1)) {
    host_params_.resize(model::kNumParameters);
    read_params_(host_params_.data());
    check_parameters(host_params_.data(), first_global_step_ + step);
  }
  save_checkpoint_if_due(step);
}

void TowerTraining::save_checkpoint_if_due(int step) {
  const std::int64_t global_step = first_global_step_ + step + 1;  // steps taken
  // The stop is read once a step, here: the loop ends after exactly the step whose save
  // counted it, so a signal a moment after this line cannot end the run unsaved.
  stopping_ = stop_->requested();
  const bool last = step + 1 == flags_.steps || stopping_;
  if (!checkpoints_.due(global_step, last)) return;
  if (!read_params_ || !read_averages_ || !(queue_ || read_input_)) {
    throw std::logic_error("--checkpoint-dir needs read_params_with() with both readers and an "
                           "input: the global batch, or TowerInputs(training, ...)");
  }
  model::TrainingState state{.global_step = global_step,
                             .params = std::vector<float>(model::kNumParameters),
                             .moving_averages = std::vector<float>(model::kNumParameters),
                             .input = queue_ ? queue_->position() : read_input_()};
  read_params_(state.params.data());
  read_averages_(state.moving_averages.data());
  // Momentum's velocity or Adam's moments: without them a resumed run restarts them at
  // zero and no longer continues this one.
  state.optimizer = flags_.checkpoints.optimizer;
  if (const int parts = model::optimizer_own_floats(state.optimizer); parts > 0) {
    if (!read_optimizer_state_) {
      throw std::logic_error("--checkpoint-dir with --optimizer " +
                             std::string(model::optimizer_name(state.optimizer)) +
                             " needs read_optimizer_state_with()");
    }
    state.optimizer_state.resize(static_cast<std::size_t>(parts) * model::kNumParameters);
    read_optimizer_state_(state.optimizer_state.data());
  }
  check_parameters(state.params.data(), global_step - 1);  // a NaN weight can hide behind a ReLU
  check_optimizer_state(state.optimizer_state, model::optimizer_name(state.optimizer),
                        global_step - 1);
  std::printf("saved %s\n", checkpoints_.save(state).string().c_str());
}

void TowerTraining::evaluate_if_asked(Summary& summary) {
  if (!test_ || stop_->requested()) return;  // after Ctrl-C the user wants out: no evaluation
  if (!read_averages_) throw std::logic_error("--eval needs read_params_with() with both readers");
  // The moving averages, on tower 0's device, through tower 0's network (batch --batch-size).
  Tower& tower = *set_.towers[0];
  const std::size_t bytes = sizeof(float) * model::kNumParameters;
  host_params_.resize(model::kNumParameters);
  read_averages_(host_params_.data());
  Buffer averages = tower.device->allocate(bytes);
  tower.stream->copy(averages.data(), host_params_.data(), bytes);
  tower.stream->synchronize();
  runtime_->trace().set_enabled(false);  // the trace files were written: spans would pile up
  const Precision p = evaluate(*tower.device, *tower.stream, *tower.network, averages.as<float>(), *test_);
  print_precision(p);
  summary.add("precision_at_1", p.precision_at_1(), 4);
}

void TowerTraining::watch_trace(std::function<void(const std::vector<TraceEvent>&)> watch) {
  traces_->set_watch(std::move(watch));
}

int TowerTraining::finish(const std::string& title, const std::string& towers_meet, Summary extra) {
  print_timeline(title);
  return write_outputs_and_summary(towers_meet, std::move(extra));
}

int TowerTraining::write_outputs_and_summary(const std::string& towers_meet, Summary extra) {
  bool written = true;
  if (!flags_.save_params.empty()) {
    written &= write_output([&] {
      if (!read_params_) throw std::logic_error("--save-params needs read_params_with()");
      model::TrainingState state;
      state.global_step = first_global_step_ + log_->steps();
      state.params.resize(model::kNumParameters);
      read_params_(state.params.data());
      check_parameters(state.params.data(), state.global_step - 1);
      state.moving_averages = state.params;
      model::save_checkpoint_file(flags_.save_params, state);
      std::printf("saved parameters to %s\n", flags_.save_params.c_str());
    });
  }
  written &= write_output([&] { traces_->write_trace_files(); });
  Summary summary = tower_summary(flags_, *runtime_, job_towers_, *traces_, *log_, last_loss_);
  print_lost_stamps_warning(traces_->lost_stamp_ops());
  summary.add("towers_meet", towers_meet);
  summary.add("trace_collect_ms", trace_collect_seconds_ * 1000.0 / std::max(1, log_->steps()), 3);
  if (rendezvous_) {
    // Evidence that the towers' kernels ran at the same time, counted by the probe kernels
    // themselves on the device: on cuda, unlike max_concurrent_towers, it cannot be
    // produced by work that only sat queued on a stream.
    summary.add("rendezvous", !probed_ ? "none" : rendezvous_->all_met() ? "met" : "timeout")
        .add("probe_concurrent_towers", rendezvous_->max_present());
  }
  if (flags_.resumable) {  // as chapter 1: steps since --seed, resumed runs included
    summary.add("global_step", static_cast<long long>(first_global_step_ + log_->steps()));
  }
  evaluate_if_asked(summary);
  if (stop_->requested()) summary.add("stopped_by", std::string(stop_->signal_name()));
  summary.append(extra).print();
  return stop_->exit_status(written ? 0 : 1);
}

}  // namespace towers
