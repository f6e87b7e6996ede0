// SPDX-License-Identifier: MIT
// TowerTraining: the run and the step every multi-tower chapter shares (chapters 2-8, and
// the programs of ranks), so that each chapter's main.cpp shows only its tower loop and
// where the towers meet.
//
// It makes the runtime and the towers from the flags, loads the training set, owns the
// pinned global batch (chapters 2, 3, 7; the others' towers read their own iterators),
// the step's trace analysis and the optional concurrency probe, and prints the closing
// timeline and summary. Each step is a StepScope (training.step(run_step)): the calls a
// step needs, in the only order they work: probe(), enqueued(), then end(loss) after the
// step's one wait.
// Where the variables live is the chapter's lesson and its own type (a Placement:
// parallel/placement.hpp); the chapter hands it over once, with start(), and the run's
// lifecycle (TrainingRun: resume, the log, the divergence check, checkpoints at their
// cadence and on a stop, --save-params, --eval) works over it. Nothing lost: every output
// path was checked when the flags were parsed, the checkpoint folder and the test set
// before the runtime is made; a first SIGINT/SIGTERM ends the loop after its step
// (stop_requested()); finish() writes --save-params, then the trace, then the summary,
// and a failure of one output never drops the ones after it. Used from one host thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/graceful_stop.hpp"
#include "data/cifar10.hpp"
#include "data/input_position.hpp"
#include "harness/input_queue.hpp"
#include "harness/training.hpp"
#include "harness/training_run.hpp"
#include "parallel/placement.hpp"
#include "parallel/tower.hpp"
#include "runtime/backend.hpp"
#include "runtime/rendezvous.hpp"

namespace towers {

/// Where the towers' batches come from.
enum class TowerInput {
  kGlobalBatch,   ///< chapters 2-3: step() dequeues one global batch, images()/labels()
  kOwnIterators,  ///< chapter 4: each tower pulls from its own iterator; no global batch
  /// chapter 10's tensor parallelism: every tower reads the same batch of --batch-size
  /// images (its ranks split the layers, not the batch): step() dequeues it, images()/labels()
  kSharedBatch,
};

class TowerTraining;
struct TowerFlags;  // harness/tower_flags.hpp

/// Whether step `step` of `steps` has its ops traced. Host backend: every step (a span
/// costs two clock reads, taken on the workers). cuda: every step when a trace file was
/// asked for (`trace_file`); otherwise only the probe's step (1, or 0 for one step) and
/// the last, since a traced op costs two CUDA events, their records and a resolve —
/// microseconds of host time per op, as long as the GPU work at small batches.
bool step_is_traced(Backend backend, bool trace_file, int step, int steps);

/// One training step, from TowerTraining::step() to end(): the order the harness needs
/// (start, probe, end of enqueueing, end after the synchronize) held by one object, so that
/// a chapter's loop cannot skip or reorder a call. end() must be called exactly once; a
/// scope destroyed without it is a step abandoned by an exception: nothing is logged.
class StepScope {
 public:
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;
  /// Closes the step; without end() (an exception left the loop) nothing is logged.
  ~StepScope();

  /// With --probe, enqueues a rendezvous on the tower's stream during step 1 (step 0 when
  /// --steps is 1), after step 0 has warmed up every kernel and cuBLAS handle: it completes
  /// only if all towers are running at once (then "met"), else it times out. No-op otherwise.
  void probe(Tower& tower);
  /// Marks the end of enqueueing (a host span "enqueue" in the trace). Once, before end().
  void enqueued();
  /// Ends the step after its synchronize: logs the loss (the last tower's, as TF logs),
  /// analyses the step's trace, and every kParameterCheckEvery steps checks the
  /// parameters. Throws Diverged on a non-finite loss or parameter; std::logic_error when
  /// called twice or before enqueued().
  void end(float loss);
  /// This run's step: 0 .. --steps - 1.
  int index() const { return step_; }
  /// The global step: index(), plus the checkpoint's step after --resume. The learning
  /// rate and the moving averages' decay follow it, so a resumed run continues exactly.
  std::int64_t global_step() const;
  /// Whether this step's ops are traced (step_is_traced): a traced step's host times
  /// include the trace's own work on cuda, which chapter 7's host_launch_ms leaves out.
  bool traced() const;

 private:
  friend class TowerTraining;
  StepScope(TowerTraining& training, int step) : training_(training), step_(step) {}
  TowerTraining& training_;
  int step_;
  bool enqueued_ = false;
  bool ended_ = false;
};

/// Everything around a multi-tower training loop. Introduced in chapter 2.
class TowerTraining {
 public:
  /// Settles the checkpoint folder and the test set (TrainingRun), then builds runtime,
  /// towers and input; gives each simulated device one op thread.
  /// With TowerInput::kOwnIterators no InputQueue or global batch is made (the chapter
  /// feeds its towers from train_set()), and images()/labels() return null.
  /// `job_towers` is how many towers train together, for the log's examples/sec and the
  /// summary's `towers`: 0 means this process's towers; chapter 5 gives the rank count.
  TowerTraining(const TrainingFlags& flags, bool probe,
                TowerInput input = TowerInput::kGlobalBatch, int job_towers = 0);
  /// A tower chapter's training from its flags (TowerFlags: --probe among them).
  explicit TowerTraining(const TowerFlags& flags, TowerInput input = TowerInput::kGlobalBatch);
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
  /// The training set (the embedded synthetic set or --data-dir), kept for the run.
  const data::Dataset& train_set() const { return train_; }
  /// --seed: of the initial parameters, the input's shuffles and its distortions.
  std::uint64_t seed() const { return flags_.seed; }
  /// Towers that share each global batch: this process's, or the job's (chapter 5).
  int job_towers() const { return job_towers_; }
  /// Starts the run with the chapter's variables, `variables` (where they live is the
  /// chapter's lesson): hands them the state the run starts from (the resumed
  /// checkpoint's, or --seed's) and keeps them for the divergence check, the checkpoints,
  /// --save-params and --eval; with TowerInput::kOwnIterators `own_input` is the towers'
  /// input (TowerInputs), restored to the checkpoint's position and recorded in each save.
  /// Installs the SIGINT/SIGTERM handlers. Call once, after setup, before step(0).
  void start(Placement& variables, InputSource* own_input = nullptr);
  /// A job of ranks resumes on every rank the state rank 0 read from the file `from`
  /// (RankCheckpoints): its step 0 is then that state's global step. Call before start().
  void resume_from(const model::TrainingState& state, const std::string& from) {
    run_.resume_from(state, from);
  }
  /// The global step of this run's first step: 0, or the resumed checkpoint's.
  std::int64_t first_global_step() const { return run_.first_global_step(); }

  /// True once a first SIGINT or SIGTERM arrived before the last StepScope::end(), which
  /// then saved a checkpoint (with --checkpoint-dir): end the loop now. Read once a step,
  /// at end(), so that a signal after that step's save decision stops after the next step.
  bool stop_requested() const { return run_.stopping(); }
  /// Steps finished so far (StepScope::end() calls): --steps, or fewer after a graceful stop.
  int steps_run() const { return run_.steps_run(); }

  /// Starts step `step` and returns its scope: fills the next global batch (host;
  /// not with kOwnIterators) and starts its timer. One step is open at a time; opening a
  /// second one before the first is ended or abandoned throws std::logic_error.
  StepScope step(int step);
  /// The global batch: images [towers * B, 24, 24, 3] (kSharedBatch: [B, ...]) and labels,
  /// pinned host memory.
  const float* images() const { return images_.as<float>(); }
  /// The global batch's labels [towers * B] (kSharedBatch: [B]), pinned host memory.
  const std::int32_t* labels() const { return labels_.as<std::int32_t>(); }

  /// As StepScope::probe(), in a step being captured as a graph (chapter 7): enqueued
  /// whatever the step, since the capture runs once and every launch replays the probe.
  /// Instantiating the graph has loaded its kernels, so no first-launch synchronization
  /// can stall it.
  void probe_in_capture(Tower& tower);
  /// Before capturing a step (chapter 7): prepares every tower's stream, the branches that
  /// join the capture, with prepare_for_capture() (runtime/graph.hpp). capture_graph()
  /// prepares its origin itself.
  void prepare_for_capture();
  /// With --probe, in a step being captured: enqueues on `origin`, before the fork, the
  /// start of a new round of the rendezvous (Rendezvous::enqueue_reset), so that each
  /// replay's probes must meet anew. Without it the first replay's flags stayed set and
  /// every later replay "met" at once. Nothing without --probe.
  void probe_round_in_capture(Stream& origin);
  /// Calls `watch` at each StepScope::end() with every span collected then, before they are
  /// forgotten: whatever step they are tagged with, so work of other threads (an
  /// iterator's copies) is seen too. Chapter 4 reads its all-reduce and input spans so.
  void watch_trace(std::function<void(const std::vector<TraceEvent>&)> watch);

  /// Has the timeline and the trace files merge the spans first (chapter 5 gathers every
  /// rank's spans to rank 0, see StepTraces::set_merge).
  void set_trace_merge(TraceMerge merge, bool write_files_here) {
    traces_->set_merge(std::move(merge), write_files_here);
  }

  /// Prints the last step's timeline, then write_outputs_and_summary(). Returns its status.
  int finish(const std::string& title, const std::string& towers_meet, Summary extra = {});
  /// Prints the last step's timeline (merged, with a trace merge).
  void print_timeline(const std::string& title) { traces_->print_last_timeline(title); }
  /// The last step's spans as the timeline drew them (merged, with a trace merge).
  const std::vector<TraceEvent>& drawn_events() const { return traces_->drawn_events(); }
  /// Writes --save-params (checked finite first) and the trace files, then prints the
  /// summary line (plus `extra` keys), whatever failed before. Returns the exit status: 0;
  /// 1 when an output could not be written; 128 + the signal (130, 143) after a graceful
  /// stop. With a trace merge every process must call it (the merge is collective).
  int write_outputs_and_summary(const std::string& towers_meet, Summary extra = {});

 private:
  friend class StepScope;
  /// flags.runtime, with `--link-gbps auto` turned into a bandwidth (link_sizing.hpp),
  /// which it prints; throws UsageError for auto on GPUs. Runs before the runtime is made.
  static RuntimeOptions sized_runtime(TrainingFlags& flags);
  /// Whether the ops of `step` are traced in this run: step_is_traced() for its backend.
  bool traces_step(int step) const;
  void probe(Tower& tower);
  void end_enqueue();
  void end_step(int step, float loss);

  TrainingFlags flags_;
  // First, so that a wrong --checkpoint-dir or a missing test set ends the run at once.
  TrainingRun run_;
  std::unique_ptr<Runtime> runtime_;
  TowerSet set_;
  data::Dataset train_;
  std::unique_ptr<InputQueue> queue_;  // the global batch's input (kGlobalBatch)
  Buffer images_, labels_;
  std::unique_ptr<StepTraces> traces_;
  std::unique_ptr<Rendezvous> rendezvous_;
  bool probed_ = false;  // the rendezvous was enqueued (step 0 ran with --probe)
  bool probe_every_step_ = false;  // probe_in_capture(): every replay of the graph probes
  std::chrono::steady_clock::time_point step_start_;
  double enqueue_start_us_ = 0;
  double trace_collect_seconds_ = 0;  // reading and analysing the trace, all steps
  int step_ = 0;
  bool step_open_ = false;  // a StepScope is alive
  int job_towers_ = 0;
  int batches_ = 0;  // the batches a step reads: one a tower, or one shared (kSharedBatch)
};

}  // namespace towers
