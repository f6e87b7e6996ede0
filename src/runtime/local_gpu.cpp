// SPDX-License-Identifier: MIT
#include "runtime/local_gpu.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "runtime/cuda_environment.hpp"

namespace towers {
namespace {

// Set beside CUDA_VISIBLE_DEVICES when this process chose it, to the same value: a later
// call then knows the choice was its own, not a launcher's.
constexpr const char* kChosenHere = "TOWERS_GPU_OF_LOCAL_RANK";

}  // namespace

int driver_gpu_count(const char* proc_dir) {
  std::error_code error;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(proc_dir, error)) {
    if (entry.is_directory(error)) ++count;
  }
  return count;  // 0 also when the folder does not exist (no driver, no GPU)
}

std::optional<int> launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* text = std::getenv(name);
    if (text == nullptr) continue;
    int rank = -1;
    const char* end = text + std::strlen(text);
    const auto [last, error] = std::from_chars(text, end, rank);
    if (error == std::errc() && last == end && rank >= 0) return rank;
  }
  return std::nullopt;
}

bool show_only_gpu_of_local_rank(int local_rank, const char* proc_dir) {
  const std::string mine = std::to_string(local_rank);
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    const char* chosen = std::getenv(kChosenHere);
    return chosen != nullptr && std::strcmp(visible, chosen) == 0;
  }
  if (local_rank >= driver_gpu_count(proc_dir)) return false;
  ::setenv("CUDA_VISIBLE_DEVICES", mine.c_str(), 1);
  ::setenv(kChosenHere, mine.c_str(), 1);
  return true;
}

void prepare_cuda_before_mpi_init() {
  apply_cuda_environment();
  if (const std::optional<int> local_rank = launcher_local_rank()) {
    show_only_gpu_of_local_rank(*local_rank);
  }
}

}  // namespace towers
