// SPDX-License-Identifier: MIT
// The composed run, rank by rank (mesh_run.hpp). Four kinds of rank share the loop
// (mesh_rank.hpp):
//
//   ReplicaRank (tp = 1, pp = 1)  chapter 5's rank: the whole model, its iterator's batch
//                                 (the replica's shard), the gradients averaged over the
//                                 data ring.
//   ShardedRank (tp = 1, pp = 1)  chapter 8's, with --zero or momentum or Adam
//                                 (sharded_rank.cpp): its shard of the state, the ring's
//                                 two halves over the data communicator (ZeRO-3: and
//                                 each layer gathered over it).
//   TensorRank  (tp > 1, pp = 1)  chapter 10's rank t in a process of its own: its slice,
//                                 the replica's batch, g and f over the tensor ring, then
//                                 the slice's gradients averaged over the data ring, and
//                                 --optimizer's update of the slice (--zero 1: the update
//                                 of its shard between the ring's halves; --zero 2: the
//                                 same, the shard's gradients kept apart,
//                                 zero_one_update.hpp).
//   StageRank   (pp > 1)          chapter 9's stage in a process of its own (stage_rank.cpp);
//                                 with tp > 1 its variables a slice, and chapter 10's
//                                 split on the stage holding local3 and local4.
//
// Every buffer a rank allocates is in its device's memory ledger under the category the
// plan names, and every byte a rank sends is counted where it is sent, per dimension.
#include "mesh_run.hpp"

#include "mesh_checkpoint.hpp"
#include "mesh_rank.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <cstdio>
#include <memory>
#include <vector>

#include "base/timing.hpp"
#include "base/usage_error.hpp"
#include "cli/graceful_stop.hpp"
#include "data/preprocess.hpp"
#include "harness/input_queue.hpp"
#include "harness/rank_step.hpp"  // ranks_agree_to_stop
#include "harness/stage_trace.hpp"
#include "harness/tower_inputs.hpp"
#include "harness/training.hpp"
#include "harness/training_run.hpp"
#include "model/checkpoint.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/optimizer_state.hpp"
#include "model/parameters.hpp"
#include "mpi/fault_injection.hpp"
#include "mpi/mesh_ranks.hpp"
#include "mpi/mpi_check.hpp"
#include "mpi/rank_trace.hpp"
#include "mpi/watchdog.hpp"
#include "parallel/mesh_ring.hpp"
#include "parallel/one_device_variables.hpp"
#include "parallel/tensor_bytes.hpp"  // kTensorInputWidth
#include "parallel/tensor_slices.hpp"
#include "parallel/tensor_split.hpp"
#include "parallel/tower_loss_batch.hpp"
#include "runtime/runtime.hpp"
#include "zero_one_update.hpp"

namespace towers {
namespace {

// Chapter 5's rank, its all-reduce over the data communicator.
class ReplicaRank final : public MeshRank {
 public:
  ReplicaRank(const MeshRanks& mesh, Watchdog& watchdog, Tower& tower, TowerSet& set,
              const data::Dataset& train, const MeshConfig& c, const model::TrainingState& state,
              std::uint64_t seed)
      : tower_(tower),
        vars_(*tower.device, *tower.stream),
        inputs_(train, set.towers, InputFlags{}, seed, c.dp),
        // The plan counts this ring's receive buffer on a mesh of one device too (chapter
        // 8 makes it for one tower): the buffer is made, the ring sends nothing.
        data_(*tower.device, mesh.data(), model::kNumParameters, Reduction::kMean, watchdog,
              "data ring"),
        steps_per_decay_(model::decay_steps(c.batch, c.dp)) {
    vars_.load_from_host(state);
    // A resumed run's iterator starts at the global batch where the checkpoint stood.
    if (state.input) inputs_.restore(*state.input);
    tower.stream->synchronize();
  }

  void enqueue(int step, std::int64_t global_step) override {
    const data::Batch batch = inputs_[0].next();  // this replica's shard of the step
    tower_.stream->wait(*batch.ready);
    tower_loss(tower_, vars_.params(), batch);
    inputs_[0].release(batch, *tower_.stream);
    float* grads = tower_.grads.as<float>();
    Stream* stream = tower_.stream.get();
    data_.set_step(step);
    data_.average({&grads, 1}, model::kNumParameters, {&stream, 1});  // replicas meet
    model::apply_update(*tower_.stream, global_step, steps_per_decay_, grads, vars_.params(),
                        vars_.averages());
  }

  float loss() override { return tower_.losses.as<float>()[model::kTotalLoss]; }

  void put_together(model::TrainingState& whole) override {
    vars_.state_to_host(whole);  // every replica's copy is the same: rank 0's
  }

  std::uint64_t bytes_sent(int dimension) const override {
    return dimension == 0 ? data_.bytes_sent() : 0;
  }
  Stream& stream() override { return *tower_.stream; }

 private:
  Tower& tower_;
  RankVariables vars_;
  TowerInputs inputs_;
  MeshRing data_;
  std::int64_t steps_per_decay_;
};

}  // namespace

std::vector<float> gather_tensor_slices(const MeshRanks& mesh, const std::vector<float>& mine) {
  const std::size_t size = mine.size();  // every rank's the same: tp divides 384
  const int ranks = mesh.shape().tp;
  std::vector<float> all(mesh.at().tensor == 0 ? size * static_cast<std::size_t>(ranks) : 0);
  MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(size), MPI_FLOAT, all.data(),
                       static_cast<int>(size), MPI_FLOAT, 0, mesh.tensor()));
  if (mesh.at().tensor != 0) return {};
  std::vector<float> whole(model::kNumParameters);
  for (int r = 0; r < ranks; ++r) {
    TensorSliceLayout(ranks, r).put(all.data() + static_cast<std::size_t>(r) * size, whole.data(),
                                    /*replicated=*/r == 0);
  }
  return whole;
}

std::vector<float> take_tensor_slices(int tp, int tensor, const std::vector<float>& whole, int parts) {
  const TensorSliceLayout layout(tp, tensor);
  const std::size_t size = layout.size();
  std::vector<float> slices(static_cast<std::size_t>(parts) * size);
  for (std::size_t p = 0; p < static_cast<std::size_t>(parts); ++p) {
    layout.take(whole.data() + p * model::kNumParameters, slices.data() + p * size);
  }
  return slices;
}

namespace {

// Chapter 10's rank t of a replica, in a process of its own.
class TensorRank final : public MeshRank {
 public:
  TensorRank(const MeshRanks& mesh, Watchdog& watchdog, Runtime& runtime, TowerSet& set,
             const data::Dataset& train, const MeshConfig& c, const model::TrainingState& state,
             std::uint64_t seed)
      : mesh_(mesh),
        tower_(*set.towers[0]),
        // ZeRO-1 keeps its shard of the moving averages (zero_one_), not the slice's.
        slices_({tower_.device}, {tower_.stream.get()}, c.tp, mesh.at().tensor,
                /*keep_averages=*/c.zero == 0),
        // The replicas' batches, dp x b, as chapter 3's global batch: replica d's slice is
        // the examples chapter 5's shard d reads. On the host, as chapter 10's ranks read
        // their shared batch: nothing of it in the device's ledger.
        queue_(train, c.dp * c.batch, seed),
        images_(runtime.device(0).allocate_pinned(sizeof(float) * c.dp * c.batch * data::kCropValues)),
        labels_(runtime.device(0).allocate_pinned(sizeof(std::int32_t) * c.dp * c.batch)),
        batch_(c.batch),
        steps_per_decay_(model::decay_steps(c.batch, c.dp)),
        // --optimizer's own state for the slice (none for SGD), beside its moving averages;
        // ZeRO-1 keeps it for its shard alone.
        optimizer_(c.optimizer, *tower_.device, *tower_.stream,
                   c.zero == 0 ? slices_.layout(0).size() : 0) {
    slices_.take_back(state.params.data(), state.moving_averages.data());
    if (state.input) queue_.restore(*state.input);  // a resumed run's next global batch
    // g sums [b, 192], f [b, 2304]: one ring sized for f, as chapter 10's.
    auto tensor = std::make_unique<MeshRing>(
        *tower_.device, mesh.tensor(), static_cast<std::size_t>(c.batch) * kTensorInputWidth,
        Reduction::kSum, watchdog, "tensor ring");
    tensor_ = tensor.get();
    split_ = std::make_unique<TensorSplit>(set.towers, slices_, std::move(tensor), "ring");
    if (c.zero >= 1) {  // the slice's moving averages start as the state's
      std::vector<float> averages(slices_.layout(0).size());
      slices_.layout(0).take(state.moving_averages.data(), averages.data());
      // ZeRO-2 keeps its shard of the slice's gradients too (mesh_problem refuses ZeRO-3).
      zero_one_ = std::make_unique<ZeroOneUpdate>(*tower_.device, *tower_.stream, mesh.data(),
                                                  averages.size(), c.optimizer, averages.data(),
                                                  watchdog, /*keep_gradient_shard=*/c.zero == 2);
    } else if (c.dp > 1) {
      data_ = std::make_unique<MeshRing>(*tower_.device, mesh.data(), slices_.layout(0).size(),
                                         Reduction::kMean, watchdog, "data ring");
    }
    if (!state.optimizer_state.empty()) restore_optimizer(state.optimizer_state);
  }

  void enqueue(int step, std::int64_t global_step) override {
    queue_.dequeue(images_.as<float>(), labels_.as<std::int32_t>());
    const std::size_t first = static_cast<std::size_t>(mesh_.at().data) * batch_;
    tensor_->set_step(step);
    TensorSplit& s = *split_;
    // Chapter 10's step for one rank: the tensor ring joins the replica's ranks twice.
    s.forward_convolutions(0, images_.as<float>() + first * data::kCropValues,
                           labels_.as<std::int32_t>() + first);
    s.forward_to_cut(0);
    s.g();
    s.forward_from_cut(0);
    s.backward_to_local4(0);
    s.backward_to_cut(0);
    s.f();
    s.backward_convolutions(0);
    float* params = slices_.params(0);
    if (zero_one_) {  // the replicas meet, each updating its shard of the slice (ZeRO-1, 2)
      zero_one_->update(step, global_step, model::learning_rate(global_step, steps_per_decay_),
                        model::moving_average_decay(global_step), slices_.grads(0), params);
      return;
    }
    if (data_) {  // the replicas meet: the mean of this slice's gradients
      float* grads = slices_.grads(0);
      Stream* stream = tower_.stream.get();
      data_->set_step(step);
      data_->average({&grads, 1}, slices_.layout(0).size(), {&stream, 1});
    }
    // Chapter 10's update (SGD: the same op), by --optimizer, then the moving averages.
    const int count = static_cast<int>(slices_.layout(0).size());
    optimizer_.apply(*tower_.stream, global_step,
                     model::learning_rate(global_step, steps_per_decay_), slices_.grads(0), params);
    ops::ema_update(*tower_.stream, count, model::moving_average_decay(global_step), params,
                    slices_.averages(0));
  }

  float loss() override {
    // Chapter 10's loss: the cross-entropy (the same on every rank of the replica) plus
    // every rank's shards' decay, added in rank order.
    int ranks = 1;
    MPI_CHECK(MPI_Comm_size(mesh_.tensor(), &ranks));
    std::vector<float> decays(static_cast<std::size_t>(ranks));
    float mine = split_->shard_decay(0);
    MPI_CHECK(MPI_Allgather(&mine, 1, MPI_FLOAT, decays.data(), 1, MPI_FLOAT, mesh_.tensor()));
    float decay = 0;
    for (float d : decays) decay += d;
    return tower_.losses.as<float>()[model::kCrossEntropy] + decay;
  }

  void put_together(model::TrainingState& whole) override {
    gather(on_host(slices_.params(0)), whole.params);
    // The slice's moving averages and --optimizer's own state (each of its arrays laid out
    // as the slice): this rank's, or with ZeRO-1 the replicas' shards of them put together
    // on the first replica's rank, whose slices are then put together as the parameters.
    const std::size_t size = slices_.layout(0).size();
    std::vector<float> averages, state;
    if (zero_one_) {
      zero_one_->put_together(averages, state);
    } else {
      averages = on_host(slices_.averages(0));
      for (int p = 0; p < optimizer_.parts(); ++p) {
        const std::vector<float> part = on_host(optimizer_.part(p));
        state.insert(state.end(), part.begin(), part.end());
      }
    }
    gather(averages, whole.moving_averages);
    std::vector<float> part, flat;
    if (mesh_.rank() == 0) whole.optimizer_state.clear();
    for (std::size_t p = 0; p < static_cast<std::size_t>(optimizer_.parts()); ++p) {
      part.assign(state.begin() + static_cast<std::ptrdiff_t>(p * size),
                  state.begin() + static_cast<std::ptrdiff_t>((p + 1) * size));
      gather(part, flat);
      if (mesh_.rank() == 0) whole.optimizer_state.insert(whole.optimizer_state.end(), flat.begin(), flat.end());
    }
  }

  std::uint64_t bytes_sent(int dimension) const override {
    if (dimension == 0) return data_ ? data_->bytes_sent() : zero_one_ ? zero_one_->bytes_sent() : 0;
    return dimension == 1 ? tensor_->bytes_sent() : 0;
  }
  Stream& stream() override { return *tower_.stream; }

 private:
  // This rank's slice of each of --optimizer's arrays in `whole` (TrainingState's
  // optimizer_state: each kNumParameters floats in chapter 1's layout), as take_back()
  // takes its slice of the parameters; with ZeRO-1 its shard of that slice.
  void restore_optimizer(const std::vector<float>& whole) {
    const std::size_t size = slices_.layout(0).size();
    const std::vector<float> slice =
        take_tensor_slices(mesh_.shape().tp, mesh_.at().tensor, whole, optimizer_.parts());
    if (zero_one_) {
      zero_one_->restore_optimizer(slice.data(), size, 0);
      return;
    }
    optimizer_.restore(*tower_.stream, slice.data(), size, 0);
    tower_.stream->synchronize();  // `slice` is gone after this
  }

  // A slice-sized array (the parameters, the moving averages, an optimizer part) on the host.
  std::vector<float> on_host(const float* slice) {
    std::vector<float> host(slices_.layout(0).size());
    copy_to_host(*tower_.stream, host.data(), slice, host.size());
    return host;
  }

  // The replica's slices of one array laid out as the parameters (`mine`, this rank's),
  // put together in chapter 1's flat layout in `whole` on world rank 0.
  void gather(const std::vector<float>& mine, std::vector<float>& whole) {
    std::vector<float> flat = gather_tensor_slices(mesh_, mine);
    if (mesh_.rank() == 0) whole = std::move(flat);
  }

  const MeshRanks& mesh_;
  Tower& tower_;
  TensorSlices slices_;
  InputQueue queue_;
  Buffer images_, labels_;
  std::size_t batch_;
  std::int64_t steps_per_decay_;
  MeshRing* tensor_ = nullptr;  // owned by split_
  std::unique_ptr<TensorSplit> split_;
  std::unique_ptr<MeshRing> data_;
  model::OptimizerState optimizer_;
  std::unique_ptr<ZeroOneUpdate> zero_one_;  // --zero 1 and 2: in place of data_ and optimizer_
};

constexpr std::array<MemoryCategory, 7> kCategories = {
    MemoryCategory::kParameters,    MemoryCategory::kGradients,     MemoryCategory::kOptimizerState,
    MemoryCategory::kActivations,   MemoryCategory::kCommunication, MemoryCategory::kWorkspace,
    MemoryCategory::kOther};

// What the run measured, gathered on world rank 0.
struct Measured {
  std::array<unsigned long long, kMemoryCategoryCount> peak{};  // the largest device's
  std::array<unsigned long long, 3> wire{};  // bytes per step, all ranks: data, tensor, pipeline
};

Measured gather_measurement(const MpiJob& job, Runtime& runtime, const MeshRank& rank, int steps) {
  Measured mine, job_wide;
  const MemoryLedger& ledger = runtime.device(0).memory();
  for (MemoryCategory category : kCategories) {
    mine.peak[static_cast<std::size_t>(category)] = ledger.peak(category);
  }
  for (int d = 0; d < 3; ++d) mine.wire[static_cast<std::size_t>(d)] = rank.bytes_sent(d);
  MPI_CHECK(MPI_Reduce(mine.peak.data(), job_wide.peak.data(), kMemoryCategoryCount,
                       MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, job.comm()));
  MPI_CHECK(MPI_Reduce(mine.wire.data(), job_wide.wire.data(), 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                       0, job.comm()));
  for (auto& bytes : job_wide.wire) bytes /= static_cast<unsigned long long>(std::max(1, steps));
  return job_wide;
}

// Plan and run side by side; returns whether every number agrees.
bool print_side_by_side(const MeshPlan& plan, const Measured& run) {
  bool all = true;
  std::printf("\nplan and run, the largest device (bytes):\n  %-16s %15s %15s\n", "", "plan", "run");
  for (MemoryCategory category : kCategories) {
    const auto k = static_cast<std::size_t>(category);
    const bool same = static_cast<unsigned long long>(plan.device[k]) == run.peak[k];
    all = all && same;
    std::printf("  %-16s %15lld %15llu %s\n", std::string(category_name(category)).c_str(),
                static_cast<long long>(plan.device[k]), run.peak[k], same ? "" : "  <- differs");
  }
  const std::array<std::int64_t, 3> planned = {plan.wire_data, plan.wire_tensor, plan.wire_pipeline};
  std::printf("bytes on the wire per step, all devices:\n");
  for (std::size_t d = 0; d < 3; ++d) {
    const bool same = static_cast<unsigned long long>(planned[d]) == run.wire[d];
    all = all && same;
    std::printf("  %-16s %15lld %15llu %s\n", kMeshDimensions[d], static_cast<long long>(planned[d]),
                run.wire[d], same ? "" : "  <- differs");
  }
  std::printf("%s\n", all ? "the run holds the plan: every category and dimension to the byte"
                          : "the run and the plan differ (marked above)");
  return all;
}

// The pipeline's idle share in this step, read from the trace: each stage's busy time is
// the union of its stream's spans, leaving out its waits for a neighbour's message (idle,
// as chapter 9 counts its waits for another stage's event); the window is the job's, the
// first span's start to the last one's end over every rank, on rank 0's clock. The mean
// over the ranks of idle / window: chapter 9's bubble_share. Every rank calls it.
double measured_bubble(const MpiJob& job, Trace& trace, const Stream& stream, double offset_us) {
  std::vector<TraceEvent> mine;
  double first = std::numeric_limits<double>::max(), last = std::numeric_limits<double>::lowest();
  for (TraceEvent& event : trace.collect()) {
    if (!event.is_span() || event.device != 0 || event.stream != stream.index()) continue;
    if (event.name.rfind("receive ", 0) == 0) continue;  // waiting for a neighbour
    first = std::min(first, event.start_us + offset_us);
    last = std::max(last, event.end_us + offset_us);
    mine.push_back(std::move(event));
  }
  trace.clear();
  const StageBusy busy = stage_busy(mine, {{0, stream.index()}});
  double job_first = 0, job_last = 0;
  MPI_CHECK(MPI_Allreduce(&first, &job_first, 1, MPI_DOUBLE, MPI_MIN, job.comm()));
  MPI_CHECK(MPI_Allreduce(&last, &job_last, 1, MPI_DOUBLE, MPI_MAX, job.comm()));
  const double window_ms = (job_last - job_first) / 1000.0;
  double idle = window_ms > 0 ? 1.0 - busy.busy_ms[0] / window_ms : 0.0;
  double sum = 0;
  MPI_CHECK(MPI_Allreduce(&idle, &sum, 1, MPI_DOUBLE, MPI_SUM, job.comm()));
  return sum / job.size();
}

// Rank 0's end of the run: --save-params, the plan beside the measurement, the summary.
// Returns whether --save-params was written (or not asked for).
bool report(const MeshConfig& c, const MeshRunFlags& flags, Summary& plan_summary,
            const Measured& measured, const model::TrainingState& whole, const StepLog& log,
            float loss, double bubble, std::int64_t global_step, int steps_run,
            const GracefulStop& signals) {
  const bool pipeline = c.pp > 1;
  bool saved = true;
  if (!flags.save_params.empty()) {
    saved = write_output([&] { save_params_file(flags.save_params, global_step, whole.params); });
  }
  const MeshPlan plan = make_mesh_plan(c);
  const bool matches = print_side_by_side(plan, measured);
  if (pipeline) {
    std::printf("bubble, the last step's idle share read from the trace: %.3f (the plan's "
                "(p-1)/(m+p-1) = %.3f assumes equal stages; the real model's are not)\n",
                bubble, plan.bubble);
  }
  for (MemoryCategory category : kCategories) {
    const unsigned long long peak = measured.peak[static_cast<std::size_t>(category)];
    if (category == MemoryCategory::kWorkspace && peak == 0) continue;  // the host has none
    plan_summary.add("peak_" + std::string(category_name(category)) + "_bytes",
                     static_cast<long long>(peak));
  }
  unsigned long long wire = 0;
  for (std::size_t d = 0; d < 3; ++d) {
    plan_summary.add("wire_" + std::string(kMeshDimensions[d]) + "_bytes_per_step",
                     static_cast<long long>(measured.wire[d]));
    wire += measured.wire[d];
  }
  plan_summary.add("wire_bytes_per_step", static_cast<long long>(wire))
      .add("plan_matches", std::string(matches ? "yes" : "no"))
      .add("bubble_share", bubble, 3)
      .add("steps", steps_run)
      .add("global_step", static_cast<long long>(global_step))
      .add("step_ms", log.mean_step_ms(), 3)
      .add("final_loss", loss, 6);
  if (signals.requested()) plan_summary.add("stopped_by", std::string(signals.signal_name()));
  plan_summary.print();
  std::fflush(stdout);  // before the other ranks may leave, and mpiexec end this one
  return saved;
}

// Every rank's place, for the first line of the log: mpiexec names a dead rank by its
// number alone ("process rank 3 ... signal 9"), and this line says where it stood.
std::string mesh_rank_map(const MeshShape& shape) {
  std::string map;
  for (int r = 0; r < shape.ranks(); ++r) map += (r == 0 ? "" : ", ") + mesh_rank_name(r, shape);
  return map;
}

}  // namespace

std::string mesh_run_problem(const MeshConfig& c) {
  const std::string today = "the composed run covers data x tensor x pipeline today "
                            "(--optimizer sgd, momentum or adam; --zero 0, --zero 1 beside "
                            "--tp, --pp or both, --zero 2 beside --tp, and --zero 1 to 3 with data "
                            "parallelism alone; --pp up to 4 beside --tp; the host backend); ";
  const std::string plan = ": add --plan to print what that mesh will hold and send";
  if (c.pp > 1 && c.tp > 1 && !split_layers_on_one_stage(c.pp)) {
    return today + "--pp " + std::to_string(c.pp) + " cuts between local3 and softmax_linear, "
           "and beside tensor parallelism (--tp " + std::to_string(c.tp) + ") chapter 10's "
           "split needs local3, local4 and softmax_linear on one stage: that mesh is planned, "
           "not run; use --pp 4 or fewer with --tp" + plan;
  }
  if (c.hybrid) return today + "--hybrid runs as chapter 10's 10_tensor --hybrid" + plan;
  return "";
}

std::string mesh_checkpoint_problem(const MeshConfig& c, const CheckpointFlags& checkpoints) {
  if (checkpoints.dir.empty()) return "";
  // What chapter11_resume_test proves (kill -9 of a rank, --resume, byte for byte), and
  // nothing else: every kind of rank below puts its part of the whole state together and
  // takes it back, --optimizer's state included. A kind added later stays refused until a
  // test proves its file. (Today every mesh mesh_run_problem accepts is on the list, so
  // the sentence below is a guard no run reaches: --hybrid is refused before it.)
  const bool data_alone = c.tp == 1 && c.pp == 1;
  const bool pipeline_by_tensor = c.tp > 1 && c.pp > 1;
  const bool tensor_alone = c.tp > 1 && c.pp == 1;  // beside data parallelism
  const bool proven = !c.hybrid && (c.zero <= 1 || data_alone || (c.zero == 2 && tensor_alone));
  if (proven) return "";
  std::string what;
  if (c.zero > 0 && !data_alone) {
    what = "--zero " + std::to_string(c.zero) + " beside " +
           (pipeline_by_tensor ? "tensor and pipeline" : c.tp > 1 ? "tensor" : "pipeline") +
           " parallelism";
  }
  if (c.hybrid) what += std::string(what.empty() ? "" : ", and ") + "--hybrid";
  return "--checkpoint-dir: the composed run's checkpoints are put together and proven (kill "
         "-9 of a rank, --resume, byte for byte), with any --optimizer, for data x tensor x "
         "pipeline at --zero 0 and 1, for data x tensor at --zero 0 to 2, and for data "
         "parallelism alone at --zero 0 to 3; not yet for " + what + ", whose file "
         "might lack a rank's part of the state and resume another run. Drop --checkpoint-dir "
         "and the resume flags, or run one of the meshes above.";
}

void check_mesh_job(const MeshConfig& c, const MpiJob& job) {
  if (job.size() != c.devices()) {
    const std::string n = std::to_string(c.devices());
    throw UsageError("a mesh of --dp " + std::to_string(c.dp) + " x --tp " + std::to_string(c.tp) +
                     " x --pp " + std::to_string(c.pp) + " takes " + n + " process(es), one per "
                     "device, and this job has " + std::to_string(job.size()) + ": start it with "
                     "mpirun -n " + n + " build/bin/11_mesh ... (or add --plan to print the plan)");
  }
}

int run_mesh(MpiJob& job, const MeshConfig& c, const MeshRunFlags& flags, const FaultFlags& faults,
             Summary plan_summary) {
  check_mesh_job(c, job);
  // main() refuses these first; checked again here, as the job's size is, because a file
  // written without them would silently resume another run.
  if (const std::string problem = mesh_checkpoint_problem(c, flags.checkpoints); !problem.empty()) {
    throw UsageError(problem);
  }
  const data::Dataset train = load_training_set(flags.data_dir);
  // Rank 0 settles --checkpoint-dir and reads the checkpoint to resume, before step 0; the
  // whole state is then every rank's, and each rank takes its part of it when it is made.
  const MeshCheckpoints checkpoints(job, flags.checkpoints, c, train.size(), flags.seed);
  const model::TrainingState& state = checkpoints.start();
  const std::int64_t first_step = checkpoints.first_step();
  const MeshRanks mesh(job.comm(), {.dp = c.dp, .pp = c.pp, .tp = c.tp});
  Watchdog watchdog(job, std::chrono::milliseconds(static_cast<long>(flags.collective_timeout_s * 1000)));
  // A stalled rank is named with its place on the mesh, as the rank map below gives it.
  watchdog.name_ranks([shape = mesh.shape()](int r) { return mesh_rank_name(r, shape); });
  ops::set_host_op_threads(1);  // one compute thread per simulated device, as every chapter
  auto runtime = Runtime::create({.backend = BackendChoice::kHost, .devices = 1});
  // A stage makes its own activations (a Network per micro-batch in flight); the others
  // are a tower, chapter 5's or chapter 10's.
  TowerSet set;
  if (c.pp == 1) {
    TowerLayout layout;
    layout.towers = 1;
    layout.batch_size = c.batch;
    layout.first_index = mesh.at().data;  // the replica's shard (chapter 5: tower index = rank)
    // A tensor rank's gradients are its slice's; from ZeRO-2 on a rank keeps its shard.
    layout.whole_gradients = c.tp == 1 && c.zero < 2;
    layout.replica_params = false;        // each rank owns its parameters (or its slice)
    set = make_towers(*runtime, layout);
  }
  std::unique_ptr<MeshRank> rank;
  if (c.pp > 1) {
    rank = make_stage_rank(mesh, watchdog, *runtime, train, c, state, flags.seed);
  } else if (c.tp == 1 && (c.zero > 0 || c.optimizer != model::Optimizer::kSgd)) {
    rank = make_sharded_rank(mesh, watchdog, set, train, c, state, flags.seed);
  } else if (c.tp == 1) {
    rank = std::make_unique<ReplicaRank>(mesh, watchdog, *set.towers[0], set, train, c, state,
                                         flags.seed);
  } else {
    rank = std::make_unique<TensorRank>(mesh, watchdog, *runtime, set, train, c, state, flags.seed);
  }
  std::printf("%d rank(s) on a mesh of dp %d x tp %d x pp %d, one simulated device each: %s\n",
              job.size(), c.dp, c.tp, c.pp, mesh_rank_map(mesh.shape()).c_str());

  // A pipeline's bubble is read from the trace, every rank's put on rank 0's clock.
  const bool pipeline = c.pp > 1;
  double offset_us = 0, bubble = 0;
  if (pipeline) {
    // Every wait of the run is under the watchdog, so that a rank that never comes is named
    // and the job ends, not only the steps' collectives: these before step 0 too.
    Watchdog::Scope waiting(watchdog, "the clocks' exchange before step 0", -1);
    offset_us = clock_offset_us(job, runtime->trace());
    runtime->trace().set_enabled(true);
  }
  StepLog log(c.dp * c.batch, c.dp, flags.log_every, flags.steps);
  float loss = 0;
  // The first SIGINT or SIGTERM finishes the step; the ranks agree to stop after the same
  // one (chapter 5's), rank 0 saves it, and the job exits 130 or 143.
  const GracefulStop signals;
  bool stop = false;
  int steps_run = 0;
  for (int step = 0; step < flags.steps && !stop; ++step) {
    // `step` counts this run's steps; `global_step` the job's since --seed (resumes too).
    const std::int64_t global_step = first_step + step;
    const auto start = base::Clock::now();
    maybe_fail(faults, job, step);  // test hook; nothing unless --fail-rank
    rank->enqueue(step, global_step);
    rank->stream().synchronize();
    if (pipeline) {
      Watchdog::Scope waiting(watchdog, "the MPI_Allreduce of the bubble", step);
      bubble = measured_bubble(job, runtime->trace(), rank->stream(), offset_us);
    }
    {  // a tensor rank's loss adds its group's decays (a collective)
      Watchdog::Scope waiting(watchdog, "the loss's gather", step);
      loss = rank->loss();
    }
    {  // Log the last replica's loss, as chapter 5 logs its last rank's.
      Watchdog::Scope waiting(watchdog, "MPI_Bcast of the loss", step);
      MPI_CHECK(MPI_Bcast(&loss, 1, MPI_FLOAT, job.size() - 1, job.comm()));
    }
    log.step_done(global_step, loss, base::seconds_since(start));
    steps_run = step + 1;
    // A signal reaches the ranks maybe in different steps: alone, a rank that stopped would
    // leave the others waiting in the next collective.
    stop = ranks_agree_to_stop(job, watchdog, signals.requested(), step);
    if (checkpoints.due(global_step + 1, step + 1 == flags.steps || stop)) {
      checkpoints.save(global_step + 1, step, *rank, watchdog);
    }
  }

  // Collectives, as every step's are: a rank that died or stalled here is named too.
  Measured measured;
  model::TrainingState whole;
  {
    Watchdog::Scope waiting(watchdog, "the gathers of the measurement and --save-params",
                            steps_run);
    measured = gather_measurement(job, *runtime, *rank, steps_run);
    if (!flags.save_params.empty()) rank->put_together(whole);
  }
  // Rank 0 writes and prints; then every rank leaves together: a rank that left first
  // with a signal's status (143) would have mpiexec end rank 0 before its summary.
  const bool saved = job.rank() != 0 || report(c, flags, plan_summary, measured, whole, log, loss,
                                               bubble, first_step + steps_run, steps_run, signals);
  {
    Watchdog::Scope waiting(watchdog, "MPI_Barrier of the end", steps_run);
    MPI_CHECK(MPI_Barrier(job.comm()));
  }
  return signals.exit_status(saved ? 0 : 1);
}

}  // namespace towers
