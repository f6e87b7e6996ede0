// SPDX-License-Identifier: MIT
// Gradient buckets: the ranges of the flat gradient buffer that chapter 6 all-reduces
// one at a time, each as soon as the backward pass has finished it.
//
// Buckets follow model::gradient_layers(), the order in which the backward pass finishes
// layers (softmax_linear first). Consecutive layers join one bucket while it stays within
// the cap, as PyTorch DDP's bucket_cap_mb does; a layer larger than the cap is a bucket of
// its own, and a cap of 0 gives one bucket per layer. Because later layers sit later in
// the flat buffer, every bucket is one contiguous range. Introduced in chapter 6.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace towers {

/// One bucket: a contiguous range of the flat gradient buffer.
struct Bucket {
  std::size_t offset = 0;  ///< first element
  std::size_t count = 0;   ///< elements
  int last_layer = 0;      ///< index into gradient_layers() of the layer that completes it
  std::string layers;      ///< "local3+conv2", for logs
};

/// The buckets for a cap of `bucket_mb` MiB (0: one per layer), in the order the backward
/// pass completes them. They cover the whole buffer, without gaps or overlaps.
std::vector<Bucket> make_buckets(double bucket_mb);

/// `buffers[i] + bucket.offset` for each tower: one bucket of every tower's gradients.
std::vector<float*> bucket_of(std::span<float* const> buffers, const Bucket& bucket);

/// The largest --bucket-mb: far above the model's 4.1 MiB, and small enough that the cap
/// in bytes fits any integer it is converted to.
inline constexpr double kMaxBucketMb = 1024;

/// Chapter 6's flags: --overlap on|off and --bucket-mb.
struct OverlapFlags {
  bool overlap = true;    ///< --overlap on: all-reduce buckets during the backward pass
  double bucket_mb = 0;   ///< --bucket-mb: cap per bucket in MiB; 0 = one bucket per layer
};

}  // namespace towers
