// SPDX-License-Identifier: MIT
// bench_overlap: chapter 6 with the all-reduce overlapped (--overlap on) against after the
// backward pass (off), for simulated link bandwidths and bucket caps; one row per case.
//
//   build/bin/bench_overlap                                   # host, 2 devices
//   build/bin/bench_overlap --links 0,1,0.25 --bucket-mb 0,1,25 --batch-size 32
//
// It runs build/bin/06_overlap itself and reads its `summary:` lines (step_ms: mean step
// time, first step excluded; exposed_comm_ms, overlap_comm: from the trace). Each case runs
// `repeats` times and keeps the fastest run, so a burst of load slows one run, not the row.
//
// The analytic expectation beside the measurement. With overlap off the step is compute
// plus communication: off = C + A, where A is off's exposed_comm_ms (nothing runs beside
// the ring then) and C = off - A. With overlap on, buckets travel while the backward pass
// runs, so the step is about max(C, A) + the last bucket's all-reduce, which cannot start
// before the backward pass ends: expect = max(C, A) + A * last/total, last/total the last
// bucket's share of the gradient bytes (latency ignored). One bucket gives expect = C + A.
// The model lets the all-reduce overlap the forward pass too, which no bucket can (each is
// ready only in the backward pass): where A is larger than the backward pass the step is
// nearer F + A, F the forward pass (bench/results/2026-12-01-host-2core-overlap.md).
// Link "0" is unlimited (no --link-gbps). same loss: on and off end with the same loss
// (two towers: the same bits, see chapter6_test).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/process.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "model/network.hpp"  // kMaxBatchSize
#include "model/parameters.hpp"
#include "parallel/buckets.hpp"
#include "chapter_runs.hpp"

namespace towers {
namespace {

using bench::best_of;
using bench::chapter_program;
using bench::flag_number;
using bench::number;
using bench::SummaryMap;
using bench::with;

struct BenchOptions {
  std::vector<double> links = {0, 1, 0.5, 0.25};  // Gb/s; 0: unlimited
  std::vector<double> bucket_mb = {0, 1, 25};
  int devices = 2;
  int batch_size = 32;
  int steps = 4;
  int repeats = 1;
  std::string bin_dir;  // empty: where this program is
};

int run(const BenchOptions& o) {
  const std::string program = chapter_program(o.bin_dir, "06_overlap");
  std::printf("# bench_overlap: chapter 6, overlap on vs off, host backend, %d devices, batch %d "
              "per tower, %d steps (first untimed), best of %d; %ld cores here\n",
              o.devices, o.batch_size, o.steps, o.repeats, sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("# %6s  %7s  %8s  %8s  %8s  %8s  %7s  %9s  %9s  %9s\n", "Gb/s", "buckets",
              "comm(ms)", "off(ms)", "on(ms)", "saved", "hidden", "expect", "on/expect",
              "same loss");
  bool all_same = true;
  for (double link : o.links) {
    std::vector<std::string> flags{program, "--backend", "host", "--devices",
                                   std::to_string(o.devices), "--batch-size",
                                   std::to_string(o.batch_size), "--steps",
                                   std::to_string(o.steps), "--log-every", "1000"};
    if (link > 0) flags = with(flags, {"--link-gbps", flag_number(link)});
    const SummaryMap off = best_of(with(flags, {"--overlap", "off"}), o.repeats, "step_ms");
    const double off_ms = number(off, "step_ms"), comm = number(off, "exposed_comm_ms");
    const double compute = std::max(0.0, off_ms - comm);
    for (double cap : o.bucket_mb) {
      const auto buckets = make_buckets(cap);
      const SummaryMap on =
          best_of(with(flags, {"--overlap", "on", "--bucket-mb", flag_number(cap)}), o.repeats,
                  "step_ms");
      const double on_ms = number(on, "step_ms");
      const double last_share = static_cast<double>(buckets.back().count) / model::kNumParameters;
      const double expect = buckets.size() == 1 ? compute + comm
                                                : std::max(compute, comm) + comm * last_share;
      const bool same = on.at("final_loss") == off.at("final_loss");
      all_same = all_same && same;
      std::printf("  %6g  %7zu  %8.1f  %8.1f  %8.1f  %7.1f%%  %7s  %9.1f  %9.2f  %9s\n", link,
                  buckets.size(), comm, off_ms, on_ms, 100.0 * (off_ms - on_ms) / off_ms,
                  on.at("overlap_comm").c_str(), expect, on_ms / expect, same ? "yes" : "NO");
      Summary()
          .add("link_gbps", link, 3)
          .add("buckets", static_cast<long long>(buckets.size()))
          .add("comm_ms", comm, 2)
          .add("off_step_ms", off_ms, 2)
          .add("on_step_ms", on_ms, 2)
          .add("expected_on_ms", expect, 2)
          .add("same_loss", std::string(same ? "yes" : "no"))
          .print();
    }
  }
  if (!all_same) {
    std::fprintf(stderr, "error: overlap on and off ended with different losses\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  CLI::App app{"Chapter 6's step time with the all-reduce overlapped vs after the backward pass"};
  towers::BenchOptions options;
  towers::bench::add_links_flag(app, options.links);
  app.add_option("--bucket-mb", options.bucket_mb, "bucket caps in MiB, 0: one per layer")
      ->delimiter(',')
      ->capture_default_str()
      ->check(towers::finite_number(0, towers::kMaxBucketMb, " MiB"));
  // Every number is checked as it is parsed: CLI11 reads an empty value as 0.
  app.add_option("--devices", options.devices, "simulated devices, one tower each")
      ->capture_default_str()->check(towers::whole_number(2, towers::kMaxDevices, "(an all-reduce needs two)"));
  towers::bench::add_step_flags(app, options.batch_size, options.steps);
  towers::bench::add_repeat_flags(app, options.repeats, options.bin_dir,
                                  "runs per case; the fastest is kept", "06_overlap is");
  return towers::run_program(app, argc, argv, [&] { return towers::run(options); });
}
