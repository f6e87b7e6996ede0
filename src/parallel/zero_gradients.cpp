// SPDX-License-Identifier: MIT
#include "parallel/zero_gradients.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "model/gradient_layers.hpp"
#include "model/network.hpp"
#include "model/parameters.hpp"

namespace towers {

TransientGradients::TransientGradients(std::vector<std::unique_ptr<Tower>>& towers,
                                       bool transient)
    : towers_(towers), transient_(transient) {
  if (!transient_) return;
  for (auto& tower : towers_) tower->grads = Buffer();  // made at the first step instead
}

std::vector<float*> TransientGradients::begin_step() {
  std::vector<float*> grads;
  for (auto& tower : towers_) {
    if (transient_ && tower->grads.empty()) {
      tower->grads = tower->device->allocate(model::kNumParameters * sizeof(float),
                                             MemoryCategory::kGradients);
    }
    grads.push_back(tower->grads.as<float>());
  }
  return grads;
}

namespace {

// The model layer (Network's Layer: conv1 = 0 ... softmax_linear = 8) of gradient layer k.
int model_layer_of(int k) {
  const auto& names = model::Network::layer_names();
  const auto it = std::find(names.begin(), names.end(), model::gradient_layers()[k].name);
  if (it == names.end()) {
    throw std::logic_error("no model layer is named " + model::gradient_layers()[k].name);
  }
  return static_cast<int>(it - names.begin());
}

}  // namespace

BucketedGradients::BucketedGradients(std::vector<std::unique_ptr<Tower>>& towers,
                                     ShardedCollectives& collectives, double bucket_mb)
    : towers_(towers), collectives_(collectives), buckets_(make_buckets(bucket_mb)) {
  // Bucket b's layers: from below the previous bucket's last layer (the top of the model
  // for the first) down to its own last layer, or to conv1 for the last bucket, so that
  // layers without variables (pooling, normalization) run with the bucket they precede.
  int above = model::kLayerCount;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const int lowest = b + 1 == buckets_.size() ? 0 : model_layer_of(buckets_[b].last_layer);
    last_.push_back(above - 1);
    first_.push_back(lowest);
    above = lowest;
    largest_ = std::max(largest_, buckets_[b].count);
  }
  for (auto& tower : towers_) tower->grads = Buffer();  // never whole at this stage
}

void BucketedGradients::backward(std::span<const float* const> params,
                                 std::span<float* const> grad_shard,
                                 std::span<Stream* const> streams) {
  const std::size_t count = model::kNumParameters;
  if (buffers_.empty()) {
    for (auto& tower : towers_) {
      buffers_.push_back(
          tower->device->allocate(largest_ * sizeof(float), MemoryCategory::kGradients));
    }
  }
  std::vector<float*> bucket_buffers;
  for (Buffer& buffer : buffers_) bucket_buffers.push_back(buffer.as<float>());
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const Chunk bucket{buckets_[b].offset, buckets_[b].count};
    // Every tower's part of the backward pass that finishes this bucket, then the bucket's
    // reduce-scatter; the next bucket's layers overwrite the buffer only after it (same
    // stream, and the collective's contract: the other towers have read it by then).
    for (std::size_t i = 0; i < towers_.size(); ++i) {
      towers_[i]->network->backward_layers(*streams[i], params[i], first_[b], last_[b],
                                           bucket_buffers[i], bucket.offset, bucket.size);
    }
    collectives_.reduce_scatter_bucket(bucket_buffers, count, bucket, streams);
    for (std::size_t i = 0; i < towers_.size(); ++i) {
      const Chunk mine = collectives_.shard(count, static_cast<int>(i));
      const Chunk part = overlap(mine, bucket);
      if (part.size == 0) continue;
      streams[i]->copy(grad_shard[i] + (part.offset - mine.offset),
                       bucket_buffers[i] + (part.offset - bucket.offset),
                       part.size * sizeof(float), "keep gradient shard");
    }
  }
}


}  // namespace towers
