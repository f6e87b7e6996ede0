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
// replicas' same stage shard that update instead (zero_one_update.hpp): each
// updates its shard of the range between the data ring's two halves, its state kept for
// the shard. A checkpoint puts the stages' ranges of all of it together on world rank 0
// (gather_state; at ZeRO-1 the replicas' shards of a range first, ZeroOneUpdate::
// put_together), and each stage takes its range (or its shard of it) back from a resumed
// state.
//
// Beside tensor parallelism (tp > 1) each stage is tp ranks, one per tensor index, and
// each keeps its variables in chapter 10's slice for its index (TensorSlices: the
// convolutions at their flat offsets, then the replicated tail, then its columns of
// local3 and rows of local4), so a stage's range is its layers' part of that slice. The
// stages before local3 run whole on every tensor rank, on the same values, as chapter 10
// runs its convolutions; the stage holding local3 and local4 runs them as chapter 10's
// split (TensorSplit), one slot per stashed micro-batch, g and f over the tensor
// communicator. Each tensor rank sends its stage's whole activations to the same tensor
// rank of the next stage. At --zero 1 the replicas shard the stage's range of the slice
// (its moving averages seeded from the slice of the state's, not from chapter 1's flat
// layout at the range's offset, which is another variable's place). A checkpoint puts the
// tensor group's slices of each array together first (gather_tensor_slices; at ZeRO-1
// the replicas' shards of the range before that), and a resumed stage takes its slice's
// range.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
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
#include "parallel/one_device_variables.hpp"  // copy_to_host
#include "parallel/pipeline_schedule.hpp"
#include "parallel/pipeline_split.hpp"
#include "parallel/stage_variables.hpp"
#include "state_gather.hpp"
#include "parallel/tensor_bytes.hpp"  // kTensorInputWidth
#include "parallel/tensor_slices.hpp"
#include "parallel/tensor_split.hpp"
#include "zero_one_update.hpp"

namespace towers {
namespace {

using model::Network;

std::size_t output_floats(int layer, int micro_batch) {
  return static_cast<std::size_t>(micro_batch) * Network::layer_output_floats(layer);
}

// Whether a stage runs chapter 10's split: it holds local3 (and, as mesh_run_problem
// requires, local4 and softmax_linear) on a mesh with tp > 1.
bool holds_split(const StageLayers& layers, int tp) {
  return tp > 1 && layers.first <= model::kLocal3 && model::kLocal3 <= layers.last;
}

// The stage's range in the buffers it keeps: chapter 9's range of the flat layout, or
// with tp > 1 its part of the tensor slice. The convolutions sit at their flat offsets in
// the slice; the stage holding local3 holds the slice's tail from its first variable on.
ParameterRange owned_range(const StageLayers& layers, int tp, int tensor) {
  const ParameterRange flat = stage_parameters(layers);
  if (!holds_split(layers, tp)) return flat;
  if (layers.last != model::kSoftmaxLinear) {
    throw std::logic_error("a stage with local3 beside tensor parallelism must hold local4 "
                           "and softmax_linear too (mesh_run_problem)");
  }
  return {flat.offset, TensorSliceLayout(tp, tensor).size() - flat.offset};
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
        flat_range_(stage_parameters(layers_)),
        range_(owned_range(layers_, c.tp, mesh.at().tensor)),
        device_(runtime.device(0)),
        stream_(device_.create_stream()),
        schedule_(stage_schedule(c.schedule, {c.pp, c.micro_batches, 1}, stage_)),
        queue_(train, c.dp * c.batch, seed),
        steps_per_decay_(model::decay_steps(c.batch, c.dp)),
        replicas_(c.dp),
        tensor_ranks_(c.tp),
        zero_(c.zero),
        optimizer_parts_(model::optimizer_own_floats(c.optimizer)) {
    // The variables: chapter 9's buffers of the whole model, or chapter 10's slice.
    std::size_t floats = model::kNumParameters;
    if (c.tp > 1) {
      // ZeRO-1 keeps its shard of the range's moving averages (zero_one_), not the slice's.
      slices_ = std::make_unique<TensorSlices>(std::vector<Device*>{&device_},
                                               std::vector<Stream*>{stream_.get()}, c.tp,
                                               mesh.at().tensor, /*keep_averages=*/c.zero == 0);
      slices_->load_from_host(state);
      floats = slices_->layout(0).size();
      params_ = slices_->params(0);
      averages_ = slices_->averages(0);  // null at ZeRO-1
      micro_grads_ = slices_->grads(0);
    } else {
      // ZeRO-1 keeps its shard of the range's moving averages (zero_one_), not the range's.
      vars_.add_stage(device_, *stream_, range_, /*keep_averages=*/c.zero == 0);
      vars_.load_from_host(state);
      params_ = vars_.params(0);
      averages_ = vars_.averages(0);  // null at ZeRO-1
      micro_grads_buffer_ = device_.allocate(floats * sizeof(float), MemoryCategory::kGradients);
      micro_grads_ = micro_grads_buffer_.as<float>();
    }
    // --optimizer's own state (none for SGD) for the range this stage updates, and only
    // that: chapter 9's buffers of the whole model are its parameters' layout, this state
    // has no one else's entries to leave room for. (--zero 1: for its shard of the range
    // alone, zero_one_'s below.)
    if (c.zero == 0) {
      optimizer_ = std::make_unique<model::OptimizerState>(c.optimizer, device_, *stream_, range_.count);
      if (!state.optimizer_state.empty()) {  // a resumed run: this range of the whole state
        // Beside tensor parallelism range_ is in the slice's layout, not the file's: the
        // slice of each part first, then the range of that.
        if (slices_) {
          const std::vector<float> slice =
              take_tensor_slices(c.tp, mesh.at().tensor, state.optimizer_state, optimizer_->parts());
          optimizer_->restore(*stream_, slice.data(), slices_->layout(0).size(), range_.offset);
          stream_->synchronize();  // `slice` is gone after this
        } else {
          optimizer_->restore(*stream_, state.optimizer_state.data(), model::kNumParameters,
                              range_.offset);
        }
      }
    }
    if (state.input) queue_.restore(*state.input);  // a resumed run's next global batch
    grad_sum_ = device_.allocate(floats * sizeof(float), MemoryCategory::kGradients);
    const int slots = peak_stashed_activations(schedule_);
    for (int i = 0; i < slots; ++i) slots_.push_back(std::make_unique<Network>(device_, micro_batch_));
    if (holds_split(layers_, c.tp)) {  // chapter 10's split, a slot per stashed micro-batch
      // g sums [m, 192], f [m, 2304] of one micro-batch of m: one ring sized for f.
      auto tensor = std::make_unique<MeshRing>(
          device_, mesh.tensor(), static_cast<std::size_t>(micro_batch_) * kTensorInputWidth,
          Reduction::kSum, watchdog, "tensor ring");
      tensor_ = tensor.get();
      split_ = std::make_unique<TensorSplit>(*stream_, slots_, *slices_, std::move(tensor), "ring");
    }
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
      // The range's moving averages and optimizer state, laid out as the range: beside
      // --tp the range is in the slice's layout (owned_range), so the slice of each whole
      // array first, then the range of that; with tp = 1 chapter 1's flat layout itself.
      const float* averages = state.moving_averages.data();
      const float* optimizer_state = state.optimizer_state.data();
      std::size_t layout_size = model::kNumParameters;
      std::vector<float> slice_averages, slice_state;  // beside --tp: the slice of each
      if (slices_) {
        layout_size = slices_->layout(0).size();
        slice_averages.resize(layout_size);
        slices_->layout(0).take(state.moving_averages.data(), slice_averages.data());
        averages = slice_averages.data();
        if (!state.optimizer_state.empty()) {
          slice_state = take_tensor_slices(c.tp, mesh.at().tensor, state.optimizer_state,
                                           optimizer_parts_);
          optimizer_state = slice_state.data();
        }
      }
      zero_one_ = std::make_unique<ZeroOneUpdate>(device_, *stream_, mesh.data(), range_.count,
                                                  c.optimizer, averages + range_.offset, watchdog);
      if (!state.optimizer_state.empty()) {  // a resumed run: its shard of this range's state
        zero_one_->restore_optimizer(optimizer_state, layout_size, range_.offset);
      }
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
    // The stage holding local3 entered its tensor ring twice per micro-batch (g and f).
    if (tensor_ranks_ > 1 && !split_) mark_place("tensor ring", step, 2 * micro_batches_);
    if (range_.count == 0) {  // a stage of pooling or norms alone: nothing to update
      // ... and nothing to average, but the other stages' ranks enter their data ring here
      // (--zero 1: its two halves, two collectives).
      if (replicas_ > 1) mark_place("data ring", step, zero_ == 1 ? 2 : 1);
      return;
    }
    const int count = static_cast<int>(range_.count);
    float* sum = grad_sum_.as<float>() + range_.offset;
    model::finish_gradient_mean(*stream_, count, micro_batches_, sum);
    float* params = params_ + range_.offset;
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
                    averages_ + range_.offset);
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
    if (slices_) {  // first the tensor group's slices, put together on its rank 0
      mine.params = gather_tensor_slices(mesh_, on_host(params_));
      std::vector<std::vector<float>> parts;  // --optimizer's, each laid out as the slice
      if (zero_one_) {
        // ZeRO-1: the replicas' shards of the range first, put together on the first
        // replica's stage (laid out as the range), then placed in the slice at the range.
        std::vector<float> averages, state;
        zero_one_->put_together(averages, state);
        mine.moving_averages = gather_tensor_slices(mesh_, range_on_host(averages));
        for (std::size_t p = 0; p < static_cast<std::size_t>(optimizer_parts_); ++p) {
          const std::vector<float> part(state.begin() + static_cast<std::ptrdiff_t>(p * range_.count),
                                        state.begin() + static_cast<std::ptrdiff_t>((p + 1) * range_.count));
          parts.push_back(gather_tensor_slices(mesh_, range_on_host(part)));
        }
      } else if (zero_ == 1) {  // ZeRO-1 on a stage without variables: nothing of its own
        const std::vector<float> none;
        mine.moving_averages = gather_tensor_slices(mesh_, range_on_host(none));
        for (int p = 0; p < optimizer_parts_; ++p) {
          parts.push_back(gather_tensor_slices(mesh_, range_on_host(none)));
        }
      } else {
        mine.moving_averages = gather_tensor_slices(mesh_, on_host(averages_));
        for (int p = 0; p < optimizer_parts_; ++p) {
          parts.push_back(gather_tensor_slices(mesh_, range_on_host(optimizer_->part(p))));
        }
      }
      if (mesh_.at().tensor != 0) return;  // its stage's range is on tensor rank 0 now
      mine.optimizer_state.reserve(parts.size() * model::kNumParameters);
      for (const std::vector<float>& flat : parts) {
        mine.optimizer_state.insert(mine.optimizer_state.end(), flat.begin(), flat.end());
      }
      gather_state(mesh_.pipeline(), mine, flat_range(), flat_range(), optimizer_parts_, whole);
      return;
    }
    vars_.state_to_host(mine);  // this stage's range of the parameters and moving averages
    const auto all = static_cast<std::size_t>(model::kNumParameters);
    mine.optimizer_state.resize(static_cast<std::size_t>(optimizer_parts_) * all);
    if (zero_one_) {
      // ZeRO-1: the replicas' shards of the range's moving averages and optimizer state,
      // put together on the first replica's stage first (laid out as the range).
      std::vector<float> averages, state;
      zero_one_->put_together(averages, state);
      std::copy(averages.begin(), averages.end(), mine.moving_averages.begin() + range_.offset);
      for (std::size_t p = 0; p < static_cast<std::size_t>(optimizer_parts_); ++p) {
        std::copy_n(state.begin() + p * range_.count, range_.count,
                    mine.optimizer_state.begin() + p * all + range_.offset);
      }
    } else if (zero_ == 0) {  // and of --optimizer's own state
      for (int p = 0; p < optimizer_parts_; ++p) {
        copy_to_host(*stream_, mine.optimizer_state.data() + static_cast<std::size_t>(p) * all + range_.offset,
                     optimizer_->part(p), range_.count);
      }
    }
    // (A stage without variables at ZeRO-1 has no shards: its empty range joins the gather.)
    const Chunk range{range_.offset, range_.count};
    gather_state(mesh_.pipeline(), mine, range, range, optimizer_parts_, whole);
  }

  std::uint64_t bytes_sent(int dimension) const override {
    if (dimension == 0) return data_ ? data_->bytes_sent() : zero_one_ ? zero_one_->bytes_sent() : 0;
    if (dimension == 1) return tensor_ ? tensor_->bytes_sent() : 0;
    return pipeline_sent_.load();
  }
  Stream& stream() override { return *stream_; }

 private:
  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ + 1 == stages_; }

  // Marks the place of `times` collectives `what` that other stages' ranks enter and this
  // one does not: chapter 5's progress board wants every rank to enter the same
  // collectives, so this rank makes as many empty waits under the watchdog, as stream
  // work, or the others would wait for it at the end and blame it on a timeout.
  void mark_place(const std::string& what, int step, int times) {
    stream_->launch(
        what + " (not on this stage)",
        [this, what, step, times] {
          for (int i = 0; i < times; ++i) Watchdog::Scope mark(watchdog_, what, step);
        },
        [](const CudaLaunchContext&) {
          throw std::logic_error("a stage rank's collective mark ran on a GPU stream");
        });
  }

  // The slice at `slice` (on this rank's device) on the host.
  std::vector<float> on_host(const float* slice) {
    std::vector<float> host(slices_->layout(0).size());
    copy_to_host(*stream_, host.data(), slice, host.size());
    return host;
  }

  // This stage's range of chapter 1's flat layout, as gather_state takes it: the stages'
  // ranges tile the model, gathered on stage 0 (world rank 0 is replica 0's first stage).
  Chunk flat_range() const { return {flat_range_.offset, flat_range_.count}; }

  // The slice with `values` (this stage's range_.count floats on the device, laid out as
  // the range) at the range's place, zeros elsewhere, on the host.
  std::vector<float> range_on_host(const float* values) {
    std::vector<float> host(slices_->layout(0).size(), 0.0f);
    copy_to_host(*stream_, host.data() + range_.offset, values, range_.count);
    return host;
  }
  // The same from `values` on the host (range_.count floats; none on a stage without
  // variables).
  std::vector<float> range_on_host(const std::vector<float>& values) const {
    std::vector<float> host(slices_->layout(0).size(), 0.0f);
    std::copy(values.begin(), values.end(), host.begin() + static_cast<std::ptrdiff_t>(range_.offset));
    return host;
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
    float* losses = last() ? host_losses_.as<float>() + mb * model::kLossCount : nullptr;
    const int* labels = last() ? labels_.as<int>() + i * micro_batch_ : nullptr;
    if (split_) {  // the layers before local3, then chapter 10's split and the loss
      const int slot = static_cast<int>(i % slots_.size());
      if (layers_.first <= model::kPool2) {
        net.forward_layers(*stream_, params_, layers_.first, model::kPool2, images);
      }
      split_->forward_to_cut(slot);
      tensor_->set_step(step);
      split_->g(slot);
      split_->forward_from_cut(slot, labels, losses);
    } else {
      net.forward_layers(*stream_, params_, layers_.first, layers_.last, images);
    }
    if (last() && !split_) {  // the loss, and the logits' gradient
      net.loss(*stream_, params_, labels);
      stream_->copy(losses, net.losses(), sizeof(float) * model::kLossCount, "copy loss");
    } else if (!last()) {
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
    if (split_) {  // chapter 10's split backward, f, then the layers before local3
      const int slot = static_cast<int>(i % slots_.size());
      split_->backward_to_local4(slot);
      split_->backward_to_cut(slot);
      split_->f(slot);
      if (layers_.first <= model::kPool2) {  // their variables at their flat offsets
        net.backward_layers(*stream_, params_, layers_.first, model::kPool2, micro_grads_, 0,
                            TensorSliceLayout::conv_floats());
      }
    } else {
      net.backward_layers(*stream_, params_, layers_.first, layers_.last, micro_grads_);
    }
    if (range_.count > 0) {  // sum += this micro-batch's gradients, in order
      model::add_micro_batch_gradients(*stream_, static_cast<int>(range_.count),
                                       micro_grads_ + range_.offset,
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
  ParameterRange flat_range_;  // chapter 9's range of the flat layout (put_together)
  ParameterRange range_;       // the same variables in this rank's buffers (owned_range)
  Device& device_;
  std::unique_ptr<Stream> stream_;
  std::vector<StageOp> schedule_;
  InputQueue queue_;
  std::int64_t steps_per_decay_;
  StageVariables vars_;                   // tp = 1: chapter 9's buffers of the whole model
  std::unique_ptr<TensorSlices> slices_;  // tp > 1: chapter 10's slice instead
  float* params_ = nullptr;
  float* averages_ = nullptr;
  float* micro_grads_ = nullptr;          // one micro-batch's gradients: the slice's, or
  Buffer micro_grads_buffer_;             // with tp = 1 this buffer of the whole model
  Buffer grad_sum_;
  std::vector<std::unique_ptr<Network>> slots_;
  MeshRing* tensor_ = nullptr;            // owned by split_
  std::unique_ptr<TensorSplit> split_;    // tp > 1, on the stage holding local3
  std::vector<Buffer> activations_in_, gradients_in_;
  Buffer images_, labels_, host_images_, host_labels_, host_losses_;
  std::vector<float> host_all_images_;
  std::vector<std::int32_t> host_all_labels_;
  std::unique_ptr<MeshRing> data_;
  int replicas_;      // the data dimension's degree
  int tensor_ranks_;  // the tensor dimension's
  int zero_;          // --zero: at 1 the data ring's halves run apart, and the averages are shards
  int optimizer_parts_;  // --optimizer's arrays of state (OptimizerState::parts)
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
