// SPDX-License-Identifier: MIT
#include "harness/overlap_trace.hpp"

#include <algorithm>
#include <set>

#include "harness/pipeline_trace.hpp"
#include "trace/analysis.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

double length(const std::vector<Interval>& intervals) {
  double total = 0;
  for (const auto& [start, end] : intervals) total += end - start;
  return total;
}

// |a and b| for two sorted, disjoint interval lists.
double intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    total += std::max(0.0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second) ++i; else ++j;
  }
  return total;
}

// Communication of any kind: it is never the compute that hides another.
bool is_communication(const std::string& name) {
  return is_allreduce_op(name) || span::is_layer_gather(name) || span::is_tensor_collective(name);
}

}  // namespace

OverlapTrace::OverlapTrace(IsCommunication is_comm) : is_comm_(is_comm) {}

void OverlapTrace::collect(const std::vector<TraceEvent>& events) {
  // (step, device) -> spans
  std::map<std::pair<int, int>, std::vector<Interval>> comm, compute;
  for (const TraceEvent& e : events) {
    if (e.step < 0 || e.device < 0) continue;
    const auto key = std::make_pair(e.step, e.device);
    if (is_comm_(e.name)) {
      comm[key].push_back({e.start_us, e.end_us});
    } else if (e.tower >= 0 && e.name != span::kCopyInput && !is_communication(e.name)) {
      compute[key].push_back({e.start_us, e.end_us});
    }
  }
  for (auto& [key, spans] : comm) {
    const auto a = union_of(spans);
    const auto c = union_of(compute[key]);
    Totals& totals = by_step_[key.first];
    totals.comm_us += length(a);
    totals.hidden_us += intersection(a, c);
    totals.device_steps += 1;
  }
}

OverlapTrace::Totals OverlapTrace::counted() const {
  Totals sum;
  bool skip_first = by_step_.size() > 1;
  for (const auto& [step, totals] : by_step_) {
    if (skip_first) {
      skip_first = false;
      continue;
    }
    sum.comm_us += totals.comm_us;
    sum.hidden_us += totals.hidden_us;
    sum.device_steps += totals.device_steps;
  }
  return sum;
}

double OverlapTrace::overlap_comm() const {
  const Totals t = counted();
  return t.comm_us > 0 ? t.hidden_us / t.comm_us : 0.0;
}

double OverlapTrace::exposed_comm_ms() const {
  const Totals t = counted();
  return t.device_steps > 0 ? (t.comm_us - t.hidden_us) / 1000.0 / t.device_steps : 0.0;
}

}  // namespace towers
