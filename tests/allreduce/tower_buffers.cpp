// SPDX-License-Identifier: MIT
#include "tower_buffers.hpp"

#include <algorithm>

namespace towers::testing {

std::vector<float> expected_mean(int towers, std::size_t count, int round) {
  std::vector<float> mean(count);
  for (std::size_t e = 0; e < count; ++e) {
    float sum = 0;  // exact: at most 8 integers of magnitude <= 8
    for (int t = 0; t < towers; ++t) sum += input_value(t, e, round);
    mean[e] = sum * (1.0f / static_cast<float>(towers));
  }
  return mean;
}

std::vector<int> round_robin(int towers, int devices) {
  std::vector<int> device_of_tower(towers);
  for (int t = 0; t < towers; ++t) device_of_tower[t] = t % devices;
  return device_of_tower;
}

TowerBuffers::TowerBuffers(Runtime& runtime, std::vector<int> device_of_tower, std::size_t count)
    : count_(count), device_of_tower_(std::move(device_of_tower)) {
  const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(float);
  for (int t = 0; t < static_cast<int>(device_of_tower_.size()); ++t) {
    Device& device = runtime.device(device_of_tower_[t]);
    streams_.push_back(device.create_stream());
    streams_.back()->set_tower(t);
    stream_pointers_.push_back(streams_.back().get());
    device_.push_back(device.allocate(bytes));
    pointers_.push_back(device_.back().as<float>());
    staging_.push_back(device.allocate_pinned(bytes));
  }
}

void TowerBuffers::upload(int round) {
  for (int t = 0; t < towers(); ++t) {
    float* host = staging_[t].as<float>();
    for (std::size_t e = 0; e < count_; ++e) host[e] = input_value(t, e, round);
    streams_[t]->copy(pointers_[t], host, count_ * sizeof(float), "upload");
  }
}

std::vector<std::vector<float>> TowerBuffers::download() {
  for (int t = 0; t < towers(); ++t) {
    streams_[t]->copy(staging_[t].data(), pointers_[t], count_ * sizeof(float), "download");
  }
  synchronize();
  std::vector<std::vector<float>> out;
  for (int t = 0; t < towers(); ++t) {
    const float* host = staging_[t].as<float>();
    out.emplace_back(host, host + count_);
  }
  return out;
}

void TowerBuffers::synchronize() {
  for (auto& stream : streams_) stream->synchronize();
}

}  // namespace towers::testing
