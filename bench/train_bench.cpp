// SPDX-License-Identifier: MIT
// bench_train: how many images per second one tower trains, forward + backward + SGD
// update of the tutorial's model, with a per-op breakdown of one step read off the trace.
//
//   build/bin/bench_train                      # host: 1 and 2 op threads, PyTorch if present
//   build/bin/bench_train --backend cuda       # one GPU
//   build/bin/bench_train --threads 1,2,4 --batch-size 64 --steps 20
//
// Each case trains one Network on one stream: `warmup` untimed steps, then `steps` timed
// ones, each timed on the host clock from its first enqueue to the stream's completion
// (the step of chapter 1 without the input pipeline and the moving averages). Inputs are
// one fixed random batch, so the timed steps fit it: the loss must fall and stay finite,
// the correctness column of the table. Step times are noisy on shared machines: the table
// gives the median and the best; compare medians across runs, bests across loads.
//
// On the host backend a device is one stream is one worker thread: ops run one after
// another on it, and each op splits its work over --threads threads
// (kernels/host/parallel.hpp), so every row of the breakdown shrinks with more threads,
// the small ops (which do not split) excepted.
//
// When `python3 -c "import torch"` works (or, failing that, /usr/bin/python3's, where
// Debian's python3-torch installs), bench/torch_cifar10.py trains the same model in
// PyTorch with 2 threads on the same batch size in the same run, and the host rows get
// a ratio to it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/process.hpp"
#include "base/timing.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "model/network.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"

#ifndef TOWERS_BENCH_DIR
#define TOWERS_BENCH_DIR "bench"
#endif

namespace towers {
namespace {

using model::kNumParameters;

// The figure the issue author measured for PyTorch on the 2-core development machine,
// printed when PyTorch is not installed so the host rows still have a yardstick.
constexpr double kPytorchReferenceImagesPerSec = 840.0;

// Where to look for a Python with torch when --python is not given: the one on PATH,
// then the system's, where Debian's python3-torch installs (PATH may name another, e.g.
// a pyenv or virtualenv Python without torch).
const std::vector<std::string> kPythons = {"python3", "/usr/bin/python3"};

struct BenchOptions {
  int batch_size = 128;
  int warmup = 5;
  int steps = 50;
  std::vector<int> threads = {1, 2};  // host backend only
  bool pytorch = true;
  std::string python;  // empty: the first of kPythons that has torch
  std::string pytorch_script = TOWERS_BENCH_DIR "/torch_cifar10.py";
};

// One tower's model, parameters and fixed batch on one device, trained on one stream.
class Trainer {
 public:
  Trainer(Device& device, int batch_size)
      : device_(device),
        batch_size_(batch_size),
        stream_(device.create_stream()),
        network_(device, batch_size) {
    stream_->set_tower(0);
    const std::size_t param_bytes = kNumParameters * sizeof(float);
    const std::size_t image_count = static_cast<std::size_t>(batch_size) * 24 * 24 * 3;
    params_ = device.allocate(param_bytes);
    grads_ = device.allocate(param_bytes);
    images_ = device.allocate(image_count * sizeof(float));
    labels_ = device.allocate(static_cast<std::size_t>(batch_size) * sizeof(int));
    losses_ = device.allocate_pinned(model::kLossCount * sizeof(float));
    // Staging in pinned memory: standardized-looking images N(0, 1), labels 0..9.
    Buffer host_params = device.allocate_pinned(param_bytes);
    Buffer host_images = device.allocate_pinned(images_.bytes());
    Buffer host_labels = device.allocate_pinned(labels_.bytes());
    model::initialize_parameters(1, host_params.as<float>());
    std::mt19937 rng(7);
    std::normal_distribution<float> pixel(0.0f, 1.0f);
    for (std::size_t i = 0; i < image_count; ++i) host_images.as<float>()[i] = pixel(rng);
    for (int i = 0; i < batch_size; ++i) host_labels.as<int>()[i] = static_cast<int>(rng() % 10);
    initial_params_ = std::move(host_params);
    stream_->copy(images_.data(), host_images.data(), images_.bytes(), "copy images");
    stream_->copy(labels_.data(), host_labels.data(), labels_.bytes(), "copy labels");
    reset();
  }

  // Back to the initial parameters, so every case trains from the same point.
  void reset() {
    stream_->copy(params_.data(), initial_params_.data(), params_.bytes(), "copy params");
    stream_->synchronize();
  }

  // One step: forward, backward, SGD; returns its wall time in seconds and the loss the
  // forward pass computed (before the update).
  double step(float* loss) {
    const auto start = base::Clock::now();
    network_.forward_backward(*stream_, params_.as<float>(), images_.as<float>(),
                              labels_.as<int>(), grads_.as<float>());
    model::apply_gradients(*stream_, model::kInitialLearningRate, grads_.as<float>(),
                           params_.as<float>());
    stream_->copy(losses_.data(), network_.losses(), losses_.bytes(), "copy loss");
    stream_->synchronize();
    *loss = losses_.as<float>()[model::kTotalLoss];
    return base::seconds_since(start);
  }

  int batch_size() const { return batch_size_; }
  Device& device() { return device_; }

 private:
  Device& device_;
  int batch_size_;
  std::unique_ptr<Stream> stream_;
  model::Network network_;
  Buffer params_, grads_, images_, labels_, losses_, initial_params_;
};

struct CaseResult {
  double median_s = 0, best_s = 0;
  float first_loss = 0, last_loss = 0;
  bool ok = false;  // every loss finite and the last below the first
};

CaseResult run_case(Trainer& trainer, const BenchOptions& options) {
  trainer.reset();
  CaseResult r;
  float loss = 0;
  bool finite = true;
  for (int i = 0; i < options.warmup; ++i) {
    trainer.step(&loss);
    finite = finite && std::isfinite(loss);
    if (i == 0) r.first_loss = loss;
  }
  std::vector<double> times;
  for (int i = 0; i < options.steps; ++i) {
    times.push_back(trainer.step(&loss));
    finite = finite && std::isfinite(loss);
    if (options.warmup == 0 && i == 0) r.first_loss = loss;
  }
  r.last_loss = loss;
  r.median_s = base::median(times);
  r.best_s = *std::min_element(times.begin(), times.end());
  r.ok = finite && r.last_loss < r.first_loss;
  return r;
}

// One traced step, its spans grouped by op name: calls, milliseconds, share of the step.
void print_breakdown(Runtime& runtime, Trainer& trainer, const std::string& label) {
  Trace& trace = runtime.trace();
  trace.clear();
  trace.set_enabled(true);
  float loss = 0;
  const double wall_ms = trainer.step(&loss) * 1e3;
  trace.set_enabled(false);
  const std::vector<TraceEvent> events = trace.collect();
  trace.clear();

  struct Row {
    int calls = 0;
    double ms = 0;
  };
  std::map<std::string, Row> rows;
  double busy_ms = 0;
  for (const TraceEvent& e : events) {
    if (e.device < 0) continue;  // host-side spans: none here, but not ops either
    Row& row = rows[e.name];
    row.calls += 1;
    row.ms += (e.end_us - e.start_us) / 1e3;
    busy_ms += (e.end_us - e.start_us) / 1e3;
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  std::printf("#\n# per-op breakdown of one traced step: %s (step %.2f ms wall)\n", label.c_str(),
              wall_ms);
  std::printf("# %-16s  %6s  %10s  %7s\n", "op", "calls", "time(ms)", "%step");
  for (const auto& [name, row] : sorted) {
    std::printf("  %-16s  %6d  %10.3f  %7.1f\n", name.c_str(), row.calls, row.ms,
                100.0 * row.ms / wall_ms);
  }
  // What the spans do not cover: enqueueing, waking the worker, the host's wait.
  std::printf("  %-16s  %6s  %10.3f  %7.1f\n", "(outside ops)", "", wall_ms - busy_ms,
              100.0 * (wall_ms - busy_ms) / wall_ms);
}

struct PytorchResult {
  bool measured = false;
  double images_per_sec = kPytorchReferenceImagesPerSec;
  double images_per_sec_best = 0;
  std::string why;  // when not measured
};

// The first Python that can `import torch`: --python only, if given; else kPythons.
std::string python_with_torch(const BenchOptions& options) {
  const std::vector<std::string> candidates =
      options.python.empty() ? kPythons : std::vector<std::string>{options.python};
  for (const std::string& python : candidates) {
    const std::string probe = python + " -c 'import torch' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return python;
  }
  return "";
}

// Runs bench/torch_cifar10.py when a Python with torch is found; parses its summary.
PytorchResult run_pytorch(const BenchOptions& options) {
  PytorchResult r;
  if (!options.pytorch) {
    r.why = "skipped (--no-pytorch)";
    return r;
  }
  const std::string python = python_with_torch(options);
  if (python.empty()) {
    r.why = "not installed (no torch for " +
            (options.python.empty() ? std::string("python3 or /usr/bin/python3") : options.python) +
            ")";
    return r;
  }
  std::ostringstream command;
  command << python << " " << options.pytorch_script << " --threads 2 --batch-size "
          << options.batch_size << " --warmup " << options.warmup << " --steps " << options.steps
          << " 2>&1";
  // Its own table, shown as printed.
  const auto [status, text] = base::run_command(
      command.str(), [](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), stdout); });
  const auto summaries = parse_summaries(text);
  if (status != 0 || summaries.empty() || !summaries.back().contains("images_per_sec")) {
    r.why = "failed (" + options.pytorch_script + ")";
    return r;
  }
  r.measured = true;
  r.images_per_sec = std::stod(summaries.back().at("images_per_sec"));
  r.images_per_sec_best = std::stod(summaries.back().at("images_per_sec_best"));
  return r;
}

int run(RuntimeOptions runtime_options, const BenchOptions& options) {
  if (options.batch_size < 1 || options.steps < 1 || options.warmup < 0) {
    throw UsageError("--batch-size and --steps must be at least 1, --warmup at least 0");
  }
  for (int threads : options.threads) {
    if (threads < 1) throw UsageError("--threads: each count must be at least 1");
  }
  runtime_options.devices = 1;  // one tower on one device
  auto runtime = Runtime::create(runtime_options);
  const bool host = runtime->backend() == Backend::kHost;
  const std::string backend(to_string(runtime->backend()));
  Trainer trainer(runtime->device(0), options.batch_size);

  std::vector<int> cases = host ? options.threads : std::vector<int>{0};
  std::printf("# bench_train: forward + backward + SGD, batch %d, warmup %d, %d timed steps; "
              "one device (%s)\n",
              options.batch_size, options.warmup, options.steps,
              runtime->device(0).name().c_str());
  std::printf("# %-8s  %7s  %5s  %10s  %10s  %12s  %12s  %8s  %8s  %4s\n", "backend", "threads",
              "batch", "median(ms)", "best(ms)", "img/s(med)", "img/s(best)", "loss0", "lossN",
              "ok");
  std::vector<CaseResult> results;
  for (int threads : cases) {
    if (host) ops::set_host_op_threads(threads);
    const CaseResult r = run_case(trainer, options);
    results.push_back(r);
    std::printf("  %-8s  %7s  %5d  %10.2f  %10.2f  %12.1f  %12.1f  %8.4f  %8.4f  %4s\n",
                backend.c_str(), host ? std::to_string(threads).c_str() : "-",
                options.batch_size, r.median_s * 1e3, r.best_s * 1e3,
                options.batch_size / r.median_s, options.batch_size / r.best_s, r.first_loss,
                r.last_loss, r.ok ? "yes" : "NO");
  }
  for (int threads : cases) {
    if (host) ops::set_host_op_threads(threads);
    print_breakdown(*runtime, trainer,
                    host ? backend + ", " + std::to_string(threads) + " op thread(s)" : backend);
  }

  PytorchResult pytorch;
  if (host) {
    std::printf("#\n");
    pytorch = run_pytorch(options);
    if (!pytorch.measured) {
      std::printf("# pytorch: %s (reference figure: ~%.0f images/s median on this 2-core "
                  "machine, batch 128, measured by the issue author)\n",
                  pytorch.why.c_str(), kPytorchReferenceImagesPerSec);
    }
  }
  bool all_ok = true;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const CaseResult& r = results[i];
    all_ok = all_ok && r.ok;
    Summary summary;
    summary.add("backend", backend);
    if (host) summary.add("threads", cases[i]);
    summary.add("batch_size", options.batch_size)
        .add("images_per_sec", options.batch_size / r.median_s, 1)
        .add("images_per_sec_best", options.batch_size / r.best_s, 1)
        .add("step_ms", r.median_s * 1e3, 2)
        .add("loss_falls", std::string(r.ok ? "yes" : "no"));
    if (host) {
      summary.add("pytorch_images_per_sec", pytorch.images_per_sec, 1)
          .add("pytorch", std::string(pytorch.measured ? "measured" : "reference"))
          .add("ratio", options.batch_size / r.median_s / pytorch.images_per_sec, 2);
    }
    summary.print();
  }
  if (!all_ok) {
    std::fprintf(stderr, "error: a case's loss did not fall or was not finite\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  CLI::App app{"Times one tower's training step (forward + backward + SGD): images/s, per-op "
               "breakdown, and PyTorch on the host when installed"};
  towers::RuntimeOptions runtime_options;
  towers::BenchOptions options;
  app.add_option_function<std::string>(
         "--backend",
         [&](const std::string& text) { runtime_options.backend = towers::parse_backend_choice(text); },
         "auto (a GPU if there is one, else host), cuda or host; one device either way")
      ->default_str("auto");
  app.add_option("--batch-size", options.batch_size, "images per step")->capture_default_str();
  app.add_option("--warmup", options.warmup, "untimed steps first")->capture_default_str();
  app.add_option("--steps", options.steps, "timed steps")->capture_default_str();
  app.add_option("--threads", options.threads, "host: threads per op, one case each")
      ->delimiter(',')
      ->capture_default_str();
  app.add_flag("!--no-pytorch", options.pytorch, "do not run the PyTorch comparison");
  app.add_option("--python", options.python,
                 "the Python that may have torch (default: python3, then /usr/bin/python3)");
  app.add_option("--pytorch-script", options.pytorch_script, "bench/torch_cifar10.py")
      ->capture_default_str();
  return towers::run_program(app, argc, argv,
                             [&] { return towers::run(runtime_options, options); });
}
