// SPDX-License-Identifier: MIT
// The composed run's own flags (mesh_run.hpp), apart from the run itself so that a build
// without MPI, which has only --plan, parses the same command line.
#pragma once

#include <cstdint>
#include <string>

#include "harness/checkpoint_dir.hpp"

namespace towers {

/// The composed run's own flags, beside the mesh's (MeshConfig).
struct MeshRunFlags {
  int steps = 2;                  ///< --steps
  int log_every = 1;              ///< --log-every
  std::uint64_t seed = 1;         ///< --seed
  std::string data_dir;           ///< --data-dir; empty: the embedded synthetic set
  std::string save_params;        ///< --save-params: the job's parameters, put together
  double collective_timeout_s = 30;  ///< --collective-timeout
  CheckpointFlags checkpoints;    ///< --checkpoint-dir, --resume, ... (chapter 1's, for a job)
};

}  // namespace towers
