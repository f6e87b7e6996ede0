// SPDX-License-Identifier: MIT
// Chapter 9's pipeline stage in a process of its own (chapter 11's composed run, pp > 1).
//
// Chapter 9 ran every stage in one process: a stage copied its activations into a mailbox
// on the next stage's device and recorded an event the next stage's stream waited on.
// Here the next stage is another process, so the mailbox is filled by a message: at the
// start of each step a stage posts one MPI_Irecv per micro-batch into each mailbox (the
// activations from the stage before, the gradients from the stage after), and its stream
// waits for the one it needs (MPI_Wait) where chapter 9 waited for an event. The sender
// sends with MPI_Send from its slot, as stream work in its schedule's order. Every receive
// is posted before any send of the step, so a send always finds its receive and no two
// stages can wait on each other: the schedules' order alone (GPipe or 1F1B) decides who
// runs when. Each mailbox is the receiver's (the ledger's communication), one per
// micro-batch, as chapter 9's.
//
// The rest is chapter 9's: a range of the variables per stage, an activation slot per
// micro-batch the schedule stashes at once, the micro-batches' gradients summed in order
// and their mean taken (the bits of 01_single_gpu --accumulate m). With dp > 1 the
// stage's range of that mean is then averaged over the data communicator (the replicas'
// same stage), and every stage updates its range, by --optimizer (chapter 8's rules:
// momentum's velocity and Adam's moments kept for that range alone). With --zero 1 the
// replicas' same stage shard that update instead (zero_one_update.hpp): each updates its
// shard of the range between the data ring's two halves, its state kept for the shard.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "data/preprocess.hpp"
#include "harness/input_queue.hpp"
#include "mesh_rank.hpp"
#include "model/gradient_accumulation.hpp"
#include "model/network.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/optimizer_state.hpp"
#include "model/parameters.hpp"
#include "mpi/mpi_check.hpp"
#include "parallel/mesh_ring.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "parallel/pipeline_split.hpp"
#include "parallel/stage_variables.hpp"
#include "zero_one_update.hpp"

namespace towers {
namespace {

using model::Network;

std::size_t output_floats(int layer, int micro_batch) {
  return static_cast<std::size_t>(micro_batch) * Network::layer_output_floats(layer);
}

class StageRank final : public MeshRank {
 public:
  StageRank(const MeshRanks& mesh, Watchdog& watchdog, Runtime& runtime,
            const data::Dataset& train, const MeshConfig& c, const model::TrainingState& state,
            std::uint64_t seed)
      : mesh_(mesh),
        watchdog_(watchdog),
        stage_(mesh.at().pipeline),
        stages_(c.pp),
        micro_batches_(c.micro_batches),
        micro_batch_(c.batch / c.micro_batches),
        batch_(c.batch),
        layers_(default_split(c.pp)[static_cast<std::size_t>(stage_)]),
        range_(stage_parameters(layers_)),
        device_(runtime.device(0)),
        stream_(device_.create_stream()),
        schedule_(stage_schedule(c.schedule, {c.pp, c.micro_batches, 1}, stage_)),
        queue_(train, c.dp * c.batch, seed),
        steps_per_decay_(model::decay_steps(c.batch, c.dp)),
        replicas_(c.dp),
        zero_(c.zero) {
    const std::size_t param_bytes = model::kNumParameters * sizeof(float);
    // ZeRO-1 keeps its shard of the range's moving averages (zero_one_), not the range's.
    vars_.add_stage(device_, *stream_, range_, /*keep_averages=*/c.zero == 0);
    vars_.load_from_host(state);
    // --optimizer's own state (none for SGD) for the range this stage updates, and only
    // that: chapter 9's buffers of the whole model are its parameters' layout, this state
    // has no one else's entries to leave room for.
    // (--zero 1: for its shard of the range alone, zero_one_'s below.)
    if (c.zero == 0) {
      optimizer_ = std::make_unique<model::OptimizerState>(c.optimizer, device_, *stream_, range_.count);
    }
    if (state.input) queue_.restore(*state.input);  // a resumed run's next global batch
    grad_sum_ = device_.allocate(param_bytes, MemoryCategory::kGradients);
    micro_grads_ = device_.allocate(param_bytes, MemoryCategory::kGradients);
    const int slots = peak_stashed_activations(schedule_);
    for (int i = 0; i < slots; ++i) slots_.push_back(std::make_unique<Network>(device_, micro_batch_));
    for (int mb = 0; mb < micro_batches_; ++mb) {
      if (!first()) {
        activations_in_.push_back(device_.allocate(
            sizeof(float) * output_floats(layers_.first - 1, micro_batch_), MemoryCategory::kCommunication));
      }
      if (!last()) {
        gradients_in_.push_back(device_.allocate(
            sizeof(float) * output_floats(layers_.last, micro_batch_), MemoryCategory::kCommunication));
      }
    }
    // The batch: the images on the first stage, the labels on the last (chapter 9's).
    const std::size_t images = static_cast<std::size_t>(c.batch) * data::kCropValues;
    if (first()) {
      images_ = device_.allocate(sizeof(float) * images);
      host_images_ = device_.allocate_pinned(sizeof(float) * images * c.dp);
    }
    if (last()) {
      labels_ = device_.allocate(sizeof(std::int32_t) * c.batch);
      host_labels_ = device_.allocate_pinned(sizeof(std::int32_t) * c.batch * c.dp);
      host_losses_ = device_.allocate_pinned(sizeof(float) * model::kLossCount * micro_batches_);
    }
    if (first() || last()) {  // every replica's batch, as chapter 3's global batch
      host_all_images_.resize(images * c.dp);
      host_all_labels_.resize(static_cast<std::size_t>(c.batch) * c.dp);
    }
    if (c.zero == 1 && range_.count > 0) {
      zero_one_ = std::make_unique<ZeroOneUpdate>(
          device_, *stream_, mesh.data(), range_.count, c.optimizer,
          state.moving_averages.data() + range_.offset, watchdog);
    } else if (c.dp > 1 && range_.count > 0) {
      data_ = std::make_unique<MeshRing>(device_, mesh.data(), range_.count, Reduction::kMean,
                                         watchdog, "data ring");
    }
    activation_requests_.assign(static_cast<std::size_t>(micro_batches_), MPI_REQUEST_NULL);
    gradient_requests_.assign(static_cast<std::size_t>(micro_batches_), MPI_REQUEST_NULL);
    stream_->synchronize();
  }

  ~StageRank() override {
    try {
      stream_->synchronize();
    } catch (...) {  // the error that ends the run is already on its way out
    }
  }

  void enqueue(int step, std::int64_t global_step) override {
    read_batch();
    post_receives();
    if (range_.count > 0) {
      model::clear_gradient_sum(*stream_, static_cast<int>(range_.count),
                                grad_sum_.as<float>() + range_.offset);
    }
    for (const StageOp& op : schedule_) {
      if (op.pass == Pass::kForward) {
        forward(op.micro_batch, step);
      } else {
        backward(op.micro_batch, step);
      }
    }
    if (range_.count == 0) {  // a stage of pooling or norms alone: nothing to update
      // ... and nothing to average, but the other stages' ranks enter their data ring
      // here, and chapter 5's progress board wants every rank to enter the same
      // collectives: this rank marks the ring's place (an empty wait under the watchdog),
      // or the others would wait for it at the end and blame it on a timeout.
      if (replicas_ > 1) {
        stream_->launch(
            "data ring (no variables on this stage)",
            [this, step] {  // --zero 1: the ring's two halves, two collectives
              for (int half = 0; half < (zero_ == 1 ? 2 : 1); ++half) {
                Watchdog::Scope mark(watchdog_, "data ring", step);
              }
            },
            [](const CudaLaunchContext&) {
              throw std::logic_error("a stage rank's data ring mark ran on a GPU stream");
            });
      }
      return;
    }
    const int count = static_cast<int>(range_.count);
    float* sum = grad_sum_.as<float>() + range_.offset;
    model::finish_gradient_mean(*stream_, count, micro_batches_, sum);
    float* params = vars_.params(0) + range_.offset;
    if (zero_one_) {  // the replicas' same stage meet, each updating its shard of the range
      zero_one_->update(step, global_step, model::learning_rate(global_step, steps_per_decay_),
                        model::moving_average_decay(global_step), sum, params);
      return;
    }
    if (data_) {  // the replicas' same stage meet: the mean of this range's gradients
      Stream* stream = stream_.get();
      data_->set_step(step);
      data_->average({&sum, 1}, range_.count, {&stream, 1});
    }
    optimizer_->apply(*stream_, global_step, model::learning_rate(global_step, steps_per_decay_),
                      sum, params);  // SGD: chapter 9's apply_gradients_range, the same op
    ops::ema_update(*stream_, count, model::moving_average_decay(global_step), params,
                    vars_.averages(0) + range_.offset);
  }

  float loss() override {
    if (!last()) return 0;  // the last stage's is logged (world's last rank)
    // Chapter 9's: the cross-entropy alone, the mean over the micro-batches (the decay
    // reads local3's and local4's weights, which the last stage does not own).
    double cross_entropy = 0;
    for (int mb = 0; mb < micro_batches_; ++mb) {
      cross_entropy += host_losses_.as<float>()[mb * model::kLossCount];
    }
    return static_cast<float>(cross_entropy / micro_batches_);
  }

  void put_together(model::TrainingState& whole) override {
    // Each stage's range of each array, gathered on stage 0 into chapter 1's flat layout.
    model::TrainingState mine;
    vars_.state_to_host(mine);  // this stage's range of both arrays
    gather(mine.params, whole.params);
    // ZeRO-1's are shards, not put together (--save-params reads the parameters alone,
    // and a checkpoint is refused: mesh_checkpoint_problem). Every stage alike, one
    // without variables too: the gather is a collective over the pipeline.
    if (zero_ == 0) gather(mine.moving_averages, whole.moving_averages);
  }

  std::uint64_t bytes_sent(int dimension) const override {
    if (dimension == 0) return data_ ? data_->bytes_sent() : zero_one_ ? zero_one_->bytes_sent() : 0;
    return dimension == 2 ? pipeline_sent_.load() : 0;
  }
  Stream& stream() override { return *stream_; }

 private:
  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ + 1 == stages_; }

  // This stage's range of `mine` (kNumParameters floats) gathered with the other stages'
  // into `whole` on stage 0 (world rank 0 is the first stage of replica 0).
  void gather(const std::vector<float>& mine, std::vector<float>& whole) {
    std::vector<int> counts(static_cast<std::size_t>(stages_)), offsets(counts.size());
    const int count = static_cast<int>(range_.count), offset = static_cast<int>(range_.offset);
    MPI_CHECK(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, mesh_.pipeline()));
    MPI_CHECK(MPI_Gather(&offset, 1, MPI_INT, offsets.data(), 1, MPI_INT, 0, mesh_.pipeline()));
    whole.assign(first() ? model::kNumParameters : 0, 0.0f);
    MPI_CHECK(MPI_Gatherv(mine.data() + range_.offset, count, MPI_FLOAT, whole.data(),
                          counts.data(), offsets.data(), MPI_FLOAT, 0, mesh_.pipeline()));
  }

  // The replica's batch: the images to the first stage's device, the labels to the last's.
  void read_batch() {
    if (!first() && !last()) return;
    queue_.dequeue(host_all_images_.data(), host_all_labels_.data());
    const std::size_t replica = static_cast<std::size_t>(mesh_.at().data);
    const std::size_t images = static_cast<std::size_t>(batch_) * data::kCropValues;
    if (first()) {
      std::copy_n(host_all_images_.data() + replica * images, images, host_images_.as<float>());
      stream_->copy(images_.data(), host_images_.data(), images * sizeof(float), "copy images");
    }
    if (last()) {
      std::copy_n(host_all_labels_.data() + replica * batch_, batch_, host_labels_.as<std::int32_t>());
      stream_->copy(labels_.data(), host_labels_.data(), batch_ * sizeof(std::int32_t), "copy labels");
    }
  }

  // Every receive of the step, into the mailboxes, before any send (see the top).
  void post_receives() {
    for (int mb = 0; mb < micro_batches_; ++mb) {
      const auto i = static_cast<std::size_t>(mb);
      if (!first()) {
        MPI_CHECK(MPI_Irecv(activations_in_[i].data(),
                            static_cast<int>(output_floats(layers_.first - 1, micro_batch_)),
                            MPI_FLOAT, stage_ - 1, tag(mb, Pass::kForward), mesh_.pipeline(),
                            &activation_requests_[i]));
      }
      if (!last()) {
        MPI_CHECK(MPI_Irecv(gradients_in_[i].data(),
                            static_cast<int>(output_floats(layers_.last, micro_batch_)), MPI_FLOAT,
                            stage_ + 1, tag(mb, Pass::kBackward), mesh_.pipeline(),
                            &gradient_requests_[i]));
      }
    }
  }

  // Unique within a step (every receive of a step completes in it): at most 2m - 1, far
  // below MPI's least MPI_TAG_UB (32,767) for the 1,024 micro-batches the flags allow.
  static int tag(int mb, Pass pass) { return mb * 2 + (pass == Pass::kBackward ? 1 : 0); }

  // World rank of this replica's stage `stage`: whom a message's wait waits for.
  int world_rank_of_stage(int stage) const {
    MeshCoordinates at = mesh_.at();
    at.pipeline = stage;
    return mesh_rank(at, mesh_.shape());
  }

  // As stream work: wait for a posted receive from stage `from` (under the watchdog, as a
  // wait for that one rank: the other ranks do not make it, so it is no collective).
  void receive(MPI_Request* request, int from, const std::string& what, int step) {
    stream_->launch(
        what,
        [this, request, from, what, step] {
          Watchdog::Scope waiting(watchdog_, what, step, world_rank_of_stage(from));
          MPI_CHECK(MPI_Wait(request, MPI_STATUS_IGNORE));
        },
        [](const CudaLaunchContext&) { throw std::logic_error("a stage's MPI runs on the host"); });
  }

  // As stream work: send `floats` at `data` to pipeline rank `to`, counted where sent.
  void send(const float* data, std::size_t floats, int to, int tag, const std::string& what, int step) {
    stream_->launch(
        what,
        [this, data, floats, to, tag, what, step] {
          Watchdog::Scope waiting(watchdog_, what, step, world_rank_of_stage(to));
          MPI_CHECK(MPI_Send(data, static_cast<int>(floats), MPI_FLOAT, to, tag, mesh_.pipeline()));
          pipeline_sent_ += floats * sizeof(float);
        },
        [](const CudaLaunchContext&) { throw std::logic_error("a stage's MPI runs on the host"); });
  }

  void forward(int mb, int step) {
    const auto i = static_cast<std::size_t>(mb);
    Network& net = *slots_[i % slots_.size()];
    stream_->set_tower(mb);
    if (!first()) {  // the stage before's activations, into this slot's input
      receive(&activation_requests_[i], stage_ - 1, "receive activations", step);
      stream_->copy(net.layer_output(layers_.first - 1), activations_in_[i].data(),
                    sizeof(float) * output_floats(layers_.first - 1, micro_batch_),
                    "copy activations");
    }
    const float* images =
        first() ? images_.as<float>() + i * micro_batch_ * data::kCropValues : nullptr;
    net.forward_layers(*stream_, vars_.params(0), layers_.first, layers_.last, images);
    if (last()) {  // the loss, and the logits' gradient
      net.loss(*stream_, vars_.params(0), labels_.as<int>() + i * micro_batch_);
      stream_->copy(host_losses_.as<float>() + mb * model::kLossCount, net.losses(),
                    sizeof(float) * model::kLossCount, "copy loss");
    } else {
      send(net.layer_output(layers_.last), output_floats(layers_.last, micro_batch_), stage_ + 1,
           tag(mb, Pass::kForward), "send activations", step);
    }
  }

  void backward(int mb, int step) {
    const auto i = static_cast<std::size_t>(mb);
    Network& net = *slots_[i % slots_.size()];
    stream_->set_tower(mb);
    if (!last()) {  // the stage after's gradient of this stage's output
      receive(&gradient_requests_[i], stage_ + 1, "receive gradient", step);
      stream_->copy(net.output_gradient(layers_.last), gradients_in_[i].data(),
                    sizeof(float) * output_floats(layers_.last, micro_batch_), "copy gradient");
    }
    net.backward_layers(*stream_, vars_.params(0), layers_.first, layers_.last,
                        micro_grads_.as<float>());
    if (range_.count > 0) {  // sum += this micro-batch's gradients, in order
      model::add_micro_batch_gradients(*stream_, static_cast<int>(range_.count),
                                       micro_grads_.as<float>() + range_.offset,
                                       grad_sum_.as<float>() + range_.offset);
    }
    if (!first()) {
      send(net.output_gradient(layers_.first - 1), output_floats(layers_.first - 1, micro_batch_),
           stage_ - 1, tag(mb, Pass::kBackward), "send gradient", step);
    }
  }

  const MeshRanks& mesh_;
  Watchdog& watchdog_;
  int stage_, stages_, micro_batches_, micro_batch_, batch_;
  StageLayers layers_;
  ParameterRange range_;
  Device& device_;
  std::unique_ptr<Stream> stream_;
  std::vector<StageOp> schedule_;
  InputQueue queue_;
  std::int64_t steps_per_decay_;
  StageVariables vars_;
  Buffer grad_sum_, micro_grads_;
  std::vector<std::unique_ptr<Network>> slots_;
  std::vector<Buffer> activations_in_, gradients_in_;
  Buffer images_, labels_, host_images_, host_labels_, host_losses_;
  std::vector<float> host_all_images_;
  std::vector<std::int32_t> host_all_labels_;
  std::unique_ptr<MeshRing> data_;
  int replicas_;  // the data dimension's degree
  int zero_;  // --zero: at 1 the data ring's halves run apart, and the averages are shards
  std::unique_ptr<model::OptimizerState> optimizer_;
  std::unique_ptr<ZeroOneUpdate> zero_one_;  // --zero 1: in place of data_ and optimizer_
  std::vector<MPI_Request> activation_requests_, gradient_requests_;
  std::atomic<std::uint64_t> pipeline_sent_{0};
};

}  // namespace

std::unique_ptr<MeshRank> make_stage_rank(const MeshRanks& mesh, Watchdog& watchdog,
                                          Runtime& runtime, const data::Dataset& train,
                                          const MeshConfig& config,
                                          const model::TrainingState& state, std::uint64_t seed) {
  return std::make_unique<StageRank>(mesh, watchdog, runtime, train, config, state, seed);
}

}  // namespace towers
