// SPDX-License-Identifier: MIT
// Exercise 08: gradient buckets overlapped with the backward pass — chapter 6's step.
//
// The backward pass runs from the last layer down and records an event as each layer's
// gradients become final. Instead of one all-reduce after the whole pass (chapter 4), the
// gradients are cut into buckets, contiguous ranges of whole layers, and each bucket is
// all-reduced on a second stream of the tower's device, the communication stream, as
// soon as the layer that completes it is done, while the backward pass goes on. The
// optimizer is applied bucket by bucket, each waiting only for its own bucket's mean.
//
// overlap_buckets() is that schedule, cut free of the model: the grader runs the backward
// pass, hands in the all-reduce and the optimizer, and watches what runs where and when
// with rendezvous probes, gates, and the data the optimizer reads.
#pragma once

#include <cstddef>
#include <functional>
#include <span>

#include "runtime/event.hpp"
#include "runtime/stream.hpp"

namespace towers::exercises {

/// One bucket: a contiguous range of the flat gradient buffer (as chapter 6's Bucket).
struct GradientBucket {
  std::size_t offset = 0;  ///< first element in the flat gradient buffer
  std::size_t count = 0;   ///< elements
  int last_layer = 0;      ///< the layer (backward order) whose gradients complete it
};

/// What overlap_buckets needs of tower i.
struct OverlapTower {
  Stream* compute = nullptr;  ///< the backward pass runs here; the optimizer goes here too
  Stream* comm = nullptr;     ///< the communication stream, on the same device
  float* grads = nullptr;     ///< the flat gradient buffer; bucket b is grads + offset
  /// [layer], backward order: recorded on `compute` by the backward pass as soon as that
  /// layer's gradients are final (already enqueued when overlap_buckets is called).
  std::span<Event* const> layer_ready;
  /// [bucket]: yours to record on `comm` once that bucket's mean is in `grads`.
  std::span<Event* const> bucket_reduced;
};

/// Enqueues the average over the towers of `count` floats at parts[i] on streams[i] (one
/// part and one stream per tower, in tower order), as chapter 4's all-reduce; returns at
/// once. Later work on streams[i] runs after the mean is in parts[i].
using AllReduce = std::function<void(std::span<float* const> parts, std::size_t count,
                                     std::span<Stream* const> streams)>;
/// Enqueues the optimizer's update of bucket `bucket` on towers[tower].compute: it reads
/// that bucket's range of the tower's gradients when it runs. Returns at once.
using ApplyBucket = std::function<void(int tower, int bucket)>;

/// Enqueues, for one step, after the backward pass and before any of it has run:
///   1. for each bucket b, in order (the order in which the backward pass completes them):
///      every tower's comm stream waits for layer_ready[buckets[b].last_layer] (that layer
///      only, not the whole pass); then ONE allreduce of bucket b's range of every tower's
///      gradients on the comm streams; then each comm stream records bucket_reduced[b];
///   2. for each tower i and bucket b, in order: towers[i].compute waits for its
///      bucket_reduced[b] (that bucket only), then apply(i, b).
/// Returns at once: the host never waits here. Called from one host thread, every step.
void overlap_buckets(std::span<const OverlapTower> towers,
                     std::span<const GradientBucket> buckets, const AllReduce& allreduce,
                     const ApplyBucket& apply);

}  // namespace towers::exercises
