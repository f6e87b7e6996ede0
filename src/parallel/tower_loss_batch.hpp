// SPDX-License-Identifier: MIT
// tower_loss on an iterator's batch: chapter 4's tower reads its own batch, already on its
// device, and its own copy of the parameters.
//
// Chapters 2-3 copy slice `tower.index` of a host global batch inside tower_loss; here the
// TowerIterator has made and copied the batch ahead of time, so the tower only computes.
#pragma once

#include "data/iterator.hpp"
#include "parallel/tower.hpp"

namespace towers {

/// Enqueues on tower.stream: the forward pass and loss on batch.images / batch.labels
/// ([B, 24, 24, 3] and [B], on the tower's device) with `params` ([kNumParameters] on the
/// tower's device), the backward pass into tower.grads, and a copy of the three losses to
/// tower.losses. Returns at once. The caller orders the stream after batch.ready first
/// (tower.stream->wait(*batch.ready)) and releases the batch after this call. Throws
/// std::invalid_argument when the batch size is not the tower's. Introduced in chapter 4.
void tower_loss(Tower& tower, const float* params, const data::Batch& batch);

/// As above, calling layer_done(k) as the backward pass enqueues the last op writing the
/// gradients of model::gradient_layers()[k] (model::Network::LayerDone): what it enqueues
/// on tower.stream runs once they are final. Introduced in chapter 6.
void tower_loss(Tower& tower, const float* params, const data::Batch& batch,
                const model::Network::LayerDone& layer_done);

/// As the first, with each layer's parameters acquired from `params` just before use
/// (model::Network::LayerParams): chapter 8's ZeRO-3, whose towers hold a shard of the
/// parameters and gather each layer when it runs. Introduced in chapter 8.
void tower_loss(Tower& tower, const model::Network::LayerParams& params, const data::Batch& batch);

/// The first half of the first: the forward pass and loss, and the copy of the three
/// losses to tower.losses; no backward pass. Chapter 8's ZeRO-2 enqueues that itself,
/// bucket by bucket (BucketedGradients), with the same ops on the same values. Throws as
/// the first. Introduced in chapter 8.
void tower_forward(Tower& tower, const float* params, const data::Batch& batch);

}  // namespace towers
