// SPDX-License-Identifier: MIT
// The NCCL all-reduce: one communicator rank per GPU, ncclAllReduce with ncclAvg in place
// (ncclSum for chapter 10's partial products).
// Built only with CUDA; allreduce_nccl_unavailable.cpp stands in elsewhere.
//
// One host thread drives every rank, so each average() is one ncclGroupStart/ncclGroupEnd:
// inside a group NCCL only records the calls, and ncclGroupEnd launches all ranks' kernels
// together (ungrouped, the first rank's call could wait for ranks not yet called).
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/cuda/check.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/allreduce_checks.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

// NCCL's name for what the collective leaves: the mean (chapter 4) or the sum (chapter 10).
ncclRedOp_t nccl_op(Reduction reduction) {
  return reduction == Reduction::kSum ? ncclSum : ncclAvg;
}

class NcclAllReduce final : public AllReduce {
 public:
  NcclAllReduce(std::span<const int> device_of_tower, Reduction reduction)
      : device_of_tower_(device_of_tower.begin(), device_of_tower.end()),
        comms_(device_of_tower.size()),
        op_(nccl_op(reduction)) {
    // Runtime device i is CUDA ordinal i (the runtime uses the first N GPUs).
    NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(comms_.size()),
                               device_of_tower_.data()));
  }

  ~NcclAllReduce() override {
    // Teardown: nothing useful to do if a destroy fails. Synchronize the streams first,
    // as for any resource their work uses.
    for (ncclComm_t comm : comms_) (void)ncclCommDestroy(comm);
  }

  void average(std::span<float* const> buffers, std::size_t count,
               std::span<Stream* const> streams) override {
    detail::check_average_arguments("nccl", device_of_tower_, buffers, streams);
    if (count == 0) return;
    std::vector<cudaStream_t> handles(streams.size());
    enqueue_from(0, buffers, count, streams, handles);
  }

  std::string_view name() const override { return "nccl"; }

 private:
  // Tower i's launch encloses tower i+1's, and the innermost runs the group. Why nest:
  // each Stream::launch traces its op between two events recorded before and after its
  // cuda half, but NCCL launches the kernels only at ncclGroupEnd. Nested, every tower's
  // "nccl allreduce" span closes after ncclGroupEnd, so it covers the real kernel.
  void enqueue_from(std::size_t i, std::span<float* const> buffers, std::size_t count,
                    std::span<Stream* const> streams, std::vector<cudaStream_t>& handles) {
    if (i == streams.size()) {
      NCCL_CHECK(ncclGroupStart());
      try {
        for (std::size_t r = 0; r < streams.size(); ++r) {
          NCCL_CHECK(ncclAllReduce(buffers[r], buffers[r], count, ncclFloat, op_, comms_[r],
                                   handles[r]));
        }
      } catch (...) {
        (void)ncclGroupEnd();  // close the group so later NCCL calls are not swallowed by it
        throw;
      }
      NCCL_CHECK(ncclGroupEnd());
      return;
    }
    streams[i]->launch(
        span::kNcclAllReduce,
        [] { throw std::logic_error("the nccl all-reduce ran on a host stream"); },
        [&, i](const CudaLaunchContext& ctx) {
          handles[i] = static_cast<cudaStream_t>(ctx.stream);
          enqueue_from(i + 1, buffers, count, streams, handles);
        });
  }

  std::vector<int> device_of_tower_;
  std::vector<ncclComm_t> comms_;  // rank i: tower i's GPU
  ncclRedOp_t op_;                 // ncclAvg or ncclSum
};

// Chapter 8's two halves: ncclReduceScatter (ncclAvg) and ncclAllGather, both in place.
// NCCL's chunks are equal, count / towers each, and rank r's is chunk r: in place means
// the receive buffer of the reduce-scatter (the send buffer of the all-gather) is chunk r
// of the full buffer.
class NcclCollectives final : public ShardedCollectives {
 public:
  NcclCollectives(std::span<const int> device_of_tower, Reduction reduction)
      : device_of_tower_(device_of_tower.begin(), device_of_tower.end()),
        comms_(device_of_tower.size()),
        op_(nccl_op(reduction)) {
    NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(comms_.size()),
                               device_of_tower_.data()));
  }
  ~NcclCollectives() override {
    for (ncclComm_t comm : comms_) (void)ncclCommDestroy(comm);
  }

  Chunk shard(std::size_t count, int tower) const override {
    const std::size_t size = count / comms_.size();
    return Chunk{static_cast<std::size_t>(tower) * size, size};
  }

  void reduce_scatter(std::span<float* const> buffers, std::size_t count,
                      std::span<Stream* const> streams) override {
    check(buffers, count, streams);
    if (count == 0) return;
    std::vector<cudaStream_t> handles(streams.size());
    enqueue_from(0, span::kNcclReduceScatter, streams, handles, [&](std::size_t r) {
      const Chunk mine = shard(count, static_cast<int>(r));
      NCCL_CHECK(ncclReduceScatter(buffers[r], buffers[r] + mine.offset, mine.size, ncclFloat,
                                   op_, comms_[r], handles[r]));
    });
  }

  // NCCL's reduce-scatter takes equal chunks of its buffer, which a bucket's parts of the
  // shards are not: one ncclReduce (ncclAvg) per owner instead, every rank calling them in
  // the same order, all in one group.
  void reduce_scatter_bucket(std::span<float* const> buckets, std::size_t count, Chunk bucket,
                             std::span<Stream* const> streams) override {
    check(buckets, count, streams);
    detail::check_bucket("nccl", count, bucket);
    if (bucket.size == 0) return;
    std::vector<cudaStream_t> handles(streams.size());
    enqueue_from(0, span::kNcclReduceScatter, streams, handles, [&](std::size_t r) {
      for (std::size_t owner = 0; owner < comms_.size(); ++owner) {
        const Chunk part = overlap(shard(count, static_cast<int>(owner)), bucket);
        if (part.size == 0) continue;
        float* data = buckets[r] + (part.offset - bucket.offset);
        NCCL_CHECK(ncclReduce(data, data, part.size, ncclFloat, op_, static_cast<int>(owner),
                              comms_[r], handles[r]));
      }
    });
  }

  void all_gather(std::span<float* const> buffers, std::size_t count,
                  std::span<Stream* const> streams) override {
    check(buffers, count, streams);
    if (count == 0) return;
    std::vector<cudaStream_t> handles(streams.size());
    enqueue_from(0, span::kNcclAllGather, streams, handles, [&](std::size_t r) {
      const Chunk mine = shard(count, static_cast<int>(r));
      NCCL_CHECK(ncclAllGather(buffers[r] + mine.offset, buffers[r], mine.size, ncclFloat,
                               comms_[r], handles[r]));
    });
  }

  std::string_view name() const override { return "nccl"; }

 private:
  void check(std::span<float* const> buffers, std::size_t count, std::span<Stream* const> streams) {
    detail::check_average_arguments("nccl", device_of_tower_, buffers, streams);
    if (count % comms_.size() != 0) {
      throw std::invalid_argument("nccl reduce-scatter/all-gather: count " + std::to_string(count) +
                                  " is not a multiple of the " + std::to_string(comms_.size()) +
                                  " towers; NCCL's chunks are equal, so pad the buffer");
    }
  }

  // As NcclAllReduce::enqueue_from: each tower's launch encloses the next one's, the
  // innermost runs the group, so every tower's span covers the real kernel.
  template <typename Call>
  void enqueue_from(std::size_t i, const char* name, std::span<Stream* const> streams,
                    std::vector<cudaStream_t>& handles, const Call& call) {
    if (i == streams.size()) {
      NCCL_CHECK(ncclGroupStart());
      try {
        for (std::size_t r = 0; r < streams.size(); ++r) call(r);
      } catch (...) {
        (void)ncclGroupEnd();
        throw;
      }
      NCCL_CHECK(ncclGroupEnd());
      return;
    }
    streams[i]->launch(
        name, [] { throw std::logic_error("an nccl collective ran on a host stream"); },
        [&, i](const CudaLaunchContext& ctx) {
          handles[i] = static_cast<cudaStream_t>(ctx.stream);
          enqueue_from(i + 1, name, streams, handles, call);
        });
  }

  std::vector<int> device_of_tower_;
  std::vector<ncclComm_t> comms_;
  ncclRedOp_t op_;  // ncclAvg or ncclSum
};

// The checks both NCCL factories make before creating communicators.
void check_nccl_towers(Runtime& runtime, std::span<const int> device_of_tower) {
  if (runtime.backend() != Backend::kCuda) {
    throw UsageError("the NCCL all-reduce needs the cuda backend (real GPUs); on the " +
                     std::string(to_string(runtime.backend())) +
                     " backend use the ring all-reduce.");
  }
  detail::check_towers("nccl", runtime, device_of_tower);
  for (std::size_t i = 0; i < device_of_tower.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (device_of_tower[i] == device_of_tower[j]) {
        throw UsageError("NCCL needs one rank per GPU, but towers " + std::to_string(j) + " and " +
                         std::to_string(i) + " are both on GPU " +
                         std::to_string(device_of_tower[i]) +
                         ": NCCL refuses two ranks on one GPU. Use one tower per GPU, or the "
                         "ring all-reduce, which allows several towers per device.");
      }
    }
  }
}

}  // namespace

std::unique_ptr<AllReduce> make_nccl_allreduce(Runtime& runtime,
                                               std::span<const int> device_of_tower,
                                               Reduction reduction) {
  check_nccl_towers(runtime, device_of_tower);
  return std::make_unique<NcclAllReduce>(device_of_tower, reduction);
}

std::unique_ptr<ShardedCollectives> make_nccl_collectives(Runtime& runtime,
                                                          std::span<const int> device_of_tower,
                                                          Reduction reduction) {
  check_nccl_towers(runtime, device_of_tower);
  return std::make_unique<NcclCollectives>(device_of_tower, reduction);
}

}  // namespace towers
