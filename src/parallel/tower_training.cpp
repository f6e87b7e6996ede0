// SPDX-License-Identifier: MIT
#include "parallel/tower_training.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "model/checkpoint.hpp"
#include "model/ops.hpp"
#include "model/parameters.hpp"

namespace towers {

void TowerTraining::add_flags(CLI::App& app, TrainingFlags& flags, bool& probe,
                              std::string& save_params) {
  add_training_flags(app, flags, /*with_towers=*/true);
  app.add_flag("--probe", probe,
               "prove concurrency in step 0 with a rendezvous across the towers "
               "(summary key rendezvous=met|timeout)");
  app.add_option("--save-params", save_params,
                 "write the final parameters to this file (checkpoint format), to compare runs");
}

TowerTraining::TowerTraining(const TrainingFlags& flags, bool probe, TowerInput input,
                             int job_towers)
    : flags_(flags), runtime_(Runtime::create(flags.runtime)) {
  // One compute thread per simulated device, so N devices use N cores and the trace
  // shows honest overlap. Real GPUs ignore this.
  ops::set_host_op_threads(1);
  runtime_->trace().set_enabled(true);
  set_ = make_towers(*runtime_, flags.layout);
  train_ = load_training_set(flags.data_dir);
  job_towers_ = job_towers > 0 ? job_towers : num_towers();
  const int global_batch = job_towers_ * flags.layout.batch_size;
  Device& host_side = runtime_->device(0);
  if (input == TowerInput::kGlobalBatch) {
    queue_ = std::make_unique<InputQueue>(train_, global_batch, flags.seed);
    images_ = host_side.allocate_pinned(sizeof(float) * global_batch * 24 * 24 * 3);
    labels_ = host_side.allocate_pinned(sizeof(std::int32_t) * global_batch);
  }
  initial_params_ = host_side.allocate_pinned(sizeof(float) * model::kNumParameters);
  model::initialize_parameters(flags.seed, initial_params());
  log_ = std::make_unique<StepLog>(global_batch, job_towers_, flags.log_every, flags.steps);
  traces_ = std::make_unique<StepTraces>(*runtime_, flags.trace_files);
  if (probe) {
    rendezvous_ = std::make_unique<Rendezvous>(*runtime_, num_towers(), std::chrono::milliseconds(500));
  }
  std::printf("%d tower(s) of batch %d on %d %s device(s)\n", num_towers(), flags.layout.batch_size,
              runtime_->device_count(), std::string(to_string(runtime_->backend())).c_str());
}

TowerTraining::~TowerTraining() = default;

void TowerTraining::begin_step(int step) {
  step_ = step;
  step_start_ = std::chrono::steady_clock::now();
  if (queue_) queue_->dequeue(images_.as<float>(), labels_.as<std::int32_t>());
  runtime_->trace().set_step(step);
  enqueue_start_us_ = runtime_->trace().now_us();
}

void TowerTraining::probe(Tower& tower) {
  if (rendezvous_ && step_ == 0) rendezvous_->enqueue(*tower.stream);
}

void TowerTraining::end_enqueue() { runtime_->trace().add_host_span("enqueue", enqueue_start_us_); }

void TowerTraining::end_step(int step, float loss) {
  last_loss_ = loss;
  log_->step_done(step, loss, seconds_since(step_start_));
  traces_->collect(step);
}

void TowerTraining::watch_trace(std::function<void(const std::vector<TraceEvent>&)> watch) {
  traces_->set_watch(std::move(watch));
}

void TowerTraining::finish(const std::string& title, const std::string& towers_meet, Summary extra) {
  print_timeline(title);
  print_summary(towers_meet, std::move(extra));
}

void TowerTraining::print_summary(const std::string& towers_meet, Summary extra) {
  Summary summary = tower_summary(flags_, *runtime_, job_towers_, *traces_, *log_, last_loss_);
  summary.add("towers_meet", towers_meet);
  if (rendezvous_) summary.add("rendezvous", rendezvous_->all_met() ? "met" : "timeout");
  summary.append(extra).print();
}

void save_params_if_asked(const std::string& path, const float* params, std::int64_t global_step) {
  if (path.empty()) return;
  model::TrainingState state;
  state.global_step = global_step;
  state.params.assign(params, params + model::kNumParameters);
  state.moving_averages = state.params;
  std::filesystem::path target(path);
  auto written = model::save_checkpoint(target.parent_path().empty() ? "." : target.parent_path(), state);
  std::filesystem::rename(written, target);
  std::printf("saved parameters to %s\n", path.c_str());
}

}  // namespace towers
