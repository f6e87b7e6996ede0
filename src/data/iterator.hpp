// SPDX-License-Identifier: MIT
// TowerIterator: one tower's input, made ahead of time — a producer/consumer queue.
//
// Chapters 1-3 dequeue a batch on the training thread and copy it while the towers wait.
// Chapter 4 gives each tower an iterator instead, the shape of tf.data's
// shuffle -> shard -> map(distort) -> batch -> prefetch -> copy-to-device:
//
//   producer thread (one per tower)             consumer (the training loop)
//   -------------------------------             ----------------------------
//   take a free slot          <-- free list <-- release(batch, compute stream)
//   distort B images on the pool                  ^
//     into the slot's pinned buffer                | compute stream waits for batch.ready,
//   copy stream: wait `consumed`, copy H2D,       | runs the step, records `consumed`
//     record `ready`          --> ready queue --> next()
//
// Which examples: iterator_plan.hpp (per-epoch shuffle; tower i takes slice i of each
// global batch; the tail of an epoch that cannot give every tower a batch is dropped).
// What each image is: fill_batch() (preprocess.hpp) for exactly those indices, so the
// pipeline adds no math; it only moves work off the training thread.
//
// Slots and their reuse. There are prefetch_depth slots, each a pinned host buffer and a
// device buffer (images then labels) and two events:
//   - `ready` is recorded on the copy stream after the copy. The consumer makes its
//     compute stream wait for it (Stream::wait), so the tower waits for its own batch only
//     and the host never blocks on the copy.
//   - `consumed` is recorded by release() on the consumer's compute stream, after the
//     step that reads the batch. Before copying into that device buffer again, the copy
//     stream waits for it: a device-side wait, the host does not block. Before writing
//     the pinned buffer again, the producer waits on the host for `ready` (the previous
//     copy out of it has finished), because the host, not a stream, writes it.
// So a slot is reused only after the compute that used it has finished, with no host
// synchronization on the training thread.
//
// Threads. next(), release() and epoch() belong to the consumer: one host thread at a time
// per iterator (different towers' iterators may be used from different threads). The
// other accessors may be called from any thread. The Dataset, Device, ThreadPool and
// options.trace must outlive the iterator. Destroying it mid-epoch stops the producer
// (it finishes the batch in hand, then exits) and waits until the copy stream and every
// released batch's compute are done, so its buffers are freed unused. Do not destroy it
// while holding a batch that was not released.
//
// Errors. An exception in the producer (a distortion, a transform, a failed copy) is
// stored: next() first returns the batches finished before it, then rethrows it, and
// keeps rethrowing it on every later call. Nothing is lost and nothing hangs.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "data/cifar10.hpp"
#include "data/input_position.hpp"
#include "data/preprocess.hpp"
#include "data/thread_pool.hpp"
#include "runtime/device.hpp"

namespace towers {
class Trace;
}

namespace towers::data {

/// What a TowerIterator produces. Every tower of one run uses the same options.
struct IteratorOptions {
  int num_towers = 1;        ///< T: towers sharing each epoch
  int batch_size = 128;      ///< B: images per tower per step
  std::uint64_t seed = 1;    ///< seeds the shuffle and the distortions
  Mode mode = Mode::kTrain;  ///< kTrain: distorted_inputs; kEval: central crops
  int prefetch_depth = 2;    ///< K: slots, so batches made ahead of next(); at least 1
  std::int64_t steps = 0;    ///< batches to make, then stop; 0: endless, across epochs
  /// The sequence's first batch: 0 for a fresh run; a resumed run starts at the batch it
  /// stopped before (steps_before() of its checkpoint's position), so it continues exactly.
  std::int64_t first_step = 0;
  /// Where preprocessing shows up as host spans "distort" (kEval: "preprocess"), tagged
  /// with the tower, when tracing is on. Null: not traced. Copies are traced by the
  /// copy stream itself, as "copy input" ops tagged with the tower.
  Trace* trace = nullptr;
  /// Optional hook, run on a pool thread after each image is preprocessed, with its
  /// dataset index and its image [24, 24, 3]. Tests use it to inject a failure or a
  /// delay. Called concurrently: it must be thread-safe. May throw (see Errors above).
  std::function<void(std::size_t example, float* image)> transform = {};
};

/// One tower's batch on its device, handed out by next() and returned by release().
struct Batch {
  const float* images = nullptr;         ///< [batch_size, 24, 24, 3] on the tower's device
  const std::int32_t* labels = nullptr;  ///< [batch_size] on the tower's device
  Event* ready = nullptr;                ///< completes when the copy to the device has landed
  std::span<const std::size_t> indices;  ///< [batch_size] dataset indices, host memory
  std::int64_t step = 0;                 ///< first_step, first_step + 1, ...: its place in the sequence
  std::uint64_t epoch = 0;               ///< the epoch its examples were drawn from
  int slot = -1;                         ///< the buffers it lives in (for release())
};

/// One tower's input pipeline: shuffle, shard, distort, batch, prefetch, copy.
/// Introduced in chapter 4.
class TowerIterator {
 public:
  /// Starts producing tower `tower`'s batches of `data` into memory of `device`,
  /// distorting on `pool`. Throws UsageError for options that cannot work (see
  /// check_sharding; prefetch_depth < 1; steps < 0) and std::out_of_range for a tower
  /// outside 0 .. num_towers - 1.
  TowerIterator(const Dataset& data, const IteratorOptions& options, int tower, Device& device,
                ThreadPool& pool);
  /// The iterator keeps a reference to the dataset, so a temporary one is refused.
  TowerIterator(Dataset&& data, const IteratorOptions& options, int tower, Device& device,
                ThreadPool& pool) = delete;
  /// Stops the producer and waits for the work that uses the buffers (see above).
  ~TowerIterator();
  TowerIterator(const TowerIterator&) = delete;
  TowerIterator& operator=(const TowerIterator&) = delete;

  /// The next batch, blocking until the producer has it (the time blocked adds to
  /// input_wait_ms()). Its device memory is valid for work ordered after batch.ready.
  /// Rethrows a producer error. Throws UsageError after the last of options.steps, or
  /// when the consumer already holds all prefetch_depth batches (it would wait forever).
  Batch next();

  /// Returns `batch`'s slot. Records an event on `compute_stream`, which must already
  /// hold every op that reads the batch; the slot is overwritten only after them. The
  /// stream must belong to the iterator's device (CUDA records an event only there).
  /// Throws std::logic_error for a batch this iterator did not hand out or got back,
  /// and std::invalid_argument for a stream of another device.
  void release(const Batch& batch, Stream& compute_stream);

  /// The tower this iterator feeds.
  int tower() const { return tower_; }
  /// Batches per tower in one epoch (iterator_plan.hpp's batches_per_epoch).
  std::size_t batches_per_epoch() const { return batches_per_epoch_; }
  /// The epoch of the most recent batch next() returned (0 before the first).
  std::uint64_t epoch() const;
  /// Batches finished and waiting for next(): prefetch_depth when the consumer is slow.
  int ready_count() const;
  /// Milliseconds next() has spent blocked so far: the tower's wait for input.
  double input_wait_ms() const;
  /// Where the consumer stands, as a checkpoint records it: the position of the batch
  /// next() returns next (position_after(first_step + batches taken)). Consumer thread.
  InputPosition position() const;

 private:
  struct Slot {
    Buffer pinned;                    // host staging: images, then labels
    Buffer device;                    // the same layout on the tower's device
    std::unique_ptr<Event> ready;     // copy stream: the copy into `device` has landed
    std::unique_ptr<Event> consumed;  // compute stream: the step that read it has run
    std::vector<std::size_t> indices;
    std::int64_t step = 0;
    std::uint64_t epoch = 0;
    bool held = false;                // handed out by next(), not yet released
  };
  void produce();
  int take_free_slot();
  void fill(Slot& slot, std::uint64_t epoch);

  const Dataset& data_;
  const IteratorOptions options_;
  const int tower_;
  Device& device_;
  ThreadPool& pool_;
  std::size_t batches_per_epoch_ = 0;
  std::size_t image_bytes_ = 0;  // B * 24 * 24 * 3 floats; labels follow
  std::vector<Slot> slots_;
  std::unique_ptr<Stream> copy_stream_;  // after slots_: destroyed before their buffers

  mutable std::mutex mutex_;
  std::condition_variable free_cv_;   // producer: a slot came back, or stop
  std::condition_variable ready_cv_;  // consumer: a batch is ready, or the producer ended
  std::deque<int> free_;              // slots the producer may fill
  std::deque<int> ready_;             // filled slots, in step order
  int held_ = 0;                      // slots the consumer holds
  std::int64_t delivered_ = 0;        // batches next() returned
  std::uint64_t epoch_ = 0;
  double input_wait_ms_ = 0;
  bool stopping_ = false;             // the destructor asked the producer to stop
  bool producer_done_ = false;        // made every batch of options.steps, or failed
  std::exception_ptr error_;          // the producer's failure, rethrown by next()
  std::thread producer_;              // last: starts when everything above exists
};

}  // namespace towers::data
