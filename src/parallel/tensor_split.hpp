// SPDX-License-Identifier: MIT
// TensorSplit: chapter 10's lesson — the tower splits a layer.
//
// Two matrices hold 90 % of this model's parameters: local3 [2304, 384] and local4
// [384, 192]. Megatron-LM splits such a pair over t ranks without gathering anything in
// between (TensorMode::kTensorParallel, `--tp t`; every rank sees the same batch of b):
//
//   local3, split by columns:  h_r = relu(x W3[:, cols r] + b3[cols r])   [b, 384/t]
//                              each output is a whole dot product: no communication.
//   local4, split by rows:     z_r = h_r W4[rows r, :]                     [b, 192]
//                              a partial sum: z = z_0 + ... + z_(t-1).
//   g (forward):  all-reduce z_r -> z on every rank; then relu(z + b4), local4's bias added
//                 once, after the sum.
//   f (backward): local3's input gradient is a partial sum too,
//                 dx_r = dh_r W3[:, cols r]^T, all-reduced -> dx on every rank.
//
// f and g are conjugate: g is an all-reduce forward and nothing backward (every rank
// already holds the whole output gradient), f nothing forward (every rank holds the whole
// input) and an all-reduce backward. Everything else — the convolutions, softmax_linear,
// the loss — runs whole on every rank (model::Network, layer by layer), on identical
// values, so its gradients are identical and need no communication.
//
// Krizhevsky's hybrid ("One weird trick", 2014; TensorMode::kHybrid, `--hybrid`): N towers
// of b images each. The convolutions (94 % of the compute, 10 % of the parameters) run
// data-parallel, each tower on its own images; pool2's outputs are all-gathered, so every
// tower holds all N x b rows; the FC pair is split as above over those rows, and its
// partial sums are reduce-scattered back, each tower receiving the summed rows of its own
// images. Backward: the all-gather of local4's output gradient, then the reduce-scatter
// of local3's input gradient. The FC layers' weight gradients never cross a link (each
// tower holds its own columns' over all N x b rows); the replicated parameters (109,450)
// are all-reduced as in chapter 4.
//
// Every op goes through model/ops.hpp (gemm, bias_add, relu, gemv, axpy, scal, dot), so
// both backends run the split. A rank's ops run on its tower's stream; the collectives run
// on those streams too, so a rank's compute waits for them: the first communication on the
// forward critical path, nothing to hide it behind.
//
// Each method only enqueues. Call them in the order of a step (chapter 10's main.cpp):
// per-rank methods for every rank, then the collective that joins them, and so on. Used
// from one host thread. Introduced in chapter 10.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallel/allreduce.hpp"
#include "parallel/tensor_slices.hpp"
#include "parallel/tower.hpp"
#include "parallel/wire_bytes.hpp"

namespace towers {

/// How chapter 10 splits the model.
enum class TensorMode {
  kTensorParallel,  ///< --tp t: t ranks, one batch; local3 by columns, local4 by rows
  kHybrid,          ///< --hybrid: N towers of b; convolutions data-parallel, the FC pair split
};

/// The collectives of a step, each counted apart (bytes on the wire).
enum class TensorCollective {
  kG,                    ///< tensor parallel: all-reduce of local4's partial outputs
  kF,                    ///< tensor parallel: all-reduce of local3's partial input gradients
  kGatherPool2,          ///< hybrid: all-gather of pool2's outputs (N x b rows)
  kScatterLocal4,        ///< hybrid: reduce-scatter of local4's partial outputs
  kGatherLocal4Gradient, ///< hybrid: all-gather of local4's output gradient
  kScatterPool2Gradient, ///< hybrid: reduce-scatter of local3's partial input gradients
  kReplicated,           ///< hybrid: all-reduce (mean) of the replicated gradients (chapter 4's)
  kCount,                ///< how many
};

/// The span-name scope of a collective's ops ("g" -> "g ring rs 1/1"); see span_names.hpp.
const char* collective_scope(TensorCollective collective);

/// Chapter 10's step, rank by rank. Owns each rank's activations for the split layers and
/// the collectives that join the ranks.
class TensorSplit {
 public:
  /// g() and f() over every rank of this object (chapter 10's, and the mesh's one rank).
  static constexpr int kEveryRank = -1;

  /// Rank r is towers[r] (its device, stream, Network, images and labels buffers; its
  /// Network's batch is b) and keeps slices.params(r), grads(r), averages(r).
  /// `collectives`: "ring" (any backend), "nccl" (cuda, one GPU per rank) or "auto" (NCCL
  /// where it can run, else the ring, saying why on cuda). Allocates the split layers'
  /// activations per rank (MemoryCategory::kActivations, activation_floats()). Throws
  /// UsageError as make_nccl_allreduce for "nccl" where NCCL cannot run. `towers` and
  /// `slices` must outlive this object.
  TensorSplit(Runtime& runtime, std::vector<std::unique_ptr<Tower>>& towers,
              TensorSlices& slices, TensorMode mode, const std::string& collectives);
  /// Tensor parallel, the ranks in processes of their own (chapter 11's mesh): `towers`
  /// and `slices` hold this process's ranks (one, in a composed run), and `sum` (made
  /// with Reduction::kSum) joins them with the others' in g and f, on these ranks' streams.
  /// The bytes it moves are its own to count: wire_bytes() stays 0. Allocates as above.
  TensorSplit(std::vector<std::unique_ptr<Tower>>& towers, TensorSlices& slices,
              std::unique_ptr<AllReduce> sum, const std::string& collectives_name);
  /// Tensor parallel on a pipeline stage (chapter 11's mesh, pp > 1): the stage holds
  /// this process's one rank of the group, slices.params(0), and runs its micro-batches
  /// on `stream` in `slots`, one Network of a micro-batch per micro-batch the schedule
  /// stashes at once. Each slot is a "rank" r here with split activations of its own (its
  /// h and dh live from its forward pass to its backward); every slot uses the one slice.
  /// g(r) and f(r) join slot r with the other processes' ranks through `sum`. `slots`,
  /// `stream` and `slices` must outlive this object. Allocates as above, per slot. The
  /// stage calls forward_to_cut, g(r), forward_from_cut(r, labels, losses),
  /// backward_to_local4, backward_to_cut and f(r); the layers before local3 are its own
  /// (chapter 9's), so not forward_convolutions, backward_convolutions, update or loss.
  TensorSplit(Stream& stream, const std::vector<std::unique_ptr<model::Network>>& slots,
              TensorSlices& slices, std::unique_ptr<AllReduce> sum,
              const std::string& collectives_name);
  ~TensorSplit();

  /// Which split.
  TensorMode mode() const { return mode_; }
  /// Ranks (tensor parallel), towers (hybrid) or a pipeline stage's slots.
  int ranks() const { return static_cast<int>(ranks_.size()); }
  /// Images per rank's Network: b.
  int batch_size() const { return batch_; }
  /// Rows the split layers compute: b (tensor parallel) or N x b (hybrid).
  int rows() const { return rows_; }
  /// "ring" or "nccl".
  const std::string& collectives_name() const { return collectives_name_; }

  /// Floats of the split layers' activations one rank allocates (beside its Network's):
  /// tensor parallel h, dh [b, c] and a ones vector [b]; the hybrid also the gathered
  /// pool2 and its gradient [N b, 2304], local4's summed and gathered rows [N b, 192],
  /// with c of the rank's columns and h, dh, ones over N b rows.
  static std::size_t activation_floats(TensorMode mode, int ranks, int batch, std::size_t columns);

  // ---- The forward pass ----
  /// Rank r copies its images and labels from the global batch (host, pinned: images
  /// [global, 24, 24, 3], labels [global]): the whole batch of b (tensor parallel), or its
  /// slice r (hybrid); then conv1 .. pool2 (model::Network::forward_layers).
  void forward_convolutions(int r, const float* global_images, const std::int32_t* global_labels);
  /// Hybrid: every tower's pool2 [b, 2304] into every tower's [N b, 2304] (all-gather).
  void gather_activations();
  /// Rank r: local3's columns, relu(x W3_r + b3_r), then local4's partial sums h_r W4_r.
  void forward_to_cut(int r);
  /// Tensor parallel's g: all-reduce (sum) of local4's partial outputs [b, 192]; every
  /// rank's, or with `only` >= 0 rank `only`'s alone (a pipeline stage's slot).
  void g(int only = kEveryRank);
  /// Hybrid: reduce-scatter (sum) of local4's partial outputs [N b, 192]: each tower its
  /// own images' rows.
  void reduce_scatter_local4();
  /// Rank r: local4's bias (once, after the sum) and ReLU, softmax_linear, the loss
  /// without weight decay (model::Network), and the decay of the rank's shards of
  /// local3's and local4's weights.
  void forward_from_cut(int r);
  /// As forward_from_cut(r), the labels read from `labels` (b on r's device) and the
  /// losses copied to `host_losses` (pinned, model::kLossCount): a pipeline stage's slot,
  /// whose micro-batch changes from one use to the next.
  void forward_from_cut(int r, const std::int32_t* labels, float* host_losses);

  // ---- The backward pass ----
  /// Rank r: softmax_linear's backward, local4's ReLU: the gradient of local4's sum z, and
  /// local4's bias gradient from it (replicated).
  void backward_to_local4(int r);
  /// Hybrid: every tower's gradient of z [b, 192] into every tower's [N b, 192].
  void gather_local4_gradient();
  /// Rank r: local4's rows' and local3's columns' gradients (with their weight decay, and
  /// in the hybrid divided by N: chapter 4's mean over towers), and local3's partial
  /// input gradient dh_r W3_r^T.
  void backward_to_cut(int r);
  /// Tensor parallel's f: all-reduce (sum) of local3's partial input gradients [b, 2304];
  /// every rank's, or rank `only`'s alone, as g().
  void f(int only = kEveryRank);
  /// Hybrid: reduce-scatter (sum) of them [N b, 2304]: each tower its own images' rows.
  void reduce_scatter_pool2_gradient();
  /// Rank r: pool2 .. conv1 backward (model::Network::backward_layers).
  void backward_convolutions(int r);
  /// Hybrid: the mean over towers of the replicated variables' gradients (chapter 4's
  /// all-reduce, on the first replicated_floats() of every slice).
  void all_reduce_replicated();
  /// Rank r: SGD on its slice, then its moving averages.
  void update(int r, float learning_rate, float decay);

  /// After the step's synchronize: the loss as chapter 4 logs it, the last rank's
  /// cross-entropy plus the decay of every rank's shards, added in rank order.
  float loss() const;
  /// After the step's synchronize: the weight decay of rank r's shards of local3's and
  /// local4's weights (the term loss() adds for each rank, in rank order).
  float shard_decay(int r) const;
  /// Bytes `collective` has copied between devices so far (ring only; 0 with NCCL, whose
  /// copies are not seen).
  std::uint64_t wire_bytes(TensorCollective collective) const {
    return wire_by_collective_[static_cast<std::size_t>(collective)];
  }
  /// All of them.
  std::uint64_t wire_bytes() const { return wire_.total(); }

 private:
  struct Rank;
  // Runs `call` with every rank's stream scoped as `collective`, and counts its bytes.
  template <typename Call>
  void collective(TensorCollective which, const Call& call);
  // g's and f's sum of `floats` at `partial(rank)`: every rank's, or rank `only`'s.
  template <typename Partial>
  void sum_partials(TensorCollective which, int only, std::size_t floats, const Partial& partial);
  // Rank r's activations of the split layers, on its stream (both constructors).
  void allocate(Rank& rank);
  // Each rank's activations of the split layers, and its streams.
  void make_ranks(std::vector<std::unique_ptr<Tower>>& towers, TensorSlices& slices);

  TensorMode mode_;
  int batch_ = 0, rows_ = 0;
  std::vector<Tower*> towers_;
  TensorSlices& slices_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<Stream*> streams_;
  std::string collectives_name_;
  WireBytes wire_;
  std::array<std::uint64_t, static_cast<std::size_t>(TensorCollective::kCount)> wire_by_collective_{};
  std::unique_ptr<AllReduce> sum_;            // tensor parallel: g and f
  std::unique_ptr<ShardedCollectives> rows_collectives_;  // hybrid: gathers and scatters of rows
  std::unique_ptr<AllReduce> mean_;           // hybrid: the replicated gradients
};

}  // namespace towers
