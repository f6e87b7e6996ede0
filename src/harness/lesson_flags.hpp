// SPDX-License-Identifier: MIT
// The flags that choose how a chapter's towers meet: --allreduce (chapters 4 and 6, and
// the programs of ranks), --overlap and --bucket-mb (chapter 6). What they choose is the
// lesson's (src/parallel: allreduce_choice, allreduce_mpi, buckets); parsing flags is the
// harness's, so the lesson layer never sees CLI11. Introduced in chapter 4.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "parallel/buckets.hpp"

namespace towers {

/// Adds --allreduce auto|device0|ring|nccl (default auto) to `app`, stored in `choice`:
/// how towers average gradients (parallel/allreduce_choice.hpp).
void add_allreduce_flag(CLI::App& app, std::string& choice);

/// Adds --allreduce auto|mpi|ring|nccl (default auto) for a program of ranks
/// (parallel/allreduce_mpi.hpp).
void add_rank_allreduce_flag(CLI::App& app, std::string& choice);

/// Adds --overlap on|off and --bucket-mb (chapter 6's buckets, parallel/buckets.hpp).
void add_overlap_flags(CLI::App& app, OverlapFlags& flags);

}  // namespace towers
