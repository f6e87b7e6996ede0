// SPDX-License-Identifier: MIT
#include "harness/rank_placement.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "runtime/backend.hpp"

namespace towers {

int driver_gpu_count(const char* proc_dir) {
  std::error_code error;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(proc_dir, error)) {
    if (entry.is_directory(error)) ++count;
  }
  return count;  // 0 also when the folder does not exist (no driver, no GPU)
}

void place_one_tower_per_rank(TrainingFlags& flags, int rank, int local_rank,
                              const char* proc_dir) {
  const bool bound_by_launcher = std::getenv("CUDA_VISIBLE_DEVICES") != nullptr;
  const bool bind = !bound_by_launcher && local_rank < driver_gpu_count(proc_dir);
  if (bind) {
    // Before CUDA starts (resolve_backend below may start it): the process sees one GPU.
    ::setenv("CUDA_VISIBLE_DEVICES", std::to_string(local_rank).c_str(), 1);
  }
  const Backend backend = resolve_backend(flags.runtime.backend);
  if (!flags.runtime.devices && (backend == Backend::kHost || bind)) flags.runtime.devices = 1;
  flags.layout.towers = 1;
  flags.layout.first_index = rank;
  // Bound: the one visible GPU is device 0. Not bound: GPU (local rank mod GPUs seen).
  flags.layout.first_device = bind ? 0 : local_rank;
}

}  // namespace towers
