// SPDX-License-Identifier: MIT
#include "parallel/average.hpp"

#include <stdexcept>

#include "model/ops.hpp"
#include "model/parameters.hpp"

namespace towers {

void average_gradients_on_host(const std::vector<const float*>& tower_grads, std::size_t n,
                               float* average) {
  if (tower_grads.empty()) throw std::invalid_argument("average_gradients: no towers");
  const float scale = 1.0f / static_cast<float>(tower_grads.size());
  for (std::size_t j = 0; j < n; ++j) {
    float sum = tower_grads[0][j];
    for (std::size_t t = 1; t < tower_grads.size(); ++t) sum += tower_grads[t][j];
    average[j] = sum * scale;
  }
}

DeviceAverage::DeviceAverage(Device& root, const std::vector<std::unique_ptr<Tower>>& towers)
    : root_(root), towers_(towers), stream_(root.create_stream()) {
  if (towers.empty() || towers[0]->device != &root) {
    throw std::invalid_argument("DeviceAverage: tower 0 must live on the root device");
  }
  for (const auto& tower : towers) {
    received_.push_back(tower->device == &root_
                            ? Buffer()
                            : root_.allocate(model::kNumParameters * sizeof(float),
                                             MemoryCategory::kCommunication));
  }
}

const float* DeviceAverage::average_gradients() {
  const int n = static_cast<int>(model::kNumParameters);
  float* sum = towers_[0]->grads.as<float>();
  // Waits for tower 0's backward pass, on the device: the host does not wait.
  stream_->wait(*towers_[0]->done);
  for (std::size_t i = 1; i < towers_.size(); ++i) {
    Tower& tower = *towers_[i];
    stream_->wait(*tower.done);  // tower i's gradients are final
    const float* grads = tower.grads.as<float>();
    if (!received_[i].empty()) {
      stream_->copy(received_[i].data(), grads, n * sizeof(float), "peer copy grads");
      grads = received_[i].as<float>();
    }
    ops::axpy(*stream_, n, 1.0f, grads, sum);  // sum += g_i
  }
  ops::scal(*stream_, n, 1.0f / static_cast<float>(towers_.size()), sum);
  return sum;
}

}  // namespace towers
