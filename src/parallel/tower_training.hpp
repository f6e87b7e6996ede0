// SPDX-License-Identifier: MIT
// TowerTraining: the setup and bookkeeping chapters 2-4 share, so that each chapter's
// main.cpp shows only its tower loop and where the towers meet.
//
// It makes the runtime and the towers from the flags, loads the training set, owns the
// pinned global batch (chapters 2-3; chapter 4's towers read their own iterators and
// make none), the initial parameters, the step log, the per-step trace analysis and the
// optional concurrency probe, and prints the closing timeline and summary.
// Used from one host thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/cifar10.hpp"
#include "parallel/input_queue.hpp"
#include "parallel/tower.hpp"
#include "parallel/training.hpp"
#include "runtime/rendezvous.hpp"

namespace towers {

/// Where the towers' batches come from.
enum class TowerInput {
  kGlobalBatch,   ///< chapters 2-3: begin_step() dequeues one global batch, images()/labels()
  kOwnIterators,  ///< chapter 4: each tower pulls from its own iterator; no global batch
};

/// Everything around a multi-tower training loop. Introduced in chapter 2.
class TowerTraining {
 public:
  /// Adds the shared flags plus --probe and --save-params to `app`.
  static void add_flags(CLI::App& app, TrainingFlags& flags, bool& probe, std::string& save_params);

  /// Builds runtime, towers and input; gives each simulated device one op thread.
  /// With TowerInput::kOwnIterators no InputQueue or global batch is made (the chapter
  /// feeds its towers from train_set()), and images()/labels() return null.
  /// `job_towers` is how many towers train together, for the log's examples/sec and the
  /// summary's `towers`: 0 means this process's towers; chapter 5 gives the rank count.
  TowerTraining(const TrainingFlags& flags, bool probe,
                TowerInput input = TowerInput::kGlobalBatch, int job_towers = 0);
  /// Waits for nothing: the chapter synchronizes before it finishes.
  ~TowerTraining();

  /// The runtime made from --backend and --devices.
  Runtime& runtime() { return *runtime_; }
  /// The towers, tower i at index i.
  std::vector<std::unique_ptr<Tower>>& towers() { return set_.towers; }
  /// One parameter copy per device in use; replicas()[0] is on device 0.
  std::vector<std::unique_ptr<Replica>>& replicas() { return set_.replicas; }
  /// num_gpus in the tutorial: how many towers there are.
  int num_towers() const { return static_cast<int>(set_.towers.size()); }
  /// Images per tower per step.
  int batch_size() const { return flags_.layout.batch_size; }
  /// The flags this run was made from.
  const TrainingFlags& flags() const { return flags_; }

  /// The training set (the embedded synthetic set or --data-dir), kept for the run.
  const data::Dataset& train_set() const { return train_; }

  /// The initial parameters (host, pinned), from --seed.
  float* initial_params() { return initial_params_.as<float>(); }

  /// Starts step `step`: fills the next global batch (host; not with kOwnIterators) and
  /// starts its timer.
  void begin_step(int step);
  /// The global batch: images [towers * B, 24, 24, 3] and labels, pinned host memory.
  const float* images() const { return images_.as<float>(); }
  /// The global batch's labels [towers * B], pinned host memory.
  const std::int32_t* labels() const { return labels_.as<std::int32_t>(); }

  /// With --probe, enqueues a rendezvous on the tower's stream during step 0: it completes
  /// only if all towers are running at once (then "met"), else it times out. No-op otherwise.
  void probe(Tower& tower);

  /// Marks the end of enqueueing (a host span "enqueue" in the trace).
  void end_enqueue();
  /// Ends the step after its synchronize: logs the loss (the last tower's, as TF logs),
  /// analyses the step's trace.
  void end_step(int step, float loss);

  /// Calls `watch` at each end_step() with every span collected then, before they are
  /// forgotten: whatever step they are tagged with, so work of other threads (an
  /// iterator's copies) is seen too. Chapter 4 reads its all-reduce and input spans so.
  void watch_trace(std::function<void(const std::vector<TraceEvent>&)> watch);

  /// Has finish() merge the spans before it draws and writes them (chapter 5 gathers
  /// every rank's spans to rank 0, see StepTraces::set_merge).
  void set_trace_merge(TraceMerge merge, bool write_files_here) {
    traces_->set_merge(std::move(merge), write_files_here);
  }

  /// Prints the last step's timeline and the summary line (plus `extra` keys): the two
  /// calls below, in order.
  void finish(const std::string& title, const std::string& towers_meet, Summary extra = {});
  /// Prints the last step's timeline and writes the trace files.
  void print_timeline(const std::string& title) { traces_->print_last_timeline(title); }
  /// The last step's spans as the timeline drew them (merged, with a trace merge).
  const std::vector<TraceEvent>& drawn_events() const { return traces_->drawn_events(); }
  /// Prints the summary line (plus `extra` keys).
  void print_summary(const std::string& towers_meet, Summary extra = {});

 private:
  TrainingFlags flags_;
  std::unique_ptr<Runtime> runtime_;
  TowerSet set_;
  data::Dataset train_;
  std::unique_ptr<InputQueue> queue_;
  Buffer images_, labels_, initial_params_;
  std::unique_ptr<StepLog> log_;
  std::unique_ptr<StepTraces> traces_;
  std::unique_ptr<Rendezvous> rendezvous_;
  std::chrono::steady_clock::time_point step_start_;
  double enqueue_start_us_ = 0;
  int step_ = 0;
  float last_loss_ = 0;
  int job_towers_ = 0;
};

/// Saves `params` (host, kNumParameters floats) as a checkpoint file at `path` when
/// `path` is not empty (--save-params), so tests can compare chapters bit for bit.
void save_params_if_asked(const std::string& path, const float* params, std::int64_t global_step);

}  // namespace towers
