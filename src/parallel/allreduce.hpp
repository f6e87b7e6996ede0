// SPDX-License-Identifier: MIT
// All-reduce: where towers meet in chapter 4. Every tower holds its gradients in one flat
// float buffer on its own device; average() leaves every buffer holding the element-wise
// mean of all of them, as TF's average_gradients() does, without a host in the middle.
//
// Contract, for every implementation:
//   - average() only enqueues: it returns before any data has moved, like a kernel
//     launch. buffers[i] is read and written by work on streams[i] (and, for the ring, by
//     copies that tower i+1 enqueues on its own stream), so it must stay valid until
//     streams[i] has finished the average.
//   - Work enqueued on streams[i] *before* average() is finished before any tower reads
//     buffers[i]; work enqueued on streams[i] *after* average() sees the mean and may
//     overwrite buffers[i] freely, since no other tower still reads it. Events and
//     stream order are the only synchronization; the host never waits.
//   - Every tower ends with the same bits. For inputs whose sums are exact in float
//     (small integers, powers of two) and a power-of-two tower count, the result is
//     the exact mean.
//   - One host thread calls average() at a time (streams are used from one thread).
//
// Three implementations: a ring (reduce-scatter then all-gather, built from stream copies,
// events and an axpy; runs on both backends and teaches what NCCL does), NCCL itself
// (cuda backend only, one rank per GPU), and chapter 3's averaging on device 0 followed
// by a copy of the mean to every tower (device0: the baseline of chapter 4's experiment).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "parallel/wire_bytes.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// What a collective leaves where it combines the towers' values: their mean (chapter 4's
/// gradients, ncclAvg) or their sum (chapter 10's partial products, ncclSum: the t parts of
/// one matrix product add up to it; a mean would divide it by t).
enum class Reduction {
  kMean,  ///< the element-wise mean: the sum, then scaled by 1/towers once
  kSum,   ///< the element-wise sum, unscaled
};

/// Averages one flat float buffer per tower, in place (or sums it: Reduction). Introduced
/// in chapter 4.
class AllReduce {
 public:
  /// Frees what the implementation set up (buffers, events, communicators). Destroy it
  /// only after the streams it enqueued on have finished, as with cudaFree.
  virtual ~AllReduce();

  /// Enqueues averaging buffers[i][0..count) in place (summing them, for an all-reduce made
  /// with Reduction::kSum), tower i's work on streams[i]; returns at once. buffers[i] is
  /// device memory of the device streams[i] runs on.
  /// Throws std::invalid_argument when the spans' sizes differ from the tower count,
  /// a stream is on another device than its tower was set up for, or count is larger
  /// than the implementation was set up for.
  virtual void average(std::span<float* const> buffers, std::size_t count,
                       std::span<Stream* const> streams) = 0;

  /// "ring", "nccl" or "device0", for tables and summary lines.
  virtual std::string_view name() const = 0;
};

/// One tower's share of a buffer of `count` elements split among `towers`: sizes differ
/// by at most one element (the first count % towers chunks get one more), and chunks are
/// empty when count < towers. The ring moves one chunk per step.
struct Chunk {
  std::size_t offset = 0;  ///< first element
  std::size_t size = 0;    ///< elements
};

/// Chunk `index` (0..towers-1) of `count` elements split `towers` ways.
Chunk ring_chunk(std::size_t count, int towers, int index);

/// The order in which the ring adds the towers' values of chunk `chunk` (chapter 10's
/// order-matched reference): {chunk, chunk+1, ..., chunk-1} (mod towers). The chunk starts
/// as tower chunk's own values; at reduce-scatter step s tower chunk+s+1 adds the running
/// sum it receives to its own values, so the sum is
///   (((v[c] + v[c+1]) + v[c+2]) + ... + v[c-1]),
/// float addition being commutative though not associative. Each chunk starts at another
/// tower, so with 3 or more towers the chunks are added in different orders.
std::vector<int> ring_reduction_order(int towers, int chunk);

/// The elements two ranges of one buffer share; size 0 when they do not meet (chapter 8:
/// the part of a gradient bucket inside a tower's shard).
Chunk overlap(Chunk a, Chunk b);

/// The ring all-reduce, on either backend. Tower i lives on runtime device
/// device_of_tower[i]; several towers may share a device (towers per device).
/// Allocates, once, one receive buffer of ceil(max_count / towers) floats per tower on
/// its device and the events that order the ring's steps; average() then accepts any
/// count up to max_count. Throws std::invalid_argument for an empty tower list or a
/// device index outside the runtime. When `wire` is given, every copy of a chunk from one
/// device to another is counted there (chapter 8). `reduction`: the mean (chapter 4) or
/// the sum (chapter 10: its owned chunk is not scaled).
std::unique_ptr<AllReduce> make_ring_allreduce(Runtime& runtime,
                                               std::span<const int> device_of_tower,
                                               std::size_t max_count, WireBytes* wire = nullptr,
                                               Reduction reduction = Reduction::kMean);

/// Chapter 3's averaging as an all-reduce (chapter 4's --allreduce device0): one stream
/// on tower 0's device waits for every tower, peer-copies and sums their buffers in tower
/// order, scales by 1/N and copies the mean back to every tower. Same sums, in the same
/// order, as chapter 3's DeviceAverage. Allocates, once, a receive buffer of max_count
/// floats on that device per tower on another device. Throws std::invalid_argument as
/// make_ring_allreduce.
std::unique_ptr<AllReduce> make_device0_allreduce(Runtime& runtime,
                                                  std::span<const int> device_of_tower,
                                                  std::size_t max_count);

/// An all-reduce's two halves, called apart (chapter 8): reduce_scatter() leaves each
/// tower the mean (or, made with Reduction::kSum, the sum: chapter 10) of one shard of the
/// buffer, all_gather() copies every tower's shard to all the others. ZeRO puts the optimizer's update between them, each tower updating
/// only the shard it owns. Same contract as AllReduce::average (only enqueues; events and
/// stream order are the only synchronization; one host thread at a time), per call:
/// the two calls may take different buffers (gradients, then parameters).
class ShardedCollectives {
 public:
  /// Frees what the implementation set up; only after its streams have finished.
  virtual ~ShardedCollectives();

  /// The range of a `count`-element buffer tower `tower` owns: where reduce_scatter()
  /// leaves its mean and from where all_gather() sends it. The towers' shards tile
  /// [0, count) and differ in size by at most one element (none when count < towers).
  virtual Chunk shard(std::size_t count, int tower) const = 0;

  /// Enqueues: buffers[i] in shard(count, i) becomes the element-wise mean of that range
  /// over all towers. The rest of buffers[i] is left holding partial sums: scratch.
  /// Throws std::invalid_argument as AllReduce::average.
  virtual void reduce_scatter(std::span<float* const> buffers, std::size_t count,
                              std::span<Stream* const> streams) = 0;

  /// reduce_scatter() of one bucket, a range of a `count`-element buffer (ZeRO-2 reduces
  /// each bucket of gradients as the backward pass finishes it, chapter 8). buckets[i]
  /// holds tower i's elements bucket.offset .. bucket.offset + bucket.size - 1, from
  /// buckets[i][0] on; afterwards the part of it inside shard(count, i) holds their mean
  /// and the rest is scratch. The shards are the whole buffer's, so the buckets of one
  /// buffer, reduced one after another, leave each tower the mean of its shard, as one
  /// reduce_scatter() of the buffer would. Throws as reduce_scatter(), and
  /// std::invalid_argument when the bucket does not lie inside [0, count).
  virtual void reduce_scatter_bucket(std::span<float* const> buckets, std::size_t count,
                                     Chunk bucket, std::span<Stream* const> streams) = 0;

  /// Enqueues: shard(count, j) of every buffers[j] is copied into the same range of every
  /// other tower's buffer, so each ends holding all shards. Throws as reduce_scatter().
  virtual void all_gather(std::span<float* const> buffers, std::size_t count,
                          std::span<Stream* const> streams) = 0;

  /// "ring" or "nccl".
  virtual std::string_view name() const = 0;
};

/// The ring's two halves (the same steps as make_ring_allreduce, whose average() is
/// reduce_scatter() followed by all_gather(), bit for bit). Tower r owns chunk r+1 (mod
/// towers) of ring_chunk: the chunk its last reduce-scatter step completes. Allocates and
/// counts into `wire` as make_ring_allreduce. reduce_scatter_bucket() adds every element
/// in the order reduce_scatter() does, so its means are the same bits, and moves the same
/// bytes over the links in all. `reduction` as make_ring_allreduce.
std::unique_ptr<ShardedCollectives> make_ring_collectives(Runtime& runtime,
                                                          std::span<const int> device_of_tower,
                                                          std::size_t max_count,
                                                          WireBytes* wire = nullptr,
                                                          Reduction reduction = Reduction::kMean);

/// ncclReduceScatter (ncclAvg, or ncclSum with Reduction::kSum) and ncclAllGather in
/// place, tower r owning chunk r of count / towers elements; reduce_scatter_bucket() is one
/// ncclReduce (the same operation) to each owner of the part of the bucket in its shard. Throws UsageError as make_nccl_allreduce, and, from the calls,
/// std::invalid_argument when count is not a multiple of the towers (NCCL's chunks are
/// equal: pad the buffer).
std::unique_ptr<ShardedCollectives> make_nccl_collectives(Runtime& runtime,
                                                          std::span<const int> device_of_tower,
                                                          Reduction reduction = Reduction::kMean);

/// NCCL's all-reduce with ncclAvg (ncclSum with Reduction::kSum), one rank per tower,
/// tower i on runtime device device_of_tower[i] (ncclCommInitAll over those GPUs). Throws UsageError, saying what to
/// use instead, when the runtime is not the cuda backend, the build has no CUDA, or two
/// towers share a GPU (NCCL refuses two ranks on one GPU).
std::unique_ptr<AllReduce> make_nccl_allreduce(Runtime& runtime,
                                               std::span<const int> device_of_tower,
                                               Reduction reduction = Reduction::kMean);

}  // namespace towers
