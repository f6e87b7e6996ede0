// SPDX-License-Identifier: MIT
#include "state_gather.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/parameters.hpp"
#include "mpi/mpi_check.hpp"

namespace towers {
namespace {

constexpr std::size_t kAll = model::kNumParameters;

// True when the ranges [offsets[r], + counts[r]), the empty ones left out, follow each
// other from 0 to kAll with no gap or overlap.
bool tile(const std::vector<int>& offsets, const std::vector<int>& counts) {
  std::vector<std::pair<int, int>> ranges;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > 0) ranges.emplace_back(offsets[r], counts[r]);
  }
  std::sort(ranges.begin(), ranges.end());
  std::size_t next = 0;
  for (const auto& [offset, count] : ranges) {
    if (static_cast<std::size_t>(offset) != next) return false;
    next += static_cast<std::size_t>(count);
  }
  return next == kAll;
}

// One array of kAll floats: every rank's `range` of `mine` into `whole` on rank 0.
void gather_range(MPI_Comm comm, const float* mine, Chunk range, float* whole) {
  int ranks = 1, me = 0;
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  MPI_CHECK(MPI_Comm_rank(comm, &me));
  const int own[2] = {static_cast<int>(range.offset), static_cast<int>(range.size)};
  std::vector<int> ranges(2 * static_cast<std::size_t>(ranks));
  MPI_CHECK(MPI_Allgather(own, 2, MPI_INT, ranges.data(), 2, MPI_INT, comm));
  std::vector<int> offsets, counts;
  for (int r = 0; r < ranks; ++r) {
    offsets.push_back(ranges[2 * static_cast<std::size_t>(r)]);
    counts.push_back(ranges[2 * static_cast<std::size_t>(r) + 1]);
  }
  const bool copies = std::all_of(counts.begin(), counts.end(),
                                  [](int c) { return static_cast<std::size_t>(c) == kAll; });
  if (copies) {  // every rank holds it whole, the same values: rank 0's is the job's
    if (me == 0) std::copy_n(mine, kAll, whole);
    return;
  }
  if (me == 0 && !tile(offsets, counts)) {
    throw std::logic_error("gather_state: the ranks' ranges do not cover the " +
                           std::to_string(kAll) + " floats exactly once");
  }
  MPI_CHECK(MPI_Gatherv(mine + range.offset, own[1], MPI_FLOAT, whole, counts.data(),
                        offsets.data(), MPI_FLOAT, 0, comm));
}

}  // namespace

void gather_state(MPI_Comm comm, const model::TrainingState& mine, Chunk params_range,
                  Chunk state_range, int parts, model::TrainingState& whole) {
  int me = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &me));
  if (me == 0) {
    whole.params.resize(kAll);
    whole.moving_averages.resize(kAll);
    whole.optimizer_state.resize(static_cast<std::size_t>(parts) * kAll);
  }
  // Where each array lands: rank 0's `whole`; nothing is received elsewhere.
  const auto into = [me](std::vector<float>& array, std::size_t at) {
    return me == 0 ? array.data() + at : nullptr;
  };
  gather_range(comm, mine.params.data(), params_range, into(whole.params, 0));
  gather_range(comm, mine.moving_averages.data(), state_range, into(whole.moving_averages, 0));
  for (int p = 0; p < parts; ++p) {
    const std::size_t at = static_cast<std::size_t>(p) * kAll;
    gather_range(comm, mine.optimizer_state.data() + at, state_range,
                 into(whole.optimizer_state, at));
  }
}

}  // namespace towers
