// SPDX-License-Identifier: MIT
#include "runtime/cuda_environment.hpp"

#include <array>
#include <cstdlib>

namespace towers {

std::span<const CudaEnvironmentSetting> cuda_environment() {
  static constexpr std::array<CudaEnvironmentSetting, 1> settings = {{
      {"CUDA_DEVICE_MAX_CONNECTIONS", "32"},
  }};
  return settings;
}

void apply_cuda_environment() {
  for (const CudaEnvironmentSetting& setting : cuda_environment()) {
    setenv(setting.name, setting.value, /*overwrite=*/0);
  }
}

}  // namespace towers
