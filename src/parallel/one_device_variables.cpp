// SPDX-License-Identifier: MIT
#include "parallel/one_device_variables.hpp"

#include "model/parameters.hpp"

namespace towers {

namespace {
constexpr std::size_t kBytes = model::kNumParameters * sizeof(float);
}  // namespace

void copy_to_host(Stream& stream, float* host, const float* device, std::size_t count) {
  stream.copy(host, device, count * sizeof(float), "copy to host");
  stream.synchronize();
}

void copy_from_host(Stream& stream, float* device, const float* host, std::size_t count) {
  stream.copy(device, host, count * sizeof(float), "copy params");
}

OneDeviceVariables::OneDeviceVariables(Device& device, Stream& stream)
    : stream_(stream),
      params_(device.allocate(kBytes, MemoryCategory::kParameters)),
      // The moving averages are the tutorial's state kept beside the update: chapter 8's
      // ledger counts them as optimizer state.
      averages_(device.allocate(kBytes, MemoryCategory::kOptimizerState)) {}

void OneDeviceVariables::state_to_host(model::TrainingState& state) {
  state.params.resize(model::kNumParameters);
  state.moving_averages.resize(model::kNumParameters);
  state.optimizer_state.clear();  // SGD keeps none
  stream_.copy(state.params.data(), params_.data(), kBytes, "copy to host");
  stream_.copy(state.moving_averages.data(), averages_.data(), kBytes, "copy to host");
  stream_.synchronize();
}

void OneDeviceVariables::params_to_host(float* params) {
  copy_to_host(stream_, params, params_.as<float>(), model::kNumParameters);
}

void OneDeviceVariables::load_from_host(const model::TrainingState& state) {
  copy_from_host(stream_, params_.as<float>(), state.params.data(), model::kNumParameters);
  copy_from_host(stream_, averages_.as<float>(), state.moving_averages.data(), model::kNumParameters);
  stream_.synchronize();
}

}  // namespace towers
