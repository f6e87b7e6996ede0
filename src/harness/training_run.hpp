// SPDX-License-Identifier: MIT
// TrainingRun: the lifecycle of a training run, written once for every program that
// trains: chapter 1, the tower chapters (through TowerTraining), the programs of ranks
// and chapter 9's stages. Everything here works over two things the chapter hands it:
// a Placement of the variables (parallel/placement.hpp: put the state together on the
// host, take it back) and the input (InputSource: its position, a restore). No chapter
// passes a callback, and no chapter saves, resumes or evaluates by itself.
//
//   TrainingRun run(flags);                // before anything else: the folder, the test set
//   ... make the runtime, the model, the variables, the input ...
//   run.start(variables, &input, examples_per_step, towers);   // resume or --seed, Ctrl-C
//   for (step = 0; step < flags.steps && !run.stopping(); ++step) {
//     ... one step, then its one wait ...
//     run.end_step(step, loss, seconds);   // log, divergence check, checkpoint when due
//   }
//   bool written = run.write_save_params();  // --save-params
//   ... the trace files, the summary's own keys ...
//   run.evaluate_if_asked(device, stream, network, summary);   // --eval
//   return run.exit_status(written, summary);                  // stopped_by, 130/143
//
// Nothing lost (docs/reliability.md): the checkpoint folder and the test set are settled
// before the first step; a first SIGINT/SIGTERM ends the loop after the step it is in,
// whose checkpoint is then due; the loss is checked every step and the parameters every
// kParameterCheckEvery steps and before every save; saves are atomic and never hold a
// non-finite value. Used from one host thread. Introduced in chapter 1.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cli/graceful_stop.hpp"
#include "cli/summary.hpp"
#include "data/cifar10.hpp"
#include "data/input_position.hpp"
#include "harness/checkpoint_dir.hpp"
#include "harness/input_source.hpp"
#include "harness/training.hpp"
#include "model/network.hpp"
#include "parallel/placement.hpp"

namespace towers {

/// Adds --save-params FILE (checked writable when parsed): the one declaration of it.
/// `note` is added to its --help text (" (rank 0 writes it)" in a job of ranks).
void add_save_params_flag(CLI::App& app, std::string& file, const std::string& note = "");

/// The state a run starts from without a checkpoint: step 0, the parameters of `seed`,
/// moving averages equal to them, no optimizer state (it starts at zero).
model::TrainingState fresh_state(std::uint64_t seed);

/// The one save of the project: puts `variables` together on the host, checks them (a
/// non-finite value is Diverged, never saved), and writes dir/model.ckpt-`global_step`
/// atomically, with `optimizer`'s state and `input`'s position. Returns the file.
std::filesystem::path save_state(const CheckpointDir& dir, std::int64_t global_step,
                                 Placement& variables, model::Optimizer optimizer,
                                 std::optional<data::InputPosition> input);

/// --save-params' file, the one writer of it: checks `params` (kNumParameters floats in
/// chapter 1's layout; a non-finite value is Diverged and no file is written), then writes
/// them at `global_step` as a checkpoint whose moving averages are a copy of them, and
/// says so on stdout.
void save_params_file(const std::string& path, std::int64_t global_step,
                      std::vector<float> params);

/// The lifecycle of one run (see above). Introduced in chapter 1.
class TrainingRun {
 public:
  /// Settles --checkpoint-dir, --resume and the rest (CheckpointDir; flags.checkpoints'
  /// optimizer is the one whose state checkpoints hold) and, with --eval, reads the test
  /// set: first, so that a mistyped flag costs seconds, never a run.
  explicit TrainingRun(const TrainingFlags& flags);
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  /// A job of ranks settles the folder on rank 0 (RankCheckpoints) and hands every rank
  /// the state it resumed: the run starts from `state`, as if it had loaded it from the
  /// file `from` (rank 0's; empty where the folder is not seen). Before start().
  void resume_from(const model::TrainingState& state, const std::string& from);
  /// The checkpoint the run resumes from, or nullopt for a fresh start.
  const std::optional<model::TrainingState>& resumed() const { return resumed_; }
  /// The global step of the run's first step: 0, or the resumed checkpoint's.
  std::int64_t first_global_step() const { return resumed_ ? resumed_->global_step : 0; }

  /// Restores `input` to the resumed checkpoint's position now (nothing for a fresh
  /// start), so that a checkpoint this input cannot continue from is refused before the
  /// rest is built; start() with the same input then leaves it as it is.
  void restore_input(InputSource& input);
  /// Hands `variables` the state the run starts from (the resumed checkpoint's, said
  /// aloud, or fresh_state(--seed)) and `input`, if any, the checkpoint's position (or a
  /// note when the checkpoint has none); keeps both for the saves; starts the log
  /// (`examples_per_step`: every tower's images; sec/batch is per `towers`); installs the
  /// SIGINT/SIGTERM handlers, last, so that Ctrl-C during setup still quits at once.
  /// Call once, after setup, before the first step.
  /// `loss_name`: what end_step()'s loss is, for the log line (StepLog).
  void start(Placement& variables, InputSource* input, int examples_per_step, int towers,
             const std::string& loss_name = "loss");
  /// The variables the run started with (start()'s).
  Placement& variables() { return *variables_; }

  /// After the step `run_step` of this run and its one wait: logs `loss` (Diverged when
  /// it is not finite; `in_mean` false leaves the step out of step_ms), checks the
  /// parameters every kParameterCheckEvery steps, reads the stop, and saves a checkpoint
  /// when one is due (every --checkpoint-every global steps, the last step, a stop).
  void end_step(int run_step, float loss, double step_seconds, bool in_mean = true);
  /// True once a first SIGINT or SIGTERM was read by an end_step(), which then saved: end
  /// the loop now. A signal after that read stops the run after the next step.
  bool stopping() const { return stopping_; }
  /// A signal has arrived (read now, not at the last end_step).
  bool stop_requested() const { return stop_ && stop_->requested(); }
  /// Steps logged so far: --steps, or fewer after a stop.
  int steps_run() const { return log_ ? log_->steps() : 0; }
  /// Global steps taken: first_global_step() + steps_run().
  std::int64_t global_step() const { return first_global_step() + steps_run(); }
  /// The log of the steps (step_ms, examples_per_sec).
  const StepLog& log() const { return *log_; }
  /// The last step's loss.
  float last_loss() const { return last_loss_; }

  /// With --save-params: writes the parameters put together (checked finite) to the
  /// file. Returns false, having said why, when it could not; true otherwise.
  bool write_save_params();
  /// With --eval, unless a signal stopped the run (the user wants out): evaluates the
  /// moving averages on the test set through `network` on `device` and `stream`, prints
  /// precision @ 1 and adds precision_at_1 to `summary`.
  void evaluate_if_asked(Device& device, Stream& stream, model::Network& network,
                         Summary& summary);
  /// Adds stopped_by after a stop; returns the exit status: 128 + the signal after a stop
  /// (130, 143), else 1 when an output was not `written`, else 0.
  int exit_status(bool written, Summary& summary) const;

 private:
  TrainingFlags flags_;
  CheckpointDir checkpoints_;
  std::optional<data::Dataset> test_;  // --eval
  std::optional<model::TrainingState> resumed_;
  std::string resumed_from_;
  Placement* variables_ = nullptr;
  InputSource* input_ = nullptr;
  InputSource* restored_ = nullptr;  // restore_input()'s
  std::unique_ptr<StepLog> log_;
  std::unique_ptr<GracefulStop> stop_;
  bool stopping_ = false;
  float last_loss_ = 0;
};

}  // namespace towers
