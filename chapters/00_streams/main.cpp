// SPDX-License-Identifier: MIT
// Chapter 0: streams — the learner's question in miniature.
// A loop over devices launches one "kernel" per device. If the loop waits after each
// launch, the devices take turns: serial, as feared. If the loop only enqueues and waits
// once at the end, the devices run at the same time. The loop is the same; the waiting
// is what makes it serial. The trace shows both.
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "runtime/busy.hpp"
#include "runtime/runtime.hpp"
#include "trace/analysis.hpp"
#include "trace/timeline.hpp"

using namespace towers;

int main(int argc, char** argv) {
  CLI::App app{"Chapter 0: one kernel per device, first waiting after each launch, then "
               "only enqueueing. Prints both timelines."};
  RuntimeOptions runtime_options;
  TraceFiles trace_files;
  double kernel_ms = 50;
  int towers_per_device = 1;
  add_runtime_flags(app, runtime_options);
  add_trace_flags(app, trace_files);
  app.add_option("--kernel-ms", kernel_ms, "how long each device's kernel runs")
      ->capture_default_str()->check(finite_number(0.1, 10000, " ms (at most 10 s: mode=sync runs the kernels one after another)"));
  app.add_option("--towers-per-device", towers_per_device,
                 "streams (towers) per device, so one GPU can show the effect too")
      ->capture_default_str()->check(CLI::Range(1, 64));

  return run_program(app, argc, argv, [&] {
    auto runtime = Runtime::create(runtime_options);
    runtime->trace().set_enabled(true);
    // One stream per tower; towers are spread over the devices.
    const int num_gpus = runtime->device_count() * towers_per_device;
    std::vector<std::unique_ptr<Stream>> streams;
    for (int i = 0; i < num_gpus; ++i) {
      streams.push_back(runtime->device(i % runtime->device_count()).create_stream());
      streams[i]->set_tower(i);
    }
    std::printf("%d tower(s) on %d %s device(s), one %.0f ms kernel each\n", num_gpus,
                runtime->device_count(), std::string(to_string(runtime->backend())).c_str(),
                kernel_ms);

    double axis_ms = 0;  // both timelines share the first one's time axis
    for (int step = 0; step < 2; ++step) {
      const bool wait_after_each = (step == 0);
      runtime->trace().set_step(step);
      auto start = std::chrono::steady_clock::now();
      if (wait_after_each) {
        // docs-begin: sync-loop
        for (int i = 0; i < num_gpus; ++i) {
          busy_kernel(*streams[i], kernel_ms);  // returns at once...
          streams[i]->synchronize();            // ...but here the host waits for device i
        }
        // docs-end: sync-loop
      } else {
        // docs-begin: enqueue-loop
        for (int i = 0; i < num_gpus; ++i) {
          busy_kernel(*streams[i], kernel_ms);  // returns at once: the loop only enqueues
        }
        for (auto& stream : streams) stream->synchronize();  // the one place the host waits
        // docs-end: enqueue-loop
      }
      double step_ms = std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - start).count();
      auto events = events_of_step(runtime->trace().collect(), step);
      StepAnalysis analysis = analyze_step(events, step);
      const char* mode = wait_after_each ? "sync" : "enqueue";
      if (axis_ms == 0) axis_ms = analysis.device_ms;
      std::string title = std::string("mode=") + mode +
          (wait_after_each ? ": synchronize after each launch" : ": enqueue all, then wait once");
      std::printf("\n%s", render_timeline(events, {64, title, axis_ms}).c_str());
      Summary().add("mode", mode).add("towers", num_gpus)
          .add("max_concurrent_towers", analysis.max_concurrent_towers)
          .add("step_ms", step_ms, 1).print();
      print_lost_stamps_warning(analysis.lost_stamp_ops);  // cuda: stamps the ring could not hold
    }
    write_trace_files(trace_files, runtime->trace().collect(), "chapter 0: streams");
    return 0;
  });
}
