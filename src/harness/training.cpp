// SPDX-License-Identifier: MIT
#include "harness/training.hpp"

#include <cmath>
#include <ctime>
#include <stdexcept>
#include <unistd.h>

#include "harness/divergence.hpp"
#include "model/network.hpp"
#include "trace/timeline.hpp"

namespace towers {

void add_training_flags(CLI::App& app, TrainingFlags& flags, bool with_towers) {
  add_runtime_flags(app, flags.runtime);
  if (!with_towers) {  // one device: --devices would be ignored, so only 1 is accepted
    app.get_option("--devices")->check(CLI::Validator(
        [](std::string& text) -> std::string {
          return text == "1" ? "" : "this program trains on one device, so --devices must be 1; "
                                    "choose which device with --device N";
        },
        ""));
  }
  add_trace_flags(app, flags.trace_files);
  app.add_option("--data-dir", flags.data_dir,
                 "folder with CIFAR-10 binary files (data_batch_1.bin ... test_batch.bin); "
                 "default: the embedded synthetic set");
  app.add_option("--steps", flags.steps, "training steps")->capture_default_str()
      ->check(whole_number(0, 100000000));
  app.add_option("--batch-size", flags.layout.batch_size,
                 "images per tower per step (at most " + std::to_string(model::kMaxBatchSize) +
                 "; the tutorial's is 128, the default keeps a first run on 2 cores short)")
      ->capture_default_str()->check(whole_number(1, model::kMaxBatchSize));
  app.add_option("--log-every", flags.log_every, "print the tutorial's log line every N steps")
      ->capture_default_str()->check(whole_number(1, 100000000));
  app.add_option("--seed", flags.seed, "seed of initialization, shuffling and distortions")
      ->capture_default_str()->check(unsigned_64());
  if (with_towers) {
    app.add_option("--towers", flags.layout.towers,
                   "number of towers (default: devices x towers-per-device)")
        ->check(whole_number(1, 4096));
    app.add_option("--towers-per-device", flags.layout.towers_per_device,
                   "towers sharing one device, each on its own stream")
        ->capture_default_str()->check(whole_number(1, 64));
  }
}

StepLog::StepLog(int examples_per_step, int towers, int log_every, int total_steps,
                 std::string loss_name)
    : examples_per_step_(examples_per_step), towers_(towers), log_every_(log_every),
      total_steps_(total_steps), loss_name_(std::move(loss_name)) {}

void StepLog::step_done(std::int64_t global_step, float loss, double step_seconds, bool in_mean) {
  check_loss(loss, global_step);
  if (steps_ == 0) {
    first_seconds_ = step_seconds;
  } else {
    later_seconds_ += step_seconds;
    if (in_mean) {
      later_in_mean_seconds_ += step_seconds;
      ++later_in_mean_steps_;
    }
  }
  ++steps_;
  interval_seconds_ += step_seconds;
  const bool last = steps_ == total_steps_;
  if (steps_ % log_every_ == 0 || last || steps_ == 1) {
    const int in_interval = steps_ == 1 ? 1 : (steps_ % log_every_ == 0 ? log_every_ : steps_ % log_every_);
    const double duration = interval_seconds_ / in_interval;
    char when[32];
    std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
    std::printf("%s: step %lld, %s = %.2f (%.1f examples/sec; %.3f sec/batch)\n", when,
                static_cast<long long>(global_step), loss_name_.c_str(), loss,
                examples_per_step_ / duration,
                duration / towers_);
    interval_seconds_ = 0;
    if (isatty(STDERR_FILENO)) {
      std::fprintf(stderr, "  [%3d%%] %d/%d steps\r", 100 * steps_ / total_steps_, steps_, total_steps_);
    }
    std::fflush(stdout);
  }
}

double StepLog::mean_step_ms() const {
  if (steps_ <= 1) return first_seconds_ * 1000.0;
  if (later_in_mean_steps_ == 0) return later_seconds_ / (steps_ - 1) * 1000.0;
  return later_in_mean_seconds_ / later_in_mean_steps_ * 1000.0;
}

double StepLog::examples_per_sec() const {
  double ms = mean_step_ms();
  return ms > 0 ? examples_per_step_ / (ms / 1000.0) : 0.0;
}

StepTraces::StepTraces(Runtime& runtime, const TraceFiles& files)
    : runtime_(runtime), files_(files) {}

void StepTraces::collect(int step, bool in_mean) {
  // take(), not collect() + clear(): an input producer may add spans meanwhile, and a
  // copy still in flight stays pending for the next step's collect.
  std::vector<TraceEvent> events = runtime_.trace().take();
  if (watch_) watch_(events);
  last_events_ = events_of_step(events, step);
  const StepAnalysis analysis = analyze_step(events, step);
  steps_.push_back(analysis);
  in_mean_.push_back(in_mean);
  max_concurrent_ = std::max(max_concurrent_, analysis.max_concurrent_towers);
  stream_concurrent_ = std::max(stream_concurrent_, analysis.stream_concurrent_towers);
  from_kernel_stamps_ = from_kernel_stamps_ || analysis.from_kernel_stamps;
  lost_stamp_ops_ += analysis.lost_stamp_ops;
  if (!files_.json.empty() || !files_.svg.empty()) all_.insert(all_.end(), events.begin(), events.end());
}

double StepTraces::mean_overlap() const {
  // Over the steps whose device work was traced (on cuda, not every step is).
  double sum = 0;
  int traced = 0;
  for (const auto& s : steps_) {
    if (s.tower_busy_ms <= 0) continue;
    sum += s.overlap;
    ++traced;
  }
  return traced == 0 ? 0 : sum / traced;
}

double StepTraces::mean_host_enqueue_ms() const {
  // The first step includes one-time costs (cuBLAS handles, page faults): skip it, and
  // the steps left out of the mean (the probe's), unless no other step is left.
  if (steps_.size() <= 1) return steps_.empty() ? 0 : steps_[0].host_enqueue_ms;
  double sum = 0, in_mean_sum = 0;
  int in_mean_steps = 0;
  for (std::size_t i = 1; i < steps_.size(); ++i) {
    sum += steps_[i].host_enqueue_ms;
    if (in_mean_[i]) {
      in_mean_sum += steps_[i].host_enqueue_ms;
      ++in_mean_steps;
    }
  }
  if (in_mean_steps == 0) return sum / static_cast<double>(steps_.size() - 1);
  return in_mean_sum / in_mean_steps;
}

void StepTraces::print_last_timeline(const std::string& title) {
  drawn_ = merge_ ? merge_(last_events_) : last_events_;
  title_ = title;
  std::printf("\n%s", render_timeline(drawn_, {64, title + " (last step)", 0}).c_str());
}

void StepTraces::write_trace_files() const {
  const bool files = !files_.json.empty() || !files_.svg.empty();
  if (!files) return;
  const std::vector<TraceEvent> all = merge_ ? merge_(all_) : all_;  // every process calls
  if (write_files_here_) towers::write_trace_files(files_, all, title_ + " (all steps)");
}

bool write_output(const std::function<void()>& write) {
  try {
    write();
    return true;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return false;
  }
}

Summary tower_summary(const TrainingFlags& flags, Runtime& runtime, int towers,
                      const StepTraces& traces, const StepLog& log, float final_loss) {
  Summary summary;
  summary.add("backend", std::string(to_string(runtime.backend())))
      .add("devices", runtime.device_count())
      .add("towers", towers)
      .add("batch_size", flags.layout.batch_size)
      .add("steps", log.steps())
      .add("max_concurrent_towers", traces.max_concurrent_towers())
      .add("overlap", traces.mean_overlap(), 3)
      .add("step_ms", log.mean_step_ms(), 2)
      .add("host_enqueue_ms", traces.mean_host_enqueue_ms(), 3)
      .add("examples_per_sec", log.examples_per_sec(), 1)
      .add("final_loss", static_cast<double>(final_loss), 4);
  // Which evidence max_concurrent_towers is (docs/proofs.md): host worker threads that ran
  // at once, or on cuda kernels that stamped themselves running at once; the event spans
  // (streams that held work, queued included) are stream_concurrent_towers.
  // not_traced: no op of any tower was traced one by one (chapter 7 on cuda, where a
  // step is one graph launch), so max_concurrent_towers says nothing there.
  const bool cuda = runtime.backend() == Backend::kCuda;
  const char* from = traces.from_kernel_stamps()                  ? "kernel_stamps"
                     : cuda && traces.stream_concurrent_towers() == 0 ? "not_traced"
                     : cuda                                           ? "stream_events"
                                                                      : "host_threads";
  summary.add("concurrency_from", std::string(from))
      .add("stream_concurrent_towers", traces.stream_concurrent_towers());
  // cuda only (the host backend stamps nothing): ops whose stamps were lost and counted
  // as idle above. Not 0: the stamp numbers read low (lost_stamps_warning says so too).
  if (cuda) summary.add("lost_stamp_ops", traces.lost_stamp_ops());
  // The simulated link, given or sized by --link-gbps auto (harness/link_sizing.hpp).
  if (flags.runtime.link.gbps > 0) summary.add("link_gbps", flags.runtime.link.gbps, 4);
  return summary;
}

}  // namespace towers
