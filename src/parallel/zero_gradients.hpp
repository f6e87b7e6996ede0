// SPDX-License-Identifier: MIT
// Where ZeRO-2 and -3 keep the gradients: each tower keeps only its shard of their mean,
// and holds whole, for a moment, only the gradients the reduce-scatter still needs.
//
// BucketedGradients (ZeRO-2): the backward pass runs bucket by bucket (chapter 6's
// buckets of whole layers, in the order the backward pass finishes them). For each bucket
// every tower computes that bucket's layers into one bucket-sized buffer; the bucket is
// reduce-scattered (ShardedCollectives::reduce_scatter_bucket), each tower copies the part
// of it inside its shard into its shard, and the buffer takes the next bucket. The towers'
// passes are enqueued bucket by bucket across the towers, not one tower's whole pass after
// another, so each bucket's reduce-scatter can be enqueued while the backward pass goes on.
// A tower then holds its shard plus the largest bucket (zero_memory.hpp's B), not the
// whole gradient; with the tutorial's layers the largest is local3's, 83% of the model,
// since a layer's gradients are written whole (as in DeepSpeed, where a bucket is filled
// from whole parameters' gradients). The reduce-scatter runs on each tower's stream between
// its buckets, so nothing overlaps it here; chapter 6 shows how a second stream would.
//
// TransientGradients (ZeRO-3): the backward pass, which gathers each layer's parameters as
// it goes (layer_gather.hpp), writes every layer's gradients into one whole buffer, the
// step's single bucket: reduce-scattered after the backward pass, its owned shard copied
// into the tower's persistent gradient shard (B = Ψ). With stages 0 and 1 the towers keep
// the buffer make_towers made, as chapter 4.
//
// What a step holds for a moment (the bucket buffers, ZeRO-3's whole buffer) is allocated
// at the first step and kept for the next, not freed and allocated again each step: on a
// GPU cudaFree waits for the whole device, and each step would pay a cudaMalloc. A
// framework gets the same from its caching allocator (PyTorch keeps a freed block for the
// next request). The ledger's peak is the same either way, since every step holds them;
// what the ZeRO paper counts between steps, the model state a tower must keep, is still
// only its shard. Introduced in chapter 8.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "parallel/allreduce.hpp"
#include "parallel/buckets.hpp"
#include "parallel/tower.hpp"

namespace towers {

/// The towers' whole gradient buffers: persistent (stages 0-1) or made for the steps (3).
class TransientGradients {
 public:
  /// `transient`: free each tower's gradient buffer now, if it has one (none when made
  /// without: TowerLayout::whole_gradients), and make one at the first step.
  /// `towers` must outlive this object.
  TransientGradients(std::vector<std::unique_ptr<Tower>>& towers, bool transient);

  /// Before the step's first pass: each tower's whole buffer (tower.grads); when transient,
  /// allocated as MemoryCategory::kGradients at the first call and kept for the next
  /// steps (see the file comment). Returns the buffers, tower i's first.
  std::vector<float*> begin_step();

 private:
  std::vector<std::unique_ptr<Tower>>& towers_;
  bool transient_;
};

/// ZeRO-2's backward pass, bucket by bucket, each bucket reduce-scattered into the towers'
/// gradient shards as soon as every tower has computed it.
class BucketedGradients {
 public:
  /// Buckets of at most `bucket_mb` MiB of whole layers (make_buckets; 0: one per layer),
  /// reduce-scattered with `collectives` over buffers of model::kNumParameters elements.
  /// Frees each tower's whole gradient buffer (tower.grads) now, if it has one: it is
  /// never used. Make the towers without it (TowerLayout::whole_gradients), or the
  /// ledger's peak still counts it.
  /// `towers` and `collectives` must outlive this object.
  BucketedGradients(std::vector<std::unique_ptr<Tower>>& towers, ShardedCollectives& collectives,
                    double bucket_mb);

  /// The buckets, in the order the backward pass finishes them.
  const std::vector<Bucket>& buckets() const { return buckets_; }
  /// Elements of the largest bucket: the gradients a tower holds whole at once.
  std::size_t largest_bucket() const { return largest_; }

  /// Enqueues every tower's backward pass (after its forward pass: tower_forward), bucket
  /// by bucket: each tower computes the bucket's layers into its bucket buffer on
  /// streams[i], with params[i] (the whole parameters, on tower i's device); the bucket
  /// is reduce-scattered; each tower copies the mean of the part inside its shard,
  /// collectives.shard(kNumParameters, i), into grad_shard[i] (that shard's size). After
  /// the last bucket grad_shard[i] holds the mean of the shard, the bits one
  /// reduce_scatter() of the whole buffer leaves. Allocates the bucket buffers
  /// (MemoryCategory::kGradients, largest_bucket() floats per tower) at the first call and
  /// keeps them for the next steps (see the file comment).
  void backward(std::span<const float* const> params, std::span<float* const> grad_shard,
                std::span<Stream* const> streams);

 private:
  std::vector<std::unique_ptr<Tower>>& towers_;
  ShardedCollectives& collectives_;
  std::vector<Bucket> buckets_;
  // Per bucket: the model layers (Network's Layer) the backward pass runs for it, from
  // last_[b] down to first_[b].
  std::vector<int> first_, last_;
  std::size_t largest_ = 0;
  std::vector<Buffer> buffers_;  // per tower: [largest_] floats, from the first step on
};

}  // namespace towers
