// SPDX-License-Identifier: MIT
// The split layers, op by op. Shapes (b images per rank's Network, R rows the split
// layers see: b in tensor parallel, N b in the hybrid; c the rank's columns):
//
//   x [R, 2304] -> h = relu(x W3_r + b3_r) [R, c] -> z_r = h W4_r [R, 192]   (partial)
//   z = sum over ranks (g, or the hybrid's reduce-scatter) -> y = relu(z + b4) [b, 192]
//   dy [b, 192] (softmax_linear's backward) -> dz = dy where y > 0
//   dW4_r = h^T dz [c, 192]; dh = (dz W4_r^T) where h > 0 [R, c]
//   dW3_r = x^T dh [2304, c]; db3_r = dh^T ones; dx_r = dh W3_r^T [R, 2304]   (partial)
//   dx = sum over ranks (f, or the hybrid's reduce-scatter) -> pool2's gradient
//
// Each product is the one model::Network computes for the whole layer, on the rank's
// columns or rows, with the same ops in the same order: with one rank, the bits of chapter
// 4's single tower.
#include "parallel/tensor_split.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <tuple>

#include "base/usage_error.hpp"
#include "data/preprocess.hpp"
#include "model/network.hpp"
#include "model/ops.hpp"
#include "model/parameters.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

using model::Network;

constexpr int kIn3 = 2304;  // local3's inputs: pool2 flattened
constexpr int kOut4 = 192;  // local4's outputs

Buffer floats(Device& device, std::size_t count) {
  return device.allocate(std::max<std::size_t>(count, 1) * sizeof(float),
                         MemoryCategory::kActivations);
}

}  // namespace

const char* collective_scope(TensorCollective collective) {
  switch (collective) {
    case TensorCollective::kG: return span::kTensorG;
    case TensorCollective::kF: return span::kTensorF;
    case TensorCollective::kGatherPool2: return span::kHybridGatherPool2;
    case TensorCollective::kScatterLocal4: return span::kHybridScatterLocal4;
    case TensorCollective::kGatherLocal4Gradient: return span::kHybridGatherLocal4Gradient;
    case TensorCollective::kScatterPool2Gradient: return span::kHybridScatterPool2Gradient;
    default: return "";  // the replicated all-reduce keeps chapter 4's names
  }
}

// One rank: its stream and Network (its tower's, or a pipeline stage's slot), which of
// the slices it uses, its layout, and the split layers' activations.
struct TensorSplit::Rank {
  Tower* tower = nullptr;  // chapter 10's; null for a pipeline stage's slot
  Stream* stream_ = nullptr;
  Network* network = nullptr;
  int slice = 0;           // slices_.params(slice): r, or 0 for every slot of a stage
  TensorSliceLayout layout;
  int columns = 0;                                 // c
  Buffer h, dh, ones;              // [R, c], [R, c], [R]
  Buffer gathered, gathered_grad;  // hybrid: x, dx [N b, 2304]
  Buffer sums, sums_grad;          // hybrid: z, dz [N b, 192]
  Buffer decay, scratch;           // [1] each: the shards' decay, one dot
  Buffer host_decay;                                // pinned [1]

  Rank(Tower* t, Stream& s, Network& n, int slice_index, const TensorSliceLayout& l)
      : tower(t), stream_(&s), network(&n), slice(slice_index), layout(l),
        columns(static_cast<int>(l.columns().size)) {}
  Stream& stream() { return *stream_; }
  Network& net() { return *network; }
};

std::size_t TensorSplit::activation_floats(TensorMode mode, int ranks, int batch,
                                           std::size_t columns) {
  const std::size_t rows = static_cast<std::size_t>(batch) *
                           (mode == TensorMode::kHybrid ? static_cast<std::size_t>(ranks) : 1);
  std::size_t floats = 2 * rows * columns + rows + 2;  // h, dh, ones, decay, scratch
  if (mode == TensorMode::kHybrid) floats += 2 * rows * kIn3 + 2 * rows * kOut4;
  return floats;
}

TensorSplit::TensorSplit(Runtime& runtime, std::vector<std::unique_ptr<Tower>>& towers,
                         TensorSlices& slices, TensorMode mode, const std::string& collectives)
    : mode_(mode), slices_(slices) {
  make_ranks(towers, slices);
  std::vector<int> device_of_rank;
  for (Tower* tower : towers_) device_of_rank.push_back(tower->device->index());

  // The collectives: NCCL's, or the ring (which counts every byte it moves between devices).
  const bool want_nccl =
      collectives == "nccl" || (collectives == "auto" && runtime.backend() == Backend::kCuda);
  if (collectives != "auto" && collectives != "ring" && collectives != "nccl") {
    throw UsageError("unknown collectives '" + collectives + "'. Use auto, ring or nccl.");
  }
  if (collectives == "nccl" && runtime.backend() != Backend::kCuda) {
    throw UsageError("--collectives nccl needs the cuda backend (real GPUs), but this run uses "
                     "the " + std::string(to_string(runtime.backend())) + " backend. Use "
                     "--collectives ring (or auto), which runs on any backend.");
  }
  const std::size_t largest = static_cast<std::size_t>(rows_) * kIn3;
  const std::size_t replicated = TensorSliceLayout::replicated_floats();
  if (want_nccl) {
    try {
      if (mode == TensorMode::kTensorParallel) {
        sum_ = make_nccl_allreduce(runtime, device_of_rank, Reduction::kSum);
      } else {
        rows_collectives_ = make_nccl_collectives(runtime, device_of_rank, Reduction::kSum);
        mean_ = make_nccl_allreduce(runtime, device_of_rank, Reduction::kMean);
      }
      collectives_name_ = "nccl";
    } catch (const UsageError& why) {
      if (collectives == "nccl") throw;
      std::printf("collectives: not using NCCL, using the ring instead: %s\n", why.what());
    }
  }
  if (collectives_name_.empty()) {
    if (mode == TensorMode::kTensorParallel) {
      sum_ = make_ring_allreduce(runtime, device_of_rank, largest, &wire_, Reduction::kSum);
    } else {
      rows_collectives_ =
          make_ring_collectives(runtime, device_of_rank, largest, &wire_, Reduction::kSum);
      mean_ = make_ring_allreduce(runtime, device_of_rank, replicated, &wire_, Reduction::kMean);
    }
    collectives_name_ = "ring";
  }
}

TensorSplit::TensorSplit(std::vector<std::unique_ptr<Tower>>& towers, TensorSlices& slices,
                         std::unique_ptr<AllReduce> sum, const std::string& collectives_name)
    : mode_(TensorMode::kTensorParallel), slices_(slices), collectives_name_(collectives_name),
      sum_(std::move(sum)) {
  make_ranks(towers, slices);
}

TensorSplit::TensorSplit(Stream& stream, const std::vector<std::unique_ptr<Network>>& slots,
                         TensorSlices& slices, std::unique_ptr<AllReduce> sum,
                         const std::string& collectives_name)
    : mode_(TensorMode::kTensorParallel), slices_(slices), collectives_name_(collectives_name),
      sum_(std::move(sum)) {
  if (slices.ranks() != 1 || slots.empty()) {
    throw std::invalid_argument("TensorSplit: a pipeline stage holds one slice and a slot at least");
  }
  batch_ = rows_ = slots.front()->batch_size();
  for (const auto& slot : slots) {
    streams_.push_back(&stream);
    ranks_.push_back(std::make_unique<Rank>(nullptr, stream, *slot, 0, slices.layout(0)));
    allocate(*ranks_.back());
  }
}

void TensorSplit::make_ranks(std::vector<std::unique_ptr<Tower>>& towers, TensorSlices& slices) {
  const int n = static_cast<int>(towers.size());
  if (n != slices.ranks()) {
    throw std::invalid_argument("TensorSplit: " + std::to_string(n) + " towers but " +
                                std::to_string(slices.ranks()) + " slices");
  }
  batch_ = towers.front()->batch_size();
  rows_ = mode_ == TensorMode::kHybrid ? n * batch_ : batch_;
  for (int r = 0; r < n; ++r) {
    Tower& tower = *towers[static_cast<std::size_t>(r)];
    towers_.push_back(&tower);
    streams_.push_back(tower.stream.get());
    ranks_.push_back(std::make_unique<Rank>(&tower, *tower.stream, *tower.network, r, slices.layout(r)));
    allocate(*ranks_.back());
  }
}

void TensorSplit::allocate(Rank& rank) {
  Device& device = rank.stream().device();
  const auto rows = static_cast<std::size_t>(rows_);
  rank.h = floats(device, rows * rank.columns);
  rank.dh = floats(device, rows * rank.columns);
  rank.ones = floats(device, rows);
  if (mode_ == TensorMode::kHybrid) {
    rank.gathered = floats(device, rows * kIn3);
    rank.gathered_grad = floats(device, rows * kIn3);
    rank.sums = floats(device, rows * kOut4);
    rank.sums_grad = floats(device, rows * kOut4);
  }
  rank.decay = floats(device, 1);
  rank.scratch = floats(device, 1);
  rank.host_decay = device.allocate_pinned(sizeof(float));
  // Bias gradients are column sums, products with a vector of ones (as Network's).
  ops::fill(rank.stream(), rows_, 1.0f, rank.ones.as<float>());
  rank.stream().synchronize();
}

TensorSplit::~TensorSplit() = default;

template <typename Call>
void TensorSplit::collective(TensorCollective which, const Call& call) {
  for (Stream* stream : streams_) stream->set_scope(collective_scope(which));
  const std::uint64_t before = wire_.total();
  call();
  wire_by_collective_[static_cast<std::size_t>(which)] += wire_.total() - before;
  for (Stream* stream : streams_) stream->set_scope("");
}

template <typename Partial>
void TensorSplit::sum_partials(TensorCollective which, int only, std::size_t floats,
                               const Partial& partial) {
  std::vector<float*> partials;
  std::vector<Stream*> streams;
  for (int r = 0; r < ranks(); ++r) {
    if (only != kEveryRank && r != only) continue;
    Rank& rank = *ranks_[static_cast<std::size_t>(r)];
    partials.push_back(partial(rank));
    streams.push_back(&rank.stream());
  }
  // Waits for every rank's partial sums: the pass stops here until they arrive.
  collective(which, [&] { sum_->average(partials, floats, streams); });  // a sum
}

// ---- The forward pass -------------------------------------------------------------------

void TensorSplit::forward_convolutions(int r, const float* global_images,
                                       const std::int32_t* global_labels) {
  Rank& rank = *ranks_[static_cast<std::size_t>(r)];
  Tower& tower = *rank.tower;
  Stream& s = rank.stream();
  // Tensor parallel: every rank the whole batch. Hybrid: tower r its slice, as chapter 3's.
  const std::size_t slice = mode_ == TensorMode::kHybrid ? static_cast<std::size_t>(r) : 0;
  const std::size_t b = static_cast<std::size_t>(batch_);
  s.copy(tower.images.data(), global_images + slice * b * data::kCropValues,
         b * data::kCropValues * sizeof(float), "copy images");
  s.copy(tower.labels.data(), global_labels + slice * b, b * sizeof(std::int32_t), "copy labels");
  rank.net().forward_layers(s, slices_.params(r), model::kConv1, model::kPool2,
                            tower.images.as<float>());
}

void TensorSplit::gather_activations() {
  const std::size_t count = static_cast<std::size_t>(rows_) * kIn3;
  std::vector<float*> buffers;
  for (int r = 0; r < ranks(); ++r) {
    Rank& rank = *ranks_[static_cast<std::size_t>(r)];
    // Tower r's own images' rows of the gathered buffer: where the all-gather sends from.
    const Chunk own = rows_collectives_->shard(count, r);
    rank.stream().copy(rank.gathered.as<float>() + own.offset,
                       rank.net().layer_output(model::kPool2), own.size * sizeof(float),
                       "own pool2");
    buffers.push_back(rank.gathered.as<float>());
  }
  collective(TensorCollective::kGatherPool2,
             [&] { rows_collectives_->all_gather(buffers, count, streams_); });
}

void TensorSplit::forward_to_cut(int r) {
  Rank& rank = *ranks_[static_cast<std::size_t>(r)];
  Stream& s = rank.stream();
  const TensorSliceLayout& l = rank.layout;
  const float* p = slices_.params(rank.slice);
  const int c = rank.columns, rows = rows_;
  const float* x = mode_ == TensorMode::kHybrid ? rank.gathered.as<float>()
                                                : rank.net().layer_output(model::kPool2);
  float* h = rank.h.as<float>();
  float* z = mode_ == TensorMode::kHybrid ? rank.sums.as<float>()
                                          : rank.net().layer_output(model::kLocal4);
  // local3, its columns: h [R, c] = relu(x [R, 2304] W3_r [2304, c] + b3_r). Each output is
  // a whole dot product over the 2304 inputs.
  s.set_scope("local3");
  ops::gemm(s, false, false, rows, c, kIn3, 1.0f, x, kIn3, p + l.local3_weights_at(), c, 0.0f, h, c);
  ops::bias_add(s, rows, c, p + l.local3_biases_at(), h);
  ops::relu_forward(s, rows * c, h, h);
  // local4, its rows: z_r [R, 192] = h [R, c] W4_r [c, 192], the rank's part of a sum over
  // the 384 inputs. No bias yet: it is added once, after the parts are added up.
  s.set_scope("local4");
  ops::gemm(s, false, false, rows, kOut4, c, 1.0f, h, c, p + l.local4_weights_at(), kOut4, 0.0f,
            z, kOut4);
  s.set_scope("");
}

void TensorSplit::g(int only) {
  sum_partials(TensorCollective::kG, only, static_cast<std::size_t>(batch_) * kOut4,
               [](Rank& rank) { return rank.net().layer_output(model::kLocal4); });
}

void TensorSplit::reduce_scatter_local4() {
  std::vector<float*> partials;
  for (auto& rank : ranks_) partials.push_back(rank->sums.as<float>());
  collective(TensorCollective::kScatterLocal4, [&] {
    rows_collectives_->reduce_scatter(partials, static_cast<std::size_t>(rows_) * kOut4, streams_);
  });
}

void TensorSplit::forward_from_cut(int r) {
  Tower& tower = *ranks_[static_cast<std::size_t>(r)]->tower;
  forward_from_cut(r, tower.labels.as<std::int32_t>(), tower.losses.as<float>());
}

void TensorSplit::forward_from_cut(int r, const std::int32_t* labels, float* host_losses) {
  Rank& rank = *ranks_[static_cast<std::size_t>(r)];
  Stream& s = rank.stream();
  Network& net = rank.net();
  const TensorSliceLayout& l = rank.layout;
  const float* p = slices_.params(rank.slice);
  float* y = net.layer_output(model::kLocal4);  // [b, 192]
  if (mode_ == TensorMode::kHybrid) {  // this tower's rows of the reduce-scattered sums
    const Chunk own = rows_collectives_->shard(static_cast<std::size_t>(rows_) * kOut4, r);
    s.copy(y, rank.sums.as<float>() + own.offset, own.size * sizeof(float), "own local4");
  }
  // local4's bias, once, on the whole sum; then its ReLU.
  s.set_scope("local4");
  ops::bias_add(s, batch_, kOut4, p + TensorSliceLayout::local4_biases_at(), y);
  ops::relu_forward(s, batch_ * kOut4, y, y);
  s.set_scope("");
  net.forward_layers(s, p + TensorSliceLayout::softmax_at(), model::kSoftmaxLinear,
                     model::kSoftmaxLinear, nullptr, TensorSliceLayout::softmax_flat_offset());
  net.loss_without_decay(s, labels);
  // The weight decay of this rank's shards, wd/2 sum(w^2) of each, as Network::loss adds
  // its terms (a dot, then an axpy): the decay of a split variable is the sum of its shards'.
  s.set_scope("loss");
  float* decay = rank.decay.as<float>();
  float* dot = rank.scratch.as<float>();
  ops::fill(s, 1, 0.0f, decay);
  const std::size_t c = l.columns().size;
  for (auto [name, at, count] : {std::tuple{"local3/weights", l.local3_weights_at(), kIn3 * c},
                                 std::tuple{"local4/weights", l.local4_weights_at(), kOut4 * c}}) {
    ops::dot(s, static_cast<int>(count), p + at, p + at, dot);
    ops::axpy(s, 1, model::parameter(name).weight_decay / 2.0f, dot, decay);
  }
  s.copy(host_losses, net.losses(), sizeof(float) * model::kLossCount, "copy loss");
  s.copy(rank.host_decay.data(), decay, sizeof(float), "copy decay");
  s.set_scope("");
}

// ---- The backward pass ------------------------------------------------------------------

void TensorSplit::backward_to_local4(int r) {
  Rank& rank = *ranks_[static_cast<std::size_t>(r)];
  Stream& s = rank.stream();
  Network& net = rank.net();
  const TensorSliceLayout& l = rank.layout;
  const std::size_t softmax = TensorSliceLayout::softmax_at();
  const std::size_t softmax_floats = l.local3_weights_at() - softmax;
  float* grads = slices_.grads(rank.slice);
  net.backward_layers(s, slices_.params(rank.slice) + softmax, model::kSoftmaxLinear,
                      model::kSoftmaxLinear, grads + softmax,
                      TensorSliceLayout::softmax_flat_offset(), softmax_floats,
                      TensorSliceLayout::softmax_flat_offset());
  // dz [b, 192]: local4's output gradient where its ReLU passed, in place; then local4's
  // bias gradient, the column sum of dz (replicated: the same on every rank in tensor
  // parallel; each tower's own rows in the hybrid, averaged with the replicated ones).
  float* dz = net.output_gradient(model::kLocal4);
  s.set_scope("local4 grad");
  ops::relu_backward(s, batch_ * kOut4, net.layer_output(model::kLocal4), dz, dz);
  ops::gemv(s, true, batch_, kOut4, 1.0f, dz, kOut4, rank.ones.as<float>(), 0.0f,
            grads + TensorSliceLayout::local4_biases_at());
  if (mode_ == TensorMode::kHybrid) {  // into this tower's rows, for the all-gather
    const Chunk own = rows_collectives_->shard(static_cast<std::size_t>(rows_) * kOut4, r);
    s.copy(rank.sums_grad.as<float>() + own.offset, dz, own.size * sizeof(float), "own dz");
  }
  s.set_scope("");
}

void TensorSplit::gather_local4_gradient() {
  std::vector<float*> buffers;
  for (auto& rank : ranks_) buffers.push_back(rank->sums_grad.as<float>());
  collective(TensorCollective::kGatherLocal4Gradient, [&] {
    rows_collectives_->all_gather(buffers, static_cast<std::size_t>(rows_) * kOut4, streams_);
  });
}

void TensorSplit::backward_to_cut(int r) {
  Rank& rank = *ranks_[static_cast<std::size_t>(r)];
  Stream& s = rank.stream();
  Network& net = rank.net();
  const TensorSliceLayout& l = rank.layout;
  const float* p = slices_.params(rank.slice);
  float* g = slices_.grads(rank.slice);
  const int c = rank.columns, rows = rows_;
  const bool hybrid = mode_ == TensorMode::kHybrid;
  const float* x = hybrid ? rank.gathered.as<float>() : net.layer_output(model::kPool2);
  const float* dz = hybrid ? rank.sums_grad.as<float>() : net.output_gradient(model::kLocal4);
  float* dx = hybrid ? rank.gathered_grad.as<float>() : net.output_gradient(model::kPool2);
  float* h = rank.h.as<float>();
  float* dh = rank.dh.as<float>();
  // The hybrid's weight gradients sum over all N x b rows, that is over the N towers'
  // losses: divided by N they are chapter 4's mean over towers.
  auto mean_over_towers = [&](int count, float* grad) {
    if (hybrid && ranks() > 1) ops::scal(s, count, 1.0f / static_cast<float>(ranks()), grad);
  };
  auto add_weight_decay = [&](const char* name, std::size_t at, int count) {
    ops::axpy(s, count, model::parameter(name).weight_decay, p + at, g + at);
  };
  // local4, its rows: dW4_r [c, 192] = h^T dz; dh [R, c] = dz W4_r^T.
  s.set_scope("local4 grad");
  ops::gemm(s, true, false, c, kOut4, rows, 1.0f, h, c, dz, kOut4, 0.0f, g + l.local4_weights_at(),
            kOut4);
  ops::gemm(s, false, true, rows, c, kOut4, 1.0f, dz, kOut4, p + l.local4_weights_at(), kOut4,
            0.0f, dh, c);
  mean_over_towers(c * kOut4, g + l.local4_weights_at());
  add_weight_decay("local4/weights", l.local4_weights_at(), c * kOut4);
  // local3, its columns: dh where its ReLU passed; dW3_r [2304, c] = x^T dh; db3_r = dh^T
  // ones; and the rank's part of local3's input gradient, dx_r [R, 2304] = dh W3_r^T.
  s.set_scope("local3 grad");
  ops::relu_backward(s, rows * c, h, dh, dh);
  ops::gemm(s, true, false, kIn3, c, rows, 1.0f, x, kIn3, dh, c, 0.0f, g + l.local3_weights_at(), c);
  ops::gemv(s, true, rows, c, 1.0f, dh, c, rank.ones.as<float>(), 0.0f, g + l.local3_biases_at());
  ops::gemm(s, false, true, rows, kIn3, c, 1.0f, dh, c, p + l.local3_weights_at(), c, 0.0f, dx, kIn3);
  mean_over_towers(kIn3 * c, g + l.local3_weights_at());
  mean_over_towers(c, g + l.local3_biases_at());
  add_weight_decay("local3/weights", l.local3_weights_at(), kIn3 * c);
  s.set_scope("");
}

void TensorSplit::f(int only) {
  sum_partials(TensorCollective::kF, only, static_cast<std::size_t>(batch_) * kIn3,
               [](Rank& rank) { return rank.net().output_gradient(model::kPool2); });
}

void TensorSplit::reduce_scatter_pool2_gradient() {
  std::vector<float*> partials;
  for (auto& rank : ranks_) partials.push_back(rank->gathered_grad.as<float>());
  collective(TensorCollective::kScatterPool2Gradient, [&] {
    rows_collectives_->reduce_scatter(partials, static_cast<std::size_t>(rows_) * kIn3, streams_);
  });
}

void TensorSplit::backward_convolutions(int r) {
  Rank& rank = *ranks_[static_cast<std::size_t>(r)];
  Stream& s = rank.stream();
  Network& net = rank.net();
  if (mode_ == TensorMode::kHybrid) {  // this tower's rows of the reduce-scattered sums
    const Chunk own = rows_collectives_->shard(static_cast<std::size_t>(rows_) * kIn3, r);
    s.copy(net.output_gradient(model::kPool2), rank.gathered_grad.as<float>() + own.offset,
           own.size * sizeof(float), "own dpool2");
  }
  net.backward_layers(s, slices_.params(r), model::kConv1, model::kPool2, slices_.grads(r), 0,
                      TensorSliceLayout::conv_floats());
}

void TensorSplit::all_reduce_replicated() {
  std::vector<float*> grads;
  for (int r = 0; r < ranks(); ++r) grads.push_back(slices_.grads(r));
  collective(TensorCollective::kReplicated, [&] {
    mean_->average(grads, TensorSliceLayout::replicated_floats(), streams_);
  });
}

void TensorSplit::update(int r, float learning_rate, float decay) {
  Rank& rank = *ranks_[static_cast<std::size_t>(r)];
  Stream& s = rank.stream();
  const int count = static_cast<int>(rank.layout.size());
  ops::sgd_update(s, count, learning_rate, slices_.grads(r), slices_.params(r));
  ops::ema_update(s, count, decay, slices_.params(r), slices_.averages(r));
}

float TensorSplit::shard_decay(int r) const {
  return ranks_[static_cast<std::size_t>(r)]->host_decay.as<float>()[0];
}

float TensorSplit::loss() const {
  float decay = 0;
  for (const auto& rank : ranks_) decay += rank->host_decay.as<float>()[0];
  return towers_.back()->losses.as<float>()[model::kCrossEntropy] + decay;
}

}  // namespace towers
