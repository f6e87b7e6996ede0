// SPDX-License-Identifier: MIT
// The all-reduce on real GPUs: the ring and NCCL against the same exact oracle, and NCCL's
// refusal of two ranks on one GPU. Skipped, out loud, without a GPU. A collective of one
// rank moves no byte: NCCL with one rank per GPU needs two GPUs to prove anything, so on
// one GPU those tests skip saying so, rather than pass; the ring's towers share the GPUs,
// so it always runs with two or more towers.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/allreduce.hpp"
#include "trace/trace.hpp"
#include "tower_buffers.hpp"

namespace towers {
namespace {

using testing::expected_mean;
using testing::first_mismatch;
using testing::round_robin;
using testing::TowerBuffers;

#define TOWERS_NEED_GPU()                                                         \
  if (cuda_device_count() == 0) {                                                 \
    GTEST_SKIP() << "needs a CUDA device, found 0";                               \
  }

// NCCL with one rank would pass without moving a byte: skip, saying what it needs.
#define TOWERS_NEED_TWO_GPUS()                                                              \
  if (cuda_device_count() < 2) {                                                           \
    GTEST_SKIP() << "needs 2 CUDA devices (NCCL with one rank moves no byte), found "      \
                 << cuda_device_count();                                                   \
  }

std::unique_ptr<Runtime> cuda_runtime() {
  return Runtime::create({BackendChoice::kCuda, cuda_device_count()});
}

// The most GPUs we can give one rank each with a power-of-two count, so ncclAvg's
// multiply by 1/n is exact and NCCL must match the ring bit for bit.
int power_of_two_gpus() {
  int n = 1;
  while (2 * n <= cuda_device_count()) n *= 2;
  return n;
}

TEST(CudaRing, EqualsTheExactMeanWithTowersSharingGpus) {
  TOWERS_NEED_GPU();
  auto rt = cuda_runtime();
  for (int n : {2, 3, 4}) {
    const auto placement = round_robin(n, rt->device_count());
    const std::size_t count = 100'003;
    auto ring = make_ring_allreduce(*rt, placement, count);
    TowerBuffers towers(*rt, placement, count);
    towers.upload();
    ring->average(towers.buffers(), count, towers.streams());
    ring->average(towers.buffers(), count, towers.streams());  // reuse, back to back
    towers.upload(1);
    ring->average(towers.buffers(), count, towers.streams());
    EXPECT_EQ(first_mismatch(towers.download(), expected_mean(n, count, 1)), "") << "ring n=" << n;
  }
}

TEST(CudaNccl, EqualsTheRingAndTheExactMean) {
  TOWERS_NEED_TWO_GPUS();
  auto rt = cuda_runtime();
  const int n = power_of_two_gpus();  // at least 2: one rank per GPU
  const auto placement = round_robin(n, n);
  for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1'000'003}}) {
    auto nccl = make_nccl_allreduce(*rt, placement);
    EXPECT_EQ(nccl->name(), "nccl");
    TowerBuffers by_nccl(*rt, placement, count);
    by_nccl.upload();
    rt->trace().set_enabled(true);
    nccl->average(by_nccl.buffers(), count, by_nccl.streams());
    const auto got = by_nccl.download();
    rt->trace().set_enabled(false);
    int spans = 0;
    for (const TraceEvent& e : rt->trace().collect()) spans += e.name == "nccl allreduce";
    rt->trace().clear();
    EXPECT_EQ(spans, n) << "one traced nccl allreduce per tower";
    EXPECT_EQ(first_mismatch(got, expected_mean(n, count)), "") << "nccl n=" << n;

    auto ring = make_ring_allreduce(*rt, placement, count);
    TowerBuffers by_ring(*rt, placement, count);
    by_ring.upload();
    ring->average(by_ring.buffers(), count, by_ring.streams());
    EXPECT_EQ(first_mismatch(by_ring.download(), got[0]), "") << "ring vs nccl n=" << n;
  }
}

// ZeRO-2's reduce-scatter of one bucket at a time: after three uneven buckets, one inside
// a shard and two across shard boundaries, each tower's shard holds the exact mean.
void expect_bucket_by_bucket_exact(Runtime& rt, const std::vector<int>& placement, bool use_nccl) {
  const int n = static_cast<int>(placement.size());
  const std::size_t count = 4000 * static_cast<std::size_t>(n);  // NCCL's chunks are equal
  const std::vector<Chunk> buckets = {{0, 300}, {300, count - 1300}, {count - 1000, 1000}};
  const auto mean = expected_mean(n, count);
  auto collectives = use_nccl ? make_nccl_collectives(rt, placement)
                              : make_ring_collectives(rt, placement, count);
  TowerBuffers towers(rt, placement, count);
  towers.upload();
  for (const Chunk& bucket : buckets) {
    std::vector<float*> parts;
    for (float* buffer : towers.buffers()) parts.push_back(buffer + bucket.offset);
    collectives->reduce_scatter_bucket(parts, count, bucket, towers.streams());
  }
  const auto got = towers.download();
  for (int t = 0; t < n; ++t) {
    const Chunk mine = collectives->shard(count, t);
    for (std::size_t e = mine.offset; e < mine.offset + mine.size; ++e) {
      ASSERT_EQ(got[t][e], mean[e]) << collectives->name() << " n=" << n << " tower " << t
                                    << " element " << e;
    }
  }
}

// NCCL: one ncclReduce per owner of a part of the bucket, one rank per GPU.
TEST(CudaNccl, ReduceScatterBucketByBucketLeavesEachShardTheExactMean) {
  TOWERS_NEED_TWO_GPUS();
  auto rt = cuda_runtime();
  const int n = power_of_two_gpus();
  expect_bucket_by_bucket_exact(*rt, round_robin(n, n), /*use_nccl=*/true);
}

// The ring: 2 and 4 towers on the GPUs there are (sharing one, if one is all), so its
// chunks really travel, between GPUs or between buffers of one GPU.
TEST(CudaRing, ReduceScatterBucketByBucketLeavesEachShardTheExactMean) {
  TOWERS_NEED_GPU();
  auto rt = cuda_runtime();
  for (int n : {2, 4}) expect_bucket_by_bucket_exact(*rt, round_robin(n, rt->device_count()), false);
}

TEST(CudaNccl, TwoTowersOnOneGpuAreRefusedWithAHint) {
  TOWERS_NEED_GPU();
  auto rt = cuda_runtime();
  try {
    make_nccl_allreduce(*rt, std::vector<int>{0, 0});
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("one rank per GPU"), std::string::npos) << message;
    EXPECT_NE(message.find("ring"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace towers
