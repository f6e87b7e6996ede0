// SPDX-License-Identifier: MIT
// The plumbing every training chapter shares, kept out of the chapters' main.cpp:
// flags, the tutorial's log line, per-step trace analysis and the closing report.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/timing.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "harness/checkpoint_dir.hpp"
#include "parallel/tower.hpp"
#include "runtime/runtime.hpp"
#include "trace/analysis.hpp"

namespace towers {

/// Images per tower per step when --batch-size is not given: the tutorial uses 128, but 4
/// towers of 128 take about 2.5 s a step on 2 cores when chapter 2 runs them one after
/// another; 4 of 32 take about 0.8 s there.
inline constexpr int kDefaultBatchSize = 32;
/// Steps when --steps is not given: enough for the log to show the loss falling (lines at
/// steps 0, 9, 19, 29) while chapter 2, the slowest, ends in about 25 s on 2 cores.
inline constexpr int kDefaultSteps = 30;

/// The chapters' default layout: TowerLayout's, at kDefaultBatchSize images per tower.
inline TowerLayout default_layout() {
  TowerLayout layout;
  layout.batch_size = kDefaultBatchSize;
  return layout;
}

/// Flags of the training chapters.
struct TrainingFlags {
  RuntimeOptions runtime;      ///< --backend, --devices
  TraceFiles trace_files;      ///< --trace, --trace-svg
  /// --towers, --towers-per-device, --batch-size. The defaults (kDefaultBatchSize,
  /// kDefaultSteps) keep a plain run of any chapter under about 30 s on 2 cores.
  TowerLayout layout = default_layout();
  std::string data_dir;        ///< --data-dir; empty: the embedded synthetic set
  int steps = kDefaultSteps;   ///< --steps
  int log_every = 10;          ///< --log-every
  std::uint64_t seed = 1;      ///< --seed: initialization, shuffling, distortions
  std::string save_params;     ///< --save-params FILE (chapters 2-4); empty: not saved
  /// Chapter 1's --checkpoint-dir, --resume, ... (the tower chapters too, see TowerFlags);
  /// defaults: no checkpoints.
  CheckpointFlags checkpoints;
  bool eval = false;           ///< --eval: precision @ 1 on the test set after training
  bool resumable = false;      ///< the program took the flags above (prints global_step)
};

/// Adds --backend --devices --trace --trace-svg --data-dir --steps --batch-size
/// --log-every --seed, and with `with_towers` also --towers and --towers-per-device.
void add_training_flags(CLI::App& app, TrainingFlags& flags, bool with_towers);

/// The tutorial's log line, "<datetime>: step N, loss = L (E examples/sec; S sec/batch)",
/// printed every `log_every` steps with timing averaged over those steps. Throws
/// Diverged("Model diverged with loss = NaN") on a NaN or infinite loss, as TF does.
class StepLog {
 public:
  /// `examples_per_step` counts all towers; sec/batch is step time / `towers`. `loss_name`
  /// names what is logged ("loss"; chapter 9's stages log the cross-entropy alone).
  StepLog(int examples_per_step, int towers, int log_every, int total_steps,
          std::string loss_name = "loss");
  /// Records one finished step (its loss and host wall time) and maybe prints. A step
  /// with `in_mean` false is logged but left out of the means: the --probe step, whose
  /// rendezvous may wait out its timeout (chapter 2: once per tower), is not a steady step.
  void step_done(std::int64_t global_step, float loss, double step_seconds, bool in_mean = true);
  /// Mean examples/sec over the steps of mean_step_ms().
  double examples_per_sec() const;
  /// Mean step time in ms over the steps after the first (the warm-up) that are in the
  /// mean; over every step after the first when none is; the one step when there is one.
  double mean_step_ms() const;
  /// Steps recorded so far.
  int steps() const { return steps_; }

 private:
  int examples_per_step_, towers_, log_every_, total_steps_;
  std::string loss_name_;
  int steps_ = 0;
  double interval_seconds_ = 0, first_seconds_ = 0;
  double later_seconds_ = 0;  // every step after the first
  double later_in_mean_seconds_ = 0;  // those of them in the mean
  int later_in_mean_steps_ = 0;
};

/// Turns one process's spans into the spans to draw and write: chapter 5 gathers every
/// rank's to rank 0 (a collective: every rank calls it, in the same order).
using TraceMerge = std::function<std::vector<TraceEvent>(const std::vector<TraceEvent>&)>;

/// Per-step parallelism read off the trace; steps are collected and then forgotten so
/// long runs do not grow the trace (all spans are kept when a trace file was asked for).
class StepTraces {
 public:
  /// Reads and clears `runtime`'s trace each step; `files` says what to write at the end.
  StepTraces(Runtime& runtime, const TraceFiles& files);
  /// Analyses `step` (call after the step's synchronize) and keeps its spans as the last;
  /// `in_mean` false leaves its host enqueue time out of the mean (the --probe step).
  void collect(int step, bool in_mean = true);
  /// Has collect() pass every span it collected, of any step, to `watch` first.
  void set_watch(std::function<void(const std::vector<TraceEvent>&)> watch) {
    watch_ = std::move(watch);
  }
  /// Max over steps of max_concurrent_towers; mean overlap and host enqueue time.
  int max_concurrent_towers() const { return max_concurrent_; }
  /// Max over steps of stream_concurrent_towers (cuda: streams that held work at once).
  int stream_concurrent_towers() const { return stream_concurrent_; }
  /// Whether some step's tower metrics came from kernel stamps (cuda with tracing on).
  bool from_kernel_stamps() const { return from_kernel_stamps_; }
  /// Ops of every collected step whose kernel stamps were lost (StepAnalysis::lost_stamp_ops).
  long long lost_stamp_ops() const { return lost_stamp_ops_; }
  /// Mean of the overlap fraction over the steps whose device work was traced.
  double mean_overlap() const;
  /// Mean host enqueue time per step, over the steps of StepLog::mean_step_ms().
  double mean_host_enqueue_ms() const;
  /// Has print_last_timeline() and write_trace_files() pass the spans through `merge`
  /// first, and write trace files only where `write_files_here` (one process writes them).
  void set_merge(TraceMerge merge, bool write_files_here) {
    merge_ = std::move(merge);
    write_files_here_ = write_files_here;
  }
  /// The last step's spans as drawn: merged when a merge is set, after print_last_timeline().
  const std::vector<TraceEvent>& drawn_events() const { return drawn_; }
  /// Prints the ASCII timeline of the last step (and remembers `title` for the files).
  void print_last_timeline(const std::string& title);
  /// Writes every collected span to the trace files asked for (--trace, --trace-svg),
  /// titled as the last print_last_timeline(); throws WriteError when one cannot be written.
  void write_trace_files() const;

 private:
  Runtime& runtime_;
  TraceFiles files_;
  std::vector<TraceEvent> all_;
  std::vector<StepAnalysis> steps_;
  std::vector<bool> in_mean_;  // per collected step
  std::vector<TraceEvent> last_events_;
  int max_concurrent_ = 0;
  int stream_concurrent_ = 0;
  bool from_kernel_stamps_ = false;
  long long lost_stamp_ops_ = 0;
  std::function<void(const std::vector<TraceEvent>&)> watch_;
  TraceMerge merge_;
  bool write_files_here_ = true;
  std::vector<TraceEvent> drawn_;
  std::string title_;
};

/// Runs `write`, one output at the end of a run (a trace, saved parameters). When it
/// throws, prints "error: <what>" and returns false, so that the outputs after it and the
/// summary are still written and the program can still exit non-zero.
bool write_output(const std::function<void()>& write);

/// Wall-clock seconds since `start` (one definition for the project, in src/base).
using base::seconds_since;

/// The summary line of a multi-tower chapter: backend, devices, towers, batch_size, steps
/// (the steps run: fewer than --steps after a graceful stop),
/// max_concurrent_towers, overlap, step_ms, host_enqueue_ms, examples_per_sec, final_loss,
/// then what the concurrency was read from (concurrency_from) and stream_concurrent_towers;
/// on cuda also lost_stamp_ops (ops whose kernel stamps were lost, counted as idle).
Summary tower_summary(const TrainingFlags& flags, Runtime& runtime, int towers,
                      const StepTraces& traces, const StepLog& log, float final_loss);

}  // namespace towers
