// SPDX-License-Identifier: MIT
#include "harness/training_run.hpp"

#include <cstdio>
#include <stdexcept>

#include "cli/options.hpp"
#include "harness/divergence.hpp"
#include "harness/evaluate.hpp"
#include "harness/input_queue.hpp"
#include "model/parameters.hpp"

namespace towers {

void add_save_params_flag(CLI::App& app, std::string& file, const std::string& note) {
  app.add_option("--save-params", file,
                 "write the final parameters to this file (checkpoint format), to compare "
                 "runs" + note)
      ->check(writable_file());
}

model::TrainingState fresh_state(std::uint64_t seed) {
  model::TrainingState fresh;
  fresh.params.resize(model::kNumParameters);
  model::initialize_parameters(seed, fresh.params.data());
  fresh.moving_averages = fresh.params;
  return fresh;
}

std::filesystem::path save_state(const CheckpointDir& dir, std::int64_t global_step,
                                 Placement& variables, model::Optimizer optimizer,
                                 std::optional<data::InputPosition> input) {
  model::TrainingState state;
  state.global_step = global_step;
  state.input = std::move(input);
  state.optimizer = optimizer;
  variables.state_to_host(state);
  // Momentum's velocity or Adam's moments: without them a resumed run restarts them at
  // zero and no longer continues this one.
  const std::size_t own = static_cast<std::size_t>(model::optimizer_own_floats(optimizer)) *
                          model::kNumParameters;
  if (state.optimizer_state.size() != own) {
    throw std::logic_error(variables.where() + ": the placement gave " +
                           std::to_string(state.optimizer_state.size()) + " floats of --optimizer " +
                           model::optimizer_name(optimizer) + "'s state, not " + std::to_string(own));
  }
  check_parameters(state.params.data(), global_step - 1);  // a NaN weight can hide behind a ReLU
  check_optimizer_state(state.optimizer_state, model::optimizer_name(optimizer), global_step - 1);
  return dir.save(state);
}

TrainingRun::TrainingRun(const TrainingFlags& flags)
    : flags_(flags),
      checkpoints_(flags.checkpoints),
      test_(flags.eval ? std::optional(load_test_set(flags.data_dir)) : std::nullopt),
      resumed_(checkpoints_.resumed()),
      resumed_from_(checkpoints_.resumed_from().string()) {}

TrainingRun::~TrainingRun() = default;

void TrainingRun::resume_from(const model::TrainingState& state, const std::string& from) {
  if (variables_) throw std::logic_error("TrainingRun::resume_from after start()");
  resumed_ = state;
  resumed_from_ = from;
}

void TrainingRun::restore_input(InputSource& input) {
  if (resumed_ && resumed_->input) input.restore(*resumed_->input);
  restored_ = &input;
}

void TrainingRun::start(Placement& variables, InputSource* input, int examples_per_step,
                        int towers, const std::string& loss_name) {
  if (variables_) throw std::logic_error("TrainingRun::start called twice");
  variables_ = &variables;
  input_ = input;
  if (resumed_) {
    std::printf("resumed from %s at step %lld\n", resumed_from_.c_str(),
                static_cast<long long>(resumed_->global_step));
    variables.load_from_host(*resumed_);
    // The input continues where it stood, so resuming is the same as never stopping.
    if (resumed_->input && input) {
      if (input != restored_) input->restore(*resumed_->input);
    } else if (input) {  // a format 1 checkpoint, or a --save-params file
      std::printf("%s", missing_input_note(*resumed_, resumed_from_.empty() ? "the checkpoint"
                                                                            : resumed_from_).c_str());
    }
  } else {
    variables.load_from_host(fresh_state(flags_.seed));
  }
  log_ = std::make_unique<StepLog>(examples_per_step, towers, flags_.log_every, flags_.steps,
                                   loss_name);
  stop_ = std::make_unique<GracefulStop>();
}

void TrainingRun::end_step(int run_step, float loss, double step_seconds, bool in_mean) {
  if (!variables_) throw std::logic_error("TrainingRun::end_step before start()");
  last_loss_ = loss;
  const std::int64_t global_step = first_global_step() + run_step + 1;  // steps taken
  log_->step_done(global_step - 1, loss, step_seconds, in_mean);
  // The stop is read once a step, here: the loop ends after exactly the step whose save
  // counted it, so a signal a moment after this line cannot end the run unsaved.
  stopping_ = stop_->requested();
  const bool last = run_step + 1 == flags_.steps || stopping_;
  if (checkpoints_.due(global_step, last)) {
    std::printf("saved %s\n", save_state(checkpoints_, global_step, *variables_,
                                         flags_.checkpoints.optimizer,
                                         input_ ? std::optional(input_->position())
                                                : std::nullopt).string().c_str());
    std::fflush(stdout);  // a reader of a pipe (a test waiting to kill the run) sees it
  } else if (parameter_check_due(run_step + 1)) {  // a NaN weight can hide behind a ReLU
    std::vector<float> params(model::kNumParameters);
    variables_->params_to_host(params.data());
    check_parameters(params.data(), global_step - 1);
  }
}

void save_params_file(const std::string& path, std::int64_t global_step,
                      std::vector<float> params) {
  if (params.size() != model::kNumParameters) {
    throw std::logic_error("save_params_file: " + std::to_string(params.size()) +
                           " floats, not the model's " + std::to_string(model::kNumParameters));
  }
  check_parameters(params.data(), global_step - 1);  // a NaN weight can hide behind a ReLU
  model::TrainingState state;
  state.global_step = global_step;
  state.moving_averages = params;  // the parameters alone: nothing resumes from this file
  state.params = std::move(params);
  model::save_checkpoint_file(path, state);
  std::printf("saved parameters to %s\n", path.c_str());
}

bool TrainingRun::write_save_params() {
  if (flags_.save_params.empty()) return true;
  return write_output([&] {
    if (!variables_) throw std::logic_error("--save-params before TrainingRun::start()");
    std::vector<float> params(model::kNumParameters);
    variables_->params_to_host(params.data());
    save_params_file(flags_.save_params, global_step(), std::move(params));
  });
}

void TrainingRun::evaluate_if_asked(Device& device, Stream& stream, model::Network& network,
                                    Summary& summary) {
  if (!test_ || stop_requested()) return;  // after Ctrl-C the user wants out: no evaluation
  model::TrainingState state;
  variables_->state_to_host(state);
  const std::size_t bytes = sizeof(float) * model::kNumParameters;
  Buffer averages = device.allocate(bytes);
  stream.copy(averages.data(), state.moving_averages.data(), bytes);
  stream.synchronize();
  const Precision p = evaluate(device, stream, network, averages.as<float>(), *test_);
  print_precision(p);
  summary.add("precision_at_1", p.precision_at_1(), 4);
}

int TrainingRun::exit_status(bool written, Summary& summary) const {
  if (stop_requested()) summary.add("stopped_by", std::string(stop_->signal_name()));
  const int status = written ? 0 : 1;
  return stop_ ? stop_->exit_status(status) : status;
}

}  // namespace towers
