// SPDX-License-Identifier: MIT
// The ring all-reduce: what NCCL does, written with the runtime's copies and events.
//
// n towers stand in a ring; tower r receives only from its left neighbour r-1 (mod n).
// Every buffer is cut into n chunks (ring_chunk). A step moves one chunk per tower, all n
// transfers at once, each on its receiver's stream:
//
//   reduce-scatter, steps s = 0..n-2: tower r pulls chunk (r-1-s) from r-1 into its
//     receive buffer and adds it into its own copy. After n-1 steps tower r holds the full
//     sum of chunk r+1, which it scales by 1/n: the mean of its chunk, computed once.
//     (Made with Reduction::kSum, for chapter 10's partial products, it keeps the sum.)
//   all-gather, steps t = 0..n-2: tower r copies chunk (r-t), already a mean, from r-1
//     straight into place. After n-1 steps every tower holds every mean.
//
// Each tower sends and receives count/n elements per step, 2(n-1) steps in all, whatever n:
// the reason a ring scales (see bench/allreduce_bench.cpp for busbw).
//
// Ordering, with events only. done_[r][g+1] is recorded on tower r's stream after its step
// g (done_[r][0]: after the work enqueued before average()). Before step g tower r waits
// for done_[r-1][g]:
//   - read after write: the chunk r pulls at step g is the one r-1 finished writing at
//     step g-1 (at g = 0, r-1's own gradients).
//   - write after read: could r-1 overwrite a chunk while r still copies it? Waits chain
//     around the ring: r-1's step g waited for r-2's step g-1, ..., for r's step g-n+1. r-1
//     rewrites the chunk that r read at step g only at step g+n-1 (reduce-scatter step s
//     reads the chunk that all-gather step s overwrites), which is therefore after it.
//   - the caller's next writes: r's last read of r-1's buffer is its last step, so at the
//     end tower r-1 waits for done_[r][2(n-1)] before its stream runs anything else.
// Scaling only the owned chunk, before the all-gather, also avoids a hazard: a full-buffer
// scale at the end would write memory the right neighbour may still be copying.
//
// The two halves, called apart (chapter 8's ShardedCollectives): reduce_scatter() runs
// steps 0..n-2 and all_gather() steps n-1..2n-3, each ending as average() ends, with every
// tower waiting until its right neighbour has read its buffer for the last time. In
// between, tower r owns chunk r+1 and may rewrite it (ZeRO's update). The all-gather's
// first step needs no more: its start marker done_[r][n-1], recorded after that update,
// is what tower r+1 waits for before copying chunk r+1 out of r's buffer, and each chunk
// a tower forwards during the gather is written once, one step before it is read.
//
// ZeRO-2 reduces one bucket of the buffer at a time (reduce_scatter_bucket): the same
// steps, the same chunks of the whole buffer, each step moving only the part of its chunk
// inside the bucket. Every element meets the same adds in the same order, and crosses the
// same links, as in one reduce_scatter() of the whole buffer.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/blas.hpp"
#include "kernels/host/blas.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/allreduce_checks.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

int wrap(int index, int n) { return ((index % n) + n) % n; }

// y[n] += x[n] (or *= alpha with scale), traced under the ring step's name rather than as
// a bare "axpy", so the timeline reads as the algorithm.
void add_into(Stream& stream, const std::string& name, int n, const float* x, float* y) {
  stream.launch(
      name, [=] { host::axpy(n, 1.0f, x, y); },
      [=](const CudaLaunchContext& ctx) { cuda::axpy(ctx, n, 1.0f, x, y); });
}

void scale(Stream& stream, int n, float alpha, float* x) {
  stream.launch(
      span::kRingScale, [=] { host::scal(n, alpha, x); },
      [=](const CudaLaunchContext& ctx) { cuda::scal(ctx, n, alpha, x); });
}

class Ring final : public AllReduce, public ShardedCollectives {
 public:
  Ring(Runtime& runtime, std::span<const int> device_of_tower, std::size_t max_count,
       WireBytes* wire, Reduction reduction)
      : device_of_tower_(device_of_tower.begin(), device_of_tower.end()),
        max_count_(max_count),
        wire_(wire),
        reduction_(reduction) {
    const int n = towers();
    const std::size_t chunk = ring_chunk(max_count, n, 0).size;  // the largest chunk
    for (int r = 0; r < n; ++r) {
      Device& device = runtime.device(device_of_tower_[r]);
      // At least one float: a zero-byte cudaMalloc may return no address at all.
      receive_.push_back(device.allocate(std::max<std::size_t>(chunk, 1) * sizeof(float),
                                         MemoryCategory::kCommunication));
      done_.emplace_back();
      for (int g = 0; g <= steps(); ++g) done_.back().push_back(device.create_wait_event());
    }
    for (int s = 1; s < n; ++s) {
      const std::string of = std::to_string(s) + "/" + std::to_string(n - 1);
      reduce_names_.push_back(span::ring_reduce_scatter(of));
      add_names_.push_back(span::ring_reduce_scatter_add(of));
      gather_names_.push_back(span::ring_all_gather(of));
    }
  }

  // The all-reduce: both halves back to back, with no wait between them (a tower starts
  // gathering as soon as its left neighbour has finished its last reduce step).
  void average(std::span<float* const> buffers, std::size_t count,
               std::span<Stream* const> streams) override {
    if (!start(buffers, count, streams, 0)) return;  // the mean of one buffer is itself
    enqueue_steps(0, steps(), buffers, count, streams, Chunk{0, count});
    release_after(steps(), streams);
  }

  // The first half alone: steps 0..n-2.
  void reduce_scatter(std::span<float* const> buffers, std::size_t count,
                      std::span<Stream* const> streams) override {
    if (!start(buffers, count, streams, 0)) return;
    enqueue_steps(0, towers() - 1, buffers, count, streams, Chunk{0, count});
    release_after(towers() - 1, streams);
  }

  // The first half on one bucket of the buffer: the same steps, each moving only the part
  // of its chunk inside the bucket. An element is still added in its chunk's order (the
  // chunks are the whole buffer's), so it ends with the bits reduce_scatter() gives it.
  void reduce_scatter_bucket(std::span<float* const> buckets, std::size_t count, Chunk bucket,
                             std::span<Stream* const> streams) override {
    detail::check_bucket("ring", count, bucket);
    if (!start(buckets, count, streams, 0) || bucket.size == 0) return;
    enqueue_steps(0, towers() - 1, buckets, count, streams, bucket);
    release_after(towers() - 1, streams);
  }

  // The second half alone: steps n-1..2n-3, on buffers whose owned chunks the caller has
  // just written (the update), which is what done_[r][n-1] now marks.
  void all_gather(std::span<float* const> buffers, std::size_t count,
                  std::span<Stream* const> streams) override {
    if (!start(buffers, count, streams, towers() - 1)) return;
    enqueue_steps(towers() - 1, steps(), buffers, count, streams, Chunk{0, count});
    release_after(steps(), streams);
  }

  Chunk shard(std::size_t count, int tower) const override {
    return ring_chunk(count, towers(), wrap(tower + 1, towers()));
  }

  std::string_view name() const override { return "ring"; }

 private:
  int towers() const { return static_cast<int>(device_of_tower_.size()); }
  int steps() const { return 2 * (towers() - 1); }

  // Checks the call, then marks on every tower's stream that the work enqueued before it
  // is done (done_[r][first_step]). False when there is nothing to move.
  bool start(std::span<float* const> buffers, std::size_t count, std::span<Stream* const> streams,
             int first_step) {
    detail::check_average_arguments("ring", device_of_tower_, buffers, streams);
    if (count > max_count_) {
      throw std::invalid_argument("ring all-reduce: count " + std::to_string(count) +
                                  " exceeds the max_count " + std::to_string(max_count_) +
                                  " it was set up for");
    }
    if (towers() == 1 || count == 0) return false;
    for (int r = 0; r < towers(); ++r) streams[r]->record(*done_[r][first_step]);
    return true;
  }

  // Steps [first, end): reduce-scatter steps below n-1, all-gather steps from there.
  // `window`: the range of the count-element buffer that buffers[r] holds, {0, count}
  // unless one bucket is reduce-scattered (reduce-scatter steps only).
  void enqueue_steps(int first, int end, std::span<float* const> buffers, std::size_t count,
                     std::span<Stream* const> streams, Chunk window) {
    const int n = towers();
    // Step-major order: every record of step g is enqueued before any wait of step g+1,
    // so each wait refers to this call's record (waits take the latest one).
    for (int g = first; g < end; ++g) {
      for (int r = 0; r < n; ++r) {
        const int left = wrap(r - 1, n);
        Stream& stream = *streams[r];
        // Waits for the left neighbour's step g-1: the chunk it sends now is final.
        stream.wait(*done_[left][g]);
        if (g < n - 1) {
          reduce_step(stream, g, count, window, buffers[left], buffers[r], r);
        } else {
          gather_step(stream, g - (n - 1), count, buffers[left], buffers[r], r);
        }
        stream.record(*done_[r][g + 1]);
      }
    }
  }

  // Tower r's right neighbour reads r's buffer until its own step `last`-1; later work on
  // r's stream (the optimizer, the next backward pass) must not overwrite it before.
  void release_after(int last, std::span<Stream* const> streams) {
    for (int r = 0; r < towers(); ++r) streams[r]->wait(*done_[wrap(r + 1, towers())][last]);
  }

  // The part of `chunk` inside `window`, with its offset counted from the window's start
  // (where a bucket's buffer begins); empty when they do not meet.
  static Chunk within(Chunk chunk, Chunk window) {
    const Chunk part = overlap(chunk, window);
    return part.size > 0 ? Chunk{part.offset - window.offset, part.size} : Chunk{0, 0};
  }

  // Reduce-scatter step s on tower r: receive chunk (r-1-s) from the left, add it in (its
  // part inside `window`, where left and mine begin).
  // An empty chunk (count < n) still enqueues its empty copy, so every step is traced.
  void reduce_step(Stream& stream, int s, std::size_t count, Chunk window, const float* left,
                   float* mine, int r) {
    const int n = towers();
    const Chunk c = within(ring_chunk(count, n, wrap(r - 1 - s, n)), window);
    float* receive = receive_[r].as<float>();
    stream.copy(receive, left + c.offset, c.size * sizeof(float), reduce_names_[s]);
    count_wire(wrap(r - 1, n), r, c.size);
    if (c.size > 0) add_into(stream, add_names_[s], static_cast<int>(c.size), receive, mine + c.offset);
    if (s == n - 2 && reduction_ == Reduction::kMean) {
      // The chunk r now owns, (r+1), holds the sum over all towers: make it the mean.
      const Chunk owned = within(ring_chunk(count, n, wrap(r + 1, n)), window);
      if (owned.size > 0) {
        scale(stream, static_cast<int>(owned.size), 1.0f / static_cast<float>(n), mine + owned.offset);
      }
    }
  }

  // All-gather step t on tower r: copy the finished chunk (r-t) from the left into place.
  void gather_step(Stream& stream, int t, std::size_t count, const float* left, float* mine,
                   int r) {
    const Chunk c = ring_chunk(count, towers(), wrap(r - t, towers()));
    stream.copy(mine + c.offset, left + c.offset, c.size * sizeof(float), gather_names_[t]);
    count_wire(wrap(r - 1, towers()), r, c.size);
  }

  // A chunk of `size` floats copied from tower `from`'s buffer to tower `to`'s.
  void count_wire(int from, int to, std::size_t size) {
    if (wire_ != nullptr) {
      wire_->add(device_of_tower_[from], device_of_tower_[to], size * sizeof(float));
    }
  }

  std::vector<int> device_of_tower_;
  std::size_t max_count_;
  WireBytes* wire_;  // where chunks copied between devices are counted; may be null
  Reduction reduction_;  // the mean (scale the owned chunk) or the sum
  std::vector<Buffer> receive_;  // per tower: [largest chunk] floats on its device
  // done_[r][g]: tower r has finished step g-1; [0]: the work before average() is done.
  std::vector<std::vector<std::unique_ptr<Event>>> done_;
  std::vector<std::string> reduce_names_;  // "ring rs 1/3" ...
  std::vector<std::string> add_names_;     // "ring rs 1/3 add" ...
  std::vector<std::string> gather_names_;  // "ring ag 1/3" ...
};

}  // namespace

std::unique_ptr<AllReduce> make_ring_allreduce(Runtime& runtime,
                                               std::span<const int> device_of_tower,
                                               std::size_t max_count, WireBytes* wire,
                                               Reduction reduction) {
  detail::check_towers("ring", runtime, device_of_tower);
  return std::make_unique<Ring>(runtime, device_of_tower, max_count, wire, reduction);
}

std::unique_ptr<ShardedCollectives> make_ring_collectives(Runtime& runtime,
                                                          std::span<const int> device_of_tower,
                                                          std::size_t max_count,
                                                          WireBytes* wire, Reduction reduction) {
  detail::check_towers("ring", runtime, device_of_tower);
  return std::make_unique<Ring>(runtime, device_of_tower, max_count, wire, reduction);
}

std::vector<int> ring_reduction_order(int towers, int chunk) {
  // Chunk c leaves tower c untouched at step 0 (tower c+1 pulls it and adds its own values),
  // then travels right one tower per step, each adding its own: c, c+1, ..., c-1.
  std::vector<int> order;
  for (int k = 0; k < towers; ++k) order.push_back(wrap(chunk + k, towers));
  return order;
}

}  // namespace towers
