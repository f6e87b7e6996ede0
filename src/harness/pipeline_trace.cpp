// SPDX-License-Identifier: MIT
#include "harness/pipeline_trace.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "trace/analysis.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

using span::kCopyInput;

// Length of the part of [start, end) covered by the disjoint, sorted `cover`.
double covered_us(double start, double end, const std::vector<Interval>& cover) {
  double sum = 0;
  for (const auto& [a, b] : cover) {
    if (b <= start) continue;
    if (a >= end) break;
    sum += std::min(b, end) - std::max(a, start);
  }
  return sum;
}

}  // namespace

bool is_allreduce_op(const std::string& name) {
  return span::is_allreduce(name);
}

void PipelineTrace::collect(const std::vector<TraceEvent>& events) {
  // All-reduce ops are enqueued by the training thread, so their step tags are exact.
  std::map<int, Interval> allreduce;  // step -> [first start, last end]
  std::vector<Interval> compute;
  for (const auto& e : events) {
    if (e.device < 0) continue;
    // device0's ops run on a stream of no tower; every other all-reduce on the towers'.
    if (is_allreduce_op(e.name) && e.step >= 0) {
      auto [it, fresh] = allreduce.try_emplace(e.step, Interval{e.start_us, e.end_us});
      if (!fresh) {
        it->second.first = std::min(it->second.first, e.start_us);
        it->second.second = std::max(it->second.second, e.end_us);
      }
    }
    if (e.tower >= 0 && e.name != kCopyInput) compute.push_back({e.start_us, e.end_us});
  }
  for (const auto& [step, span] : allreduce) {
    allreduce_ms_.push_back((span.second - span.first) / 1000.0);
  }

  const auto busy = union_of(std::move(compute));
  for (const auto& e : events) {
    if (e.device < 0 || e.name != kCopyInput) continue;
    input_us_ += e.end_us - e.start_us;
    input_overlapped_us_ += covered_us(e.start_us, e.end_us, busy);
  }
}

double PipelineTrace::mean_allreduce_ms() const {
  if (allreduce_ms_.empty()) return 0;
  const std::size_t skip = allreduce_ms_.size() > 1 ? 1 : 0;  // warm-up
  double sum = 0;
  for (std::size_t i = skip; i < allreduce_ms_.size(); ++i) sum += allreduce_ms_[i];
  return sum / static_cast<double>(allreduce_ms_.size() - skip);
}

double PipelineTrace::input_overlap() const {
  return input_us_ > 0 ? input_overlapped_us_ / input_us_ : 0.0;
}

}  // namespace towers
