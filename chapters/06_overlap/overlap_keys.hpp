// SPDX-License-Identifier: MIT
// The summary keys both of chapter 6's programs print (06_overlap and 06_overlap_ranks):
// how the towers met (allreduce, allreduce_ms), how the gradients were sent (overlap_mode,
// buckets), how much of the communication the backward pass hid (overlap_comm,
// exposed_comm_ms) and how often the copies were compared (param_checks). Written once so
// that the two programs print the same keys, with the README's meanings.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "cli/summary.hpp"
#include "harness/overlap_trace.hpp"
#include "harness/pipeline_trace.hpp"

namespace towers {

/// Adds the keys above to `extra`: `buckets` counts one with --overlap off (`overlap_on`
/// false), where the gradients are all-reduced whole after the backward pass.
inline Summary& add_overlap_keys(Summary& extra, std::string_view allreduce,
                                 const PipelineTrace& pipeline, const OverlapTrace& overlap,
                                 bool overlap_on, std::size_t buckets, int param_checks) {
  return extra.add("allreduce", std::string(allreduce))
      .add("allreduce_ms", pipeline.mean_allreduce_ms(), 3)
      .add("overlap_mode", std::string(overlap_on ? "on" : "off"))
      .add("buckets", static_cast<long long>(overlap_on ? buckets : 1))
      .add("overlap_comm", overlap.overlap_comm(), 3)
      .add("exposed_comm_ms", overlap.exposed_comm_ms(), 3)
      .add("param_checks", param_checks);
}

}  // namespace towers
