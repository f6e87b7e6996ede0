// SPDX-License-Identifier: MIT
#include "harness/rank_step.hpp"

#include <vector>

#include "model/parameters.hpp"
#include "mpi/mpi_check.hpp"
#include "mpi/rank_trace.hpp"

namespace towers {

void merge_rank_traces(TowerTraining& training, const MpiJob& job) {
  const double clock_offset = clock_offset_us(job, training.runtime().trace());
  training.set_trace_merge(
      [&job, clock_offset](const std::vector<TraceEvent>& events) {
        return gather_rank_events(job, events, clock_offset);
      },
      /*write_files_here=*/job.rank() == 0);
}

float last_rank_loss(const MpiJob& job, Watchdog& watchdog, Tower& tower, int run_step) {
  float loss = tower.losses.as<float>()[model::kTotalLoss];
  Watchdog::Scope waiting(watchdog, "MPI_Bcast of the loss", run_step);
  MPI_CHECK(MPI_Bcast(&loss, 1, MPI_FLOAT, job.size() - 1, job.comm()));
  return loss;
}

bool ranks_agree_to_stop(const MpiJob& job, Watchdog& watchdog, bool stop_here, int run_step) {
  int stop = stop_here ? 1 : 0;
  Watchdog::Scope waiting(watchdog, "MPI_Allreduce of the stop flag", run_step);
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &stop, 1, MPI_INT, MPI_LOR, job.comm()));
  return stop != 0;
}

}  // namespace towers
