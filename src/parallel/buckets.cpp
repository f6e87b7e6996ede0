// SPDX-License-Identifier: MIT
#include "parallel/buckets.hpp"

#include "model/gradient_layers.hpp"

namespace towers {

std::vector<Bucket> make_buckets(double bucket_mb) {
  const double cap_bytes = bucket_mb * 1024.0 * 1024.0;
  const auto& layers = model::gradient_layers();
  std::vector<Bucket> buckets;
  for (int k = 0; k < static_cast<int>(layers.size()); ++k) {
    const auto& layer = layers[k];
    const double joined_bytes =
        buckets.empty() ? 0 : static_cast<double>(buckets.back().count + layer.count) * sizeof(float);
    if (buckets.empty() || joined_bytes > cap_bytes) {
      buckets.push_back({layer.offset, layer.count, k, layer.name});
      continue;
    }
    // Layer k lies just before the bucket in the flat buffer: grow it downwards.
    Bucket& bucket = buckets.back();
    bucket.offset = layer.offset;
    bucket.count += layer.count;
    bucket.last_layer = k;
    bucket.layers += "+" + layer.name;
  }
  return buckets;
}

std::vector<float*> bucket_of(std::span<float* const> buffers, const Bucket& bucket) {
  std::vector<float*> out;
  for (float* buffer : buffers) out.push_back(buffer + bucket.offset);
  return out;
}


}  // namespace towers
