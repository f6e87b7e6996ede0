// SPDX-License-Identifier: MIT
// bench_pipeline: chapter 9's bubble against the closed form, per schedule, stage count p
// and micro-batch count m; one row per case.
//
//   build/bin/bench_pipeline                                  # host, p = 2 and 4, m = 1..16
//   build/bin/bench_pipeline --stages 2,4,8 --micro-batches 4,8,32 --kernel-ms 5
//
// It runs build/bin/09_pipeline itself and reads its `summary:` line: bubble_share (each
// stage's idle share of the flush, read from the trace, mean over stages), bubble_formula
// ((p-1)/(v*m + p-1)), trace_ms (the flush in the trace) and ideal_ms (the same schedule
// on ideal devices, hand-offs free). Each case runs `repeats` times and keeps the fastest
// flush (least trace_ms), so a burst of load spoils one run, not the row. `wrong` counts
// runs whose order or data check failed (order_violations, data_checked): it must be 0.
// Interleaved runs only where m is a multiple of p (the schedule's rule), with --virtual:
// the other shapes are listed on a "# skipped" line, and when no shape is left to run the
// bench says so and exits 2 rather than print an empty table.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/process.hpp"
#include "base/usage_error.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "chapter_runs.hpp"

namespace towers {
namespace {

using bench::run_chapter;
using bench::number;
using bench::SummaryMap;

struct BenchOptions {
  std::vector<std::string> schedules = {"gpipe", "1f1b", "interleaved"};
  std::vector<int> stages = {2, 4};
  std::vector<int> micro_batches = {1, 2, 4, 8, 16};
  int chunks = 2;  // v for interleaved
  double kernel_ms = 10;
  int repeats = 2;
  std::string bin_dir;  // empty: where this program is
};

bool wrong(const SummaryMap& s) {
  return s.at("order_violations") != "0" || s.at("data_checked") != "yes";
}

// One row of the table: a schedule on p stages with m micro-batches (v chunks per stage).
struct Case {
  std::string schedule;
  int p, m, v;
};

// The cases the lists ask for, in table order. Interleaved sends the micro-batches round the
// stages in groups of p, so it runs only where p divides m; every shape left out is named
// in `skipped` ("p=4: m=1,2"), for the "# skipped" line.
std::vector<Case> plan_cases(const BenchOptions& o, std::string& skipped) {
  std::vector<Case> cases;
  for (const std::string& schedule : o.schedules) {
    const int v = schedule == "interleaved" ? o.chunks : 1;
    for (int p : o.stages) {
      std::string left_out;
      for (int m : o.micro_batches) {
        if (schedule == "interleaved" && m % p != 0) {
          left_out += (left_out.empty() ? "" : ",") + std::to_string(m);
        } else {
          cases.push_back({schedule, p, m, v});
        }
      }
      if (!left_out.empty()) skipped += std::string(skipped.empty() ? "" : "; ") + "p=" +
                                        std::to_string(p) + ": m=" + left_out;
    }
  }
  return cases;
}

int run(const BenchOptions& o) {
  const std::string program = bench::chapter_program(o.bin_dir, "09_pipeline");
  std::string skipped;
  const std::vector<Case> cases = plan_cases(o, skipped);
  if (cases.empty()) {
    throw UsageError("no case to run: --schedules interleaved needs --micro-batches to be a "
                     "multiple of --stages (the micro-batches go round the stages in groups of "
                     "p), and none of the shapes asked for is (" + skipped + "). Give a "
                     "multiple, e.g. --stages " + std::to_string(o.stages.front()) +
                     " --micro-batches " + std::to_string(2 * o.stages.front()) + ".");
  }
  std::printf("# bench_pipeline: chapter 9, host backend, forward %.1f ms and backward %.1f ms "
              "per stage and micro-batch, best of %d (fastest flush); %ld cores here\n",
              o.kernel_ms, 2 * o.kernel_ms, o.repeats, sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("# %-11s  %2s  %3s  %2s  %8s  %8s  %7s  %9s  %9s  %5s\n", "schedule", "p", "m", "v",
              "bubble", "formula", "error", "trace(ms)", "ideal(ms)", "wrong");
  if (!skipped.empty()) {
    std::printf("# skipped: interleaved where m is not a multiple of p (%s)\n", skipped.c_str());
  }
  int wrong_runs = 0;
  for (const auto& [schedule, p, m, v] : cases) {
    std::ostringstream kernel_ms;  // as people type it: 0.5, 10
    kernel_ms << o.kernel_ms;
    const std::vector<std::string> command{
        program, "--backend", "host", "--schedule", schedule, "--stages", std::to_string(p),
        "--micro-batches", std::to_string(m), "--virtual", std::to_string(v), "--kernel-ms",
        kernel_ms.str()};
    SummaryMap best;
    int wrong_here = 0;
    for (int r = 0; r < o.repeats; ++r) {
      // A failed data check exits 1 with its summary printed: that run counts as
      // wrong, not as a crash.
      SummaryMap s = run_chapter(command, "bubble_share", /*must_succeed=*/false);
      wrong_here += wrong(s);
      if (r == 0 || number(s, "trace_ms") < number(best, "trace_ms")) best = s;
    }
    wrong_runs += wrong_here;
    const double measured = number(best, "bubble_share");
    const double formula = number(best, "bubble_formula");
    std::printf("  %-11s  %2d  %3d  %2d  %8.3f  %8.3f  %+7.3f  %9.1f  %9.1f  %5d\n",
                schedule.c_str(), p, m, v, measured, formula, measured - formula,
                number(best, "trace_ms"), number(best, "ideal_ms"), wrong_here);
    Summary()
        .add("schedule", schedule)
        .add("stages", p)
        .add("micro_batches", m)
        .add("virtual", v)
        .add("bubble_share", measured, 3)
        .add("bubble_formula", formula, 3)
        .add("trace_ms", number(best, "trace_ms"), 1)
        .add("ideal_ms", number(best, "ideal_ms"), 1)
        .add("wrong_runs", wrong_here)
        .print();
  }
  if (wrong_runs != 0) {
    std::fprintf(stderr, "error: %d run(s) ran an op out of order or lost data\n", wrong_runs);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  CLI::App app{"Chapter 9's bubble, measured from the trace, against (p-1)/(v*m + p-1)"};
  towers::BenchOptions options;
  // Every value is checked as it is parsed, in 09_pipeline's ranges: CLI11 reads an empty
  // number as 0, and a value the chapter refuses ended the bench with "no summary from".
  app.add_option("--schedules", options.schedules, "gpipe, 1f1b, interleaved")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"gpipe", "1f1b", "interleaved"}));
  app.add_option("--stages", options.stages, "stage counts p")
      ->delimiter(',')
      ->capture_default_str()
      ->check(towers::whole_number(1, 64, "stages"));
  app.add_option("--micro-batches", options.micro_batches, "micro-batch counts m")
      ->delimiter(',')
      ->capture_default_str()
      ->check(towers::whole_number(1, 1024, "micro-batches"));
  app.add_option("--virtual", options.chunks, "v for interleaved")
      ->capture_default_str()
      ->check(towers::whole_number(2, 16, "chunks per stage (interleaved needs 2 or more)"));
  app.add_option("--kernel-ms", options.kernel_ms, "one stage's forward of one micro-batch")
      ->capture_default_str()->check(towers::finite_number(0.1, 10000, " ms (09_pipeline's range)"));
  app.add_option("--repeats", options.repeats, "runs per case; the fastest flush is kept")
      ->capture_default_str()->check(towers::whole_number(1, 1000, "runs"));
  app.add_option("--bin-dir", options.bin_dir, "where 09_pipeline is (default: here)");
  return towers::run_program(app, argc, argv, [&] { return towers::run(options); });
}
