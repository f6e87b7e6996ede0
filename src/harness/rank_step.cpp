// SPDX-License-Identifier: MIT
#include "harness/rank_step.hpp"

#include <vector>

#include "model/parameters.hpp"
#include "mpi/mpi_check.hpp"
#include "mpi/rank_trace.hpp"

namespace towers {

RankVariables start_rank_variables(TowerTraining& training, Tower& tower,
                                   const RankCheckpoints& checkpoints) {
  const std::size_t param_bytes = model::kNumParameters * sizeof(float);
  RankVariables vars{tower.device->allocate(param_bytes), tower.device->allocate(param_bytes)};
  const float* start = checkpoints.resumed_params();
  tower.stream->copy(vars.params.data(), start ? start : training.initial_params(), param_bytes,
                     "copy params");
  start = checkpoints.resumed_averages();
  tower.stream->copy(vars.averages.data(), start ? start : training.initial_params(), param_bytes,
                     "copy params");
  training.runtime().synchronize();
  // The buffers' device memory stays where it is when `vars` is moved out of here.
  Stream& stream = *tower.stream;
  void* params = vars.params.data();
  void* averages = vars.averages.data();
  training.read_params_with(  // parameters, then moving averages (--eval), to the host
      [&stream, params, param_bytes](float* out) {
        stream.copy(out, params, param_bytes);
        stream.synchronize();
      },
      [&stream, averages, param_bytes](float* out) {
        stream.copy(out, averages, param_bytes);
        stream.synchronize();
      });
  return vars;
}

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
