// SPDX-License-Identifier: MIT
// Which all-reduce a training run uses: --allreduce auto|device0|ring|nccl.
//
// NCCL is what real multi-GPU training uses, but it needs the cuda backend and one GPU per
// tower. The ring works everywhere (simulated devices, several towers per device) and
// does, with stream copies and events, what NCCL does. `auto` asks for NCCL where it can
// run and otherwise takes the ring: on the host backend silently (the ring is the
// all-reduce of simulated devices); on cuda with one line saying why NCCL was not used.
// `device0` is chapter 3's averaging (sum on device 0, then the mean copied back to every
// tower), so that chapter 4 can compare the averaging alone against the ring.
// Used from the host thread that drives the towers. Introduced in chapter 4.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "parallel/allreduce.hpp"
#include "parallel/tower.hpp"

namespace towers {

/// Makes the all-reduce `choice` names for `towers` (tower i on towers[i]->device), for
/// buffers of up to `max_count` floats. "nccl" where NCCL cannot run throws the UsageError
/// of make_nccl_allreduce (what was wrong, what to use instead); "auto" falls back to the
/// ring then, printing that line on the cuda backend.
std::unique_ptr<AllReduce> make_tower_allreduce(Runtime& runtime,
                                                const std::vector<std::unique_ptr<Tower>>& towers,
                                                const std::string& choice, std::size_t max_count);

}  // namespace towers
