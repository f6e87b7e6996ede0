// SPDX-License-Identifier: MIT
// bench_towers: chapter 2 (serial towers) against chapter 3 (stream towers), step time
// for the same towers, one row per layout.
//
//   build/bin/bench_towers                                   # host: 2 and 4 devices
//   build/bin/bench_towers --backend cuda --devices 1 --towers-per-device 4 --batch-size 16
//
// It runs the chapter programs themselves (02_serial_towers and 03_stream_towers, from
// the directory this program is in) and reads their `summary:` lines: step_ms is each
// run's mean step time, first step excluded. Each chapter runs `repeats` times,
// alternating, and the row keeps each chapter's fastest run, so a burst of load on a
// shared machine slows one run rather than the row.
//
// speedup = ch2 step_ms / ch3 step_ms. With N towers that each take t, chapter 2's step is
// about N t plus the host average, chapter 3's about t plus the device average when
// every tower has a core (or a GPU's worth of SMs) of its own: the limit is N. On the
// host backend each device is one worker thread, so N devices need N free cores.
//
// Correctness next to the speed: both chapters train the same towers on the same
// batches from the same seed, so their final losses must agree (column "same loss"): to
// every printed digit on the host backend, where the two averages and updates are the
// same arithmetic; within 0.1% on cuda, where chapter 3's update runs in a kernel (which
// may fuse multiply and add) and chapter 2's on the host. max_conc is chapter 3's most
// towers seen running at once in the trace.
#include <unistd.h>

#include <algorithm>
#include <cmath>
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
#include "chapter_runs.hpp"

namespace towers {
namespace {

using bench::own_directory;
using bench::run_chapter;
using bench::SummaryMap;

struct BenchOptions {
  std::string backend = "host";
  std::vector<int> devices = {2, 4};
  int towers_per_device = 1;
  int batch_size = 128;
  int steps = 6;
  int repeats = 2;
  std::string bin_dir;  // empty: where this program is
};

double step_ms(const SummaryMap& s) { return std::stod(s.at("step_ms")); }

int run(const BenchOptions& options) {
  const std::string dir = options.bin_dir.empty() ? own_directory() : options.bin_dir;
  const std::string chapters[2] = {dir + "/02_serial_towers", dir + "/03_stream_towers"};
  for (const std::string& c : chapters) {
    if (!std::filesystem::exists(c)) {
      throw UsageError(c + " not found; build the chapters, or point --bin-dir at them.");
    }
  }
  std::printf("# bench_towers: chapter 2 (serial) vs chapter 3 (streams), %s backend, batch %d "
              "per tower, %d steps (first untimed), best of %d runs each; %ld cores here\n",
              options.backend.c_str(), options.batch_size, options.steps, options.repeats,
              sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("# %7s  %6s  %12s  %12s  %8s  %8s  %10s  %10s  %9s\n", "devices", "towers",
              "ch2 step(ms)", "ch3 step(ms)", "speedup", "max_conc", "ch2 loss", "ch3 loss",
              "same loss");
  bool all_same = true;
  for (int devices : options.devices) {
    const std::vector<std::string> flags{
        "--backend", options.backend, "--devices", std::to_string(devices),
        "--towers-per-device", std::to_string(options.towers_per_device),
        "--batch-size", std::to_string(options.batch_size), "--steps",
        std::to_string(options.steps), "--log-every", "1000"};
    SummaryMap best[2];
    for (int r = 0; r < options.repeats; ++r) {
      for (int c = 0; c < 2; ++c) {
        std::vector<std::string> argv{chapters[c]};
        argv.insert(argv.end(), flags.begin(), flags.end());
        SummaryMap s = run_chapter(argv, "step_ms");
        if (r == 0 || step_ms(s) < step_ms(best[c])) best[c] = s;
      }
    }
    const double ch2 = step_ms(best[0]), ch3 = step_ms(best[1]);
    const double loss2 = std::stod(best[0].at("final_loss"));
    const double loss3 = std::stod(best[1].at("final_loss"));
    const bool same = options.backend == "host"
                          ? best[0].at("final_loss") == best[1].at("final_loss")
                          : std::fabs(loss2 - loss3) <= 1e-3 * std::max(1.0, std::fabs(loss2));
    all_same = all_same && same;
    std::printf("  %7d  %6s  %12.2f  %12.2f  %8.2f  %8s  %10s  %10s  %9s\n", devices,
                best[1].at("towers").c_str(), ch2, ch3, ch2 / ch3,
                best[1].at("max_concurrent_towers").c_str(), best[0].at("final_loss").c_str(),
                best[1].at("final_loss").c_str(), same ? "yes" : "NO");
    Summary()
        .add("backend", options.backend)
        .add("devices", devices)
        .add("towers", best[1].at("towers"))
        .add("batch_size", options.batch_size)
        .add("ch2_step_ms", ch2, 2)
        .add("ch3_step_ms", ch3, 2)
        .add("speedup", ch2 / ch3, 2)
        .add("same_loss", std::string(same ? "yes" : "no"))
        .print();
  }
  if (!all_same) {
    std::fprintf(stderr, "error: chapters 2 and 3 ended with different losses\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  CLI::App app{"Step time of chapter 2 (serial towers) vs chapter 3 (stream towers)"};
  towers::BenchOptions options;
  app.add_option("--backend", options.backend, "passed to the chapters: host or cuda")
      ->check(CLI::IsMember({"host", "cuda"}))
      ->capture_default_str();
  // Every number is checked as it is parsed, in the chapters' ranges: CLI11 reads an empty
  // value as 0, and a value a chapter refuses ended the bench with "no summary from".
  app.add_option("--devices", options.devices, "device counts, one row each")
      ->delimiter(',')
      ->capture_default_str()->check(towers::whole_number(1, towers::kMaxDevices));
  app.add_option("--towers-per-device", options.towers_per_device, "towers sharing a device")
      ->capture_default_str()->check(towers::whole_number(1, 64));
  towers::bench::add_step_flags(app, options.batch_size, options.steps);
  towers::bench::add_repeat_flags(app, options.repeats, options.bin_dir,
                                  "runs per chapter; the fastest is kept",
                                  "the chapter programs are");
  return towers::run_program(app, argc, argv, [&] { return towers::run(options); });
}
