// SPDX-License-Identifier: MIT
// bench_sharded: chapter 8's step time and memory per device, per ZeRO stage, device count
// N and simulated link speed; one row per case.
//
//   build/bin/bench_sharded                                   # host: --zero 0..3, N = 1..8
//   build/bin/bench_sharded --links 10,1 --optimizers sgd,adam --repeats 2
//
// It runs build/bin/08_sharded itself and reads its `summary:` line: step_ms (mean step,
// first excluded), allreduce_ms (the ring's time per step, both halves), and the memory
// ledger's peaks, the largest over devices: optimizer state, the model state (parameters +
// gradients + optimizer state), activations and everything (total). `formula` is ZeRO's
// closed form of the model state for the same stage, N and optimizer (the program prints
// it from src/parallel/zero_memory.hpp, with stages 2 and 3's transient terms); the
// ledger's model state may exceed it by one element of a shard per category, no more.
// `wire`: bytes the ring and ZeRO-3's layer gathers sent between devices per step, all
// towers (wire_bytes_per_step; the program checks it against the formula). `hidden`: at
// stage 3, the share of the layer gathers' time the same device spent computing
// (gather_overlap, from the trace). Memory and wire bytes do not depend on the load, so
// one run gives them; times do, so each case keeps the fastest of `repeats` runs.
// `same`: the stage's moving averages (averages_hash) and final loss equal the first
// stage's for the same optimizer, N and link: sharding changed no bit. Must be yes.
#include <unistd.h>

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
#include "parallel/zero_memory.hpp"  // kMaxZeroStage
#include "chapter_runs.hpp"

namespace towers {
namespace {

using bench::best_of;
using bench::chapter_program;
using bench::flag_number;
using bench::number;
using bench::SummaryMap;

struct BenchOptions {
  std::vector<int> stages = {0, 1, 2, 3};    // the ZeRO stages chapter 8 runs
  std::vector<int> devices = {1, 2, 4, 8};   // N
  std::vector<double> links = {10, 1};       // Gb/s; 0: unlimited
  std::vector<std::string> optimizers = {"sgd"};
  int batch_size = 16;
  int steps = 4;
  int repeats = 1;
  std::string bin_dir;  // empty: where this program is
};

double mb(const SummaryMap& s, const std::string& key) { return number(s, key) / 1e6; }
long long bytes(const SummaryMap& s, const std::string& key) {
  return static_cast<long long>(number(s, key));
}

int run(const BenchOptions& o) {
  if (o.stages.empty()) throw UsageError("--zero must name a stage");
  const std::string program = chapter_program(o.bin_dir, "08_sharded");
  std::printf("# bench_sharded: chapter 8, host backend, batch %d per tower, %d steps (first "
              "untimed), best of %d; memory: peak per device (largest device), MB = 1e6 bytes; "
              "%ld cores here\n",
              o.batch_size, o.steps, o.repeats, sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("# %-8s  %4s  %2s  %5s  %8s  %8s  %8s  %8s  %8s  %8s  %8s  %8s  %6s  %4s\n",
              "optimizer", "zero", "N", "Gb/s", "step(ms)", "ring(ms)", "state", "model",
              "formula", "activ.", "total", "wire", "hidden", "same");
  int differing = 0;
  for (const std::string& optimizer : o.optimizers) {
    for (int n : o.devices) {
      for (double link : o.links) {
        std::vector<std::string> flags{program,       "--backend",    "host",
                                       "--devices",   std::to_string(n),
                                       "--batch-size", std::to_string(o.batch_size),
                                       "--steps",     std::to_string(o.steps),
                                       "--log-every", "1000",
                                       "--optimizer", optimizer};
        if (link > 0) {
          flags.push_back("--link-gbps");
          flags.push_back(flag_number(link));
        }
        SummaryMap first;
        for (int stage : o.stages) {
          std::vector<std::string> command = flags;
          command.push_back("--zero");
          command.push_back(std::to_string(stage));
          const SummaryMap s = best_of(command, o.repeats, "peak_total_bytes");
          if (stage == o.stages.front()) first = s;
          const bool same = s.at("averages_hash") == first.at("averages_hash") &&
                            s.at("final_loss") == first.at("final_loss");
          differing += !same;
          const double model_bytes = number(s, "peak_parameters_bytes") +
                                     number(s, "peak_gradients_bytes") +
                                     number(s, "peak_optimizer_state_bytes");
          const bool gathers = s.contains("gather_overlap");  // stage 3 only
          char hidden[16] = "-";
          if (gathers) std::snprintf(hidden, sizeof hidden, "%.2f", number(s, "gather_overlap"));
          std::printf("  %-8s  %4d  %2d  %5s  %8.1f  %8.1f  %8.2f  %8.2f  %8.2f  %8.2f  %8.2f"
                      "  %8.2f  %6s  %4s\n",
                      optimizer.c_str(), stage, n, link > 0 ? flag_number(link).c_str() : "inf",
                      number(s, "step_ms"), number(s, "allreduce_ms"),
                      mb(s, "peak_optimizer_state_bytes"), model_bytes / 1e6,
                      mb(s, "formula_total_bytes"), mb(s, "peak_activations_bytes"),
                      mb(s, "peak_total_bytes"), mb(s, "wire_bytes_per_step"), hidden,
                      same ? "yes" : "NO");
          Summary row;
          row.add("optimizer", optimizer)
              .add("zero", stage)
              .add("devices", n)
              .add("link_gbps", link, 3)
              .add("step_ms", number(s, "step_ms"), 2)
              .add("allreduce_ms", number(s, "allreduce_ms"), 3)
              .add("peak_optimizer_state_bytes", bytes(s, "peak_optimizer_state_bytes"))
              .add("peak_model_state_bytes", static_cast<long long>(model_bytes))
              .add("formula_total_bytes", number(s, "formula_total_bytes"), 1)
              .add("peak_activations_bytes", bytes(s, "peak_activations_bytes"))
              .add("peak_total_bytes", bytes(s, "peak_total_bytes"))
              .add("wire_bytes_per_step", number(s, "wire_bytes_per_step"), 1);
          if (gathers) row.add("gather_overlap", number(s, "gather_overlap"), 3);
          row.add("same", std::string(same ? "yes" : "no")).print();
        }
      }
    }
  }
  if (differing != 0) {
    std::fprintf(stderr, "error: %d run(s) ended with other moving averages or loss than the "
                         "first stage's\n", differing);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  CLI::App app{"Chapter 8's step time and memory per device, per ZeRO stage, N and link speed"};
  towers::BenchOptions options;
  // Every number is checked as it is parsed: CLI11 reads an empty value as 0, so
  // `--zero ''` ran ZeRO-0 as 08_sharded did.
  app.add_option("--zero", options.stages, "ZeRO stages to run (the first is the reference "
                                           "for the `same` column)")
      ->delimiter(',')
      ->capture_default_str()->check(towers::whole_number(0, towers::kMaxZeroStage));
  app.add_option("--devices", options.devices, "simulated device counts N, one tower each")
      ->delimiter(',')
      ->capture_default_str()
      ->check(towers::whole_number(1, 8));
  towers::bench::add_links_flag(app, options.links);
  app.add_option("--optimizers", options.optimizers, "chapter 8's --optimizer values to run")
      ->delimiter(',')
      ->capture_default_str()->check(CLI::IsMember({"sgd", "momentum", "adam"}));
  towers::bench::add_step_flags(app, options.batch_size, options.steps);
  towers::bench::add_repeat_flags(app, options.repeats, options.bin_dir,
                                  "runs per case; the fastest is kept", "08_sharded is");
  return towers::run_program(app, argc, argv, [&] { return towers::run(options); });
}
