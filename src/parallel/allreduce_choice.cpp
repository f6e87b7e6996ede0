// SPDX-License-Identifier: MIT
#include "parallel/allreduce_choice.hpp"

#include <cstdio>
#include <stdexcept>

#include "runtime/backend.hpp"

namespace towers {

std::unique_ptr<AllReduce> make_tower_allreduce(Runtime& runtime,
                                                const std::vector<std::unique_ptr<Tower>>& towers,
                                                const std::string& choice, std::size_t max_count) {
  std::vector<int> device_of_tower;
  for (const auto& tower : towers) device_of_tower.push_back(tower->device->index());
  if (choice == "nccl" && runtime.backend() != Backend::kCuda) {
    throw UsageError("--allreduce nccl needs the cuda backend (real GPUs), but this run uses the " +
                     std::string(to_string(runtime.backend())) +
                     " backend. Use --allreduce ring (or auto), which runs on any backend.");
  }
  if (choice == "nccl") return make_nccl_allreduce(runtime, device_of_tower);
  if (choice == "device0") return make_device0_allreduce(runtime, device_of_tower, max_count);
  if (choice == "auto" && runtime.backend() == Backend::kCuda) {
    try {
      return make_nccl_allreduce(runtime, device_of_tower);
    } catch (const UsageError& why) {
      std::printf("allreduce: not using NCCL, using the ring instead: %s\n", why.what());
    }
  } else if (choice != "auto" && choice != "ring") {
    throw UsageError("unknown all-reduce '" + choice + "'. Use auto, device0, ring or nccl.");
  }
  return make_ring_allreduce(runtime, device_of_tower, max_count);
}

}  // namespace towers
