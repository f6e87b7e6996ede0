// SPDX-License-Identifier: MIT
// Step profile: the trace's spans grouped by name and by kind; fused spans divided by
// their phase records. See step_profile.hpp.
#include "step_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>

#include "kernels/host/phase_clock.hpp"

namespace towers::bench {
namespace {

// The kind each op name belongs to ("fused" for the fused convolutions).
const std::map<std::string, std::string>& kind_by_op() {
  static const std::map<std::string, std::string> table = {
      {"gemm", "gemm"},
      {"im2col", "im2col"},
      {"col2im", "col2im"},
      {"bias_add", "elementwise"},
      {"relu", "elementwise"},
      {"relu_grad", "elementwise"},
      {"fill", "elementwise"},
      {"gemv", "bias_grad"},
      {"lrn", "lrn"},
      {"lrn_grad", "lrn"},
      {"max_pool", "pool"},
      {"max_pool_grad", "pool"},
      {"softmax_xent", "loss"},
      {"top1_correct", "loss"},
      {"dot", "loss"},
      {"scal", "loss"},
      {"axpy", "loss"},
      {"sgd_update", "optimizer"},
      {"momentum_update", "optimizer"},
      {"adam_update", "optimizer"},
      {"ema_update", "optimizer"},
      {"im2col_gemm_bias_relu", "fused"},
      {"gemm_col2im", "fused"},
  };
  return table;
}

// The kind a fused op's phase counts as.
const char* kind_of_phase(host::Phase phase) {
  switch (phase) {
    case host::Phase::kIm2col: return "im2col";
    case host::Phase::kProduct: return "gemm";
    case host::Phase::kBiasRelu: return "elementwise";
    case host::Phase::kCol2im: return "col2im";
    case host::Phase::kCount: break;
  }
  return "other";
}

// "conv2 grad gemm" -> "gemm": the op's own name follows its layer scope.
std::string op_of(const std::string& traced_name) {
  const std::size_t space = traced_name.rfind(' ');
  return space == std::string::npos ? traced_name : traced_name.substr(space + 1);
}

}  // namespace

const std::vector<OpKind>& kinds() {
  static const std::vector<OpKind> list = {
      {"gemm", "matrix products: gemm ops and the fused convolutions' product phase"},
      {"im2col", "im2col: the op and the fused forward convolutions' first phase"},
      {"col2im", "col2im: the op and the fused input gradients' last phase"},
      {"elementwise", "bias_add, relu, relu_grad, fill and the fused forward's bias+ReLU phase"},
      {"bias_grad", "gemv: the bias gradients, column sums of the output gradients"},
      {"lrn", "lrn, lrn_grad"},
      {"pool", "max_pool, max_pool_grad"},
      {"loss", "softmax_xent, top1_correct, dot, scal, axpy: the loss and the weight decay"},
      {"optimizer", "sgd_update, momentum_update, adam_update, ema_update (moving averages)"},
      {"copy", "copies between buffers (copy ...)"},
      {"other", "any op not named above"},
  };
  return list;
}

std::string kind_of(const std::string& traced_name) {
  const std::string op = op_of(traced_name);
  if (op.rfind("copy", 0) == 0 || traced_name.rfind("copy", 0) == 0) return "copy";
  const auto it = kind_by_op().find(op);
  return it == kind_by_op().end() ? "other" : it->second;
}

double StepProfile::kind_ms(const std::string& kind) const {
  for (const ProfileRow& row : kinds) {
    if (row.name == kind) return row.ms;
  }
  return 0;
}

StepProfile profile_steps(Trace& trace, int steps, const std::function<double()>& step) {
  trace.clear();
  host::take_phase_splits();  // none left from before
  trace.set_enabled(true);
  host::set_phase_clock(true);
  double wall_s = 0;
  for (int i = 0; i < steps; ++i) wall_s += step();
  host::set_phase_clock(false);
  trace.set_enabled(false);
  std::vector<TraceEvent> events = trace.collect();
  trace.clear();
  const std::vector<host::PhaseSplit> splits = host::take_phase_splits();

  // The fused ops' records, per op, in the order they ran: the n-th span of an op on
  // the one stream is its n-th record.
  std::map<std::string, std::deque<const host::PhaseSplit*>> records;
  for (const host::PhaseSplit& split : splits) records[split.op].push_back(&split);
  std::sort(events.begin(), events.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.start_us < b.start_us; });

  StepProfile p;
  p.steps = steps;
  p.step_ms = wall_s * 1e3 / steps;
  std::map<std::string, ProfileRow> by_name, by_kind;
  std::map<std::string, std::array<double, host::kPhaseCount>> phases_by_name;
  for (const OpKind& kind : kinds()) by_kind[kind.name].name = kind.name;
  for (const TraceEvent& e : events) {
    if (e.device < 0 || !e.is_span()) continue;  // host-side spans, record/wait markers
    const double ms = (e.end_us - e.start_us) / 1e3 / steps;
    p.ops_ms += ms;
    ProfileRow& row = by_name[e.name];
    row.name = e.name;
    row.calls += 1.0 / steps;
    row.ms += ms;
    const std::string kind = kind_of(e.name);
    if (kind != "fused") {
      by_kind[kind].calls += 1.0 / steps;
      by_kind[kind].ms += ms;
      continue;
    }
    // A fused span: its time divided among its phases' kinds by the record's shares.
    auto& queue = records[op_of(e.name)];
    if (queue.empty()) {
      ++p.unsplit_fused;
      by_kind["other"].calls += 1.0 / steps;
      by_kind["other"].ms += ms;
      continue;
    }
    const host::PhaseSplit& split = *queue.front();
    queue.pop_front();
    double total = 0;
    for (double s : split.seconds) total += s;
    auto& sums = phases_by_name[e.name];
    for (int i = 0; i < host::kPhaseCount; ++i) {
      if (split.seconds[i] <= 0) continue;
      const double share = total > 0 ? split.seconds[i] / total : 0;
      ProfileRow& kind_row = by_kind[kind_of_phase(static_cast<host::Phase>(i))];
      kind_row.calls += 1.0 / steps;
      kind_row.ms += ms * share;
      sums[i] += split.seconds[i];
    }
  }
  p.outside_ms = p.step_ms - p.ops_ms;

  for (auto& [name, row] : by_name) {
    const auto it = phases_by_name.find(name);
    if (it != phases_by_name.end()) {
      double total = 0;
      for (double s : it->second) total += s;
      for (int i = 0; i < host::kPhaseCount && total > 0; ++i) {
        if (it->second[i] <= 0) continue;
        char part[48];
        std::snprintf(part, sizeof part, "%s%s %.0f%%", row.split.empty() ? "" : ", ",
                      host::phase_name(static_cast<host::Phase>(i)), 100 * it->second[i] / total);
        row.split += part;
      }
    }
    p.ops.push_back(row);
  }
  std::sort(p.ops.begin(), p.ops.end(),
            [](const ProfileRow& a, const ProfileRow& b) { return a.ms > b.ms; });
  for (const OpKind& kind : kinds()) p.kinds.push_back(by_kind[kind.name]);
  return p;
}

void print_profile(const StepProfile& p, const std::string& label) {
  std::printf("#\n# per-op profile: %s, mean of %d traced step(s) of %.2f ms wall\n",
              label.c_str(), p.steps, p.step_ms);
  std::printf("# %-30s  %6s  %10s  %6s  %s\n", "op (layer and op)", "calls", "time(ms)", "%step",
              "fused phases");
  for (const ProfileRow& row : p.ops) {
    std::printf("  %-30s  %6.0f  %10.3f  %6.1f  %s\n", row.name.c_str(), row.calls, row.ms,
                100.0 * row.ms / p.step_ms, row.split.c_str());
  }
  std::printf("  %-30s  %6s  %10.3f  %6.1f\n", "(outside ops)", "", p.outside_ms,
              100.0 * p.outside_ms / p.step_ms);
  std::printf("#\n# by kind (fused ops divided by their phases): %s\n", label.c_str());
  std::printf("# %-12s  %6s  %10s  %6s  %s\n", "kind", "calls", "time(ms)", "%step", "covers");
  for (std::size_t i = 0; i < p.kinds.size(); ++i) {
    const ProfileRow& row = p.kinds[i];
    std::printf("  %-12s  %6.0f  %10.3f  %6.1f  %s\n", row.name.c_str(), row.calls, row.ms,
                100.0 * row.ms / p.step_ms, kinds()[i].covers);
  }
  std::printf("  %-12s  %6s  %10.3f  %6.1f  %s\n", "outside", "", p.outside_ms,
              100.0 * p.outside_ms / p.step_ms, "enqueueing, waking the worker, the host's wait");
}

}  // namespace towers::bench
