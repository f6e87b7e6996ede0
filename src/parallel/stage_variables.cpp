// SPDX-License-Identifier: MIT
#include "parallel/stage_variables.hpp"

#include "model/parameters.hpp"
#include "parallel/one_device_variables.hpp"

namespace towers {

void StageVariables::add_stage(Device& device, Stream& stream, ParameterRange range,
                               bool keep_averages) {
  const std::size_t bytes = model::kNumParameters * sizeof(float);
  stages_.push_back({range, &stream, device.allocate(bytes, MemoryCategory::kParameters),
                     keep_averages ? device.allocate(bytes, MemoryCategory::kOptimizerState)
                                   : Buffer()});
}

void StageVariables::read_ranges(Buffer Stage::*buffer, float* out) {
  for (Stage& stage : stages_) {
    if (stage.range.count == 0 || (stage.*buffer).empty()) continue;  // or kept elsewhere
    stage.stream->copy(out + stage.range.offset, (stage.*buffer).as<float>() + stage.range.offset,
                       stage.range.count * sizeof(float), "copy to host");
  }
  for (Stage& stage : stages_) stage.stream->synchronize();
}

void StageVariables::state_to_host(model::TrainingState& state) {
  state.params.resize(model::kNumParameters);
  state.moving_averages.resize(model::kNumParameters);
  state.optimizer_state.clear();
  read_ranges(&Stage::params, state.params.data());
  read_ranges(&Stage::averages, state.moving_averages.data());
}

void StageVariables::params_to_host(float* params) { read_ranges(&Stage::params, params); }

void StageVariables::load_from_host(const model::TrainingState& state) {
  for (Stage& stage : stages_) {
    copy_from_host(*stage.stream, stage.params.as<float>(), state.params.data(), model::kNumParameters);
    if (stage.averages.empty()) continue;  // kept elsewhere
    copy_from_host(*stage.stream, stage.averages.as<float>(), state.moving_averages.data(),
                   model::kNumParameters);
  }
  for (Stage& stage : stages_) stage.stream->synchronize();
}

}  // namespace towers
