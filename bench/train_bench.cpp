// SPDX-License-Identifier: MIT
// bench_train: how many images per second one tower trains, forward + backward + SGD
// update of the tutorial's model, against PyTorch and against the machine's limit, with a
// per-op profile of a few steps read off the trace (step_profile.hpp): by op and by kind.
//
//   build/bin/bench_train                      # host: 1 and 2 op threads, PyTorch if present
//   build/bin/bench_train --backend cuda       # one GPU
//   build/bin/bench_train --threads 2 --pairs 5 --python ~/venv-torch/bin/python3
//
// A run trains one Network on one stream: `warmup` untimed steps, then `steps` timed
// ones, each timed on the host clock from its first enqueue to the stream's completion
// (the step of chapter 1 without the input pipeline and the moving averages). Inputs are
// one fixed random batch, so the timed steps fit it: the loss must fall and stay finite,
// the correctness column of the table.
//
// On the host, for each --threads count, towers and bench/torch_cifar10.py (the same
// model in PyTorch, same threads, batch and steps) run alternately, --pairs times: on a
// shared machine the load changes from minute to minute, so only runs made next to each
// other compare. The ratio is the median over rounds of (towers / PyTorch), each side a
// run's median step. Each round begins with the machine's limit: OpenBLAS's sgemm on one
// large square product with its own threads at that count, in GFLOP/s; divided by the
// FLOPs of one image's matrix products (Network::multiply_adds_per_image, from the layer
// shapes) it is the ceiling in images/s that a step made only of those products would
// reach, and towers' share of it is the median over rounds of towers / that round's
// ceiling. Without PyTorch the summaries say pytorch=missing and carry towers and the
// ceiling only.
//
// On the host backend a device is one stream is one worker thread: ops run one after
// another on it, and each op splits its work over --threads threads
// (kernels/host/parallel.hpp), so every row of the profile shrinks with more threads,
// the small ops (which do not split) excepted.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/process.hpp"
#include "base/timing.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "data/preprocess.hpp"
#include "kernels/host/openblas_core.hpp"
#include "model/network.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "step_profile.hpp"

#ifndef TOWERS_BENCH_DIR
#define TOWERS_BENCH_DIR "bench"
#endif

namespace towers {
namespace {

using model::kNumParameters;

// Where to look for a Python with torch when --python is not given: the one on PATH (an
// activated virtual environment), the checkout's .venv (bench/README.md: how to make it),
// then the system's, where Debian's python3-torch installs.
const std::vector<std::string> kPythons = {"python3", TOWERS_BENCH_DIR "/../.venv/bin/python3",
                                           "/usr/bin/python3"};

struct BenchOptions {
  int batch_size = 128;
  int warmup = 3;
  int steps = 20;  // per run
  int pairs = 3;   // host: runs of towers and PyTorch, alternately
  int sgemm_size = 2048;  // host: n of the n x n x n product; 0 skips it
  std::vector<int> threads = {1, 2};  // host backend only
  int profile_steps = 3;  // traced steps of the per-op profile, per thread count
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
    const std::size_t image_count = static_cast<std::size_t>(batch_size) * data::kCropValues;
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

// `steps` traced steps, profiled by op and by kind (step_profile.hpp), printed.
bench::StepProfile profile(Runtime& runtime, Trainer& trainer, int steps,
                           const std::string& label) {
  float loss = 0;
  const bench::StepProfile p =
      bench::profile_steps(runtime.trace(), steps, [&] { return trainer.step(&loss); });
  bench::print_profile(p, label);
  return p;
}

// The profile's summary keys: its step, each kind's milliseconds, and the products' share.
void add_profile(Summary& summary, const bench::StepProfile& p) {
  summary.add("profile_steps", p.steps).add("profile_step_ms", p.step_ms, 2);
  for (const bench::ProfileRow& row : p.kinds) summary.add("op_" + row.name + "_ms", row.ms, 2);
  summary.add("op_outside_ms", p.outside_ms, 2)
      .add("gemm_share", p.kind_ms("gemm") / p.step_ms, 3);
}

// The machine's sgemm speed: the best of `reps` products c[n, n] = a[n, n] b[n, n] in
// OpenBLAS with its own `threads` threads (its best case: large, square, one call), in
// GFLOP/s. Leaves OpenBLAS at one thread, as kernels/host/blas.cpp wants it.
double sgemm_gflops(int n, int threads, int reps) {
  const std::size_t count = static_cast<std::size_t>(n) * n;
  std::vector<float> a(count), b(count), c(count);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (std::size_t i = 0; i < count; ++i) a[i] = value(rng), b[i] = value(rng);
  openblas_set_num_threads(threads);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                n, 0.0f, c.data(), n);
    best = std::min(best, base::seconds_since(start));
  }
  openblas_set_num_threads(1);
  return 2.0 * n * n * static_cast<double>(n) / best / 1e9;
}

struct PytorchResult {
  bool measured = false;
  double images_per_sec = 0;
  double images_per_sec_best = 0;
  std::string version;
  std::string variant;  // the fastest form of the model (torch_cifar10.py)
  std::string why;      // when not measured
};

// The default Pythons, in order, as one list for messages.
std::string python_list() {
  std::string list;
  for (const std::string& python : kPythons) list += (list.empty() ? "" : ", ") + python;
  return list;
}

// Whether `python` can `import torch`: run with no shell between, so a path with a space
// or a ';' is one argument and never a command. 127: it could not be started at all.
int import_torch(const std::string& python) {
  return base::run_argv({python, "-c", "import torch"}).exit_code;
}

// The Python to run PyTorch with: --python, which must import torch (else a UsageError
// saying what to do, before anything runs); without it the first of kPythons that
// imports torch, or "" when none does (the comparison is then left out, as the summary says).
std::string python_with_torch(const BenchOptions& options) {
  if (options.python.empty()) {
    for (const std::string& python : kPythons) {
      if (import_torch(python) == 0) return python;
    }
    return "";
  }
  const int status = import_torch(options.python);
  if (status == 127) {
    throw UsageError("--python " + options.python +
                     ": cannot run it (not found, or not executable); give the path of a Python "
                     "that has torch, or --no-pytorch to leave PyTorch out");
  }
  if (status != 0) {
    throw UsageError("--python " + options.python + ": `import torch` fails there; install it (" +
                     options.python + " -m pip install torch; bench/README.md says more) or "
                     "pass --no-pytorch");
  }
  return options.python;
}

// Runs bench/torch_cifar10.py with `python` and `threads` threads; parses its summary.
PytorchResult run_pytorch(const BenchOptions& options, const std::string& python, int threads) {
  PytorchResult r;
  const std::vector<std::string> argv = {
      python,      options.pytorch_script,           "--threads",
      std::to_string(threads), "--batch-size", std::to_string(options.batch_size),
      "--warmup",  std::to_string(options.warmup),   "--steps",
      std::to_string(options.steps)};
  // Its own lines (stdout and stderr), shown as printed.
  const auto [status, text] = base::run_argv(
      argv, [](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), stdout); });
  const auto summaries = parse_summaries(text);
  if (status != 0 || summaries.empty() || !summaries.back().contains("images_per_sec")) {
    r.why = "failed (" + options.pytorch_script + ", exit status " + std::to_string(status) + ")";
    return r;
  }
  r.measured = true;
  r.images_per_sec = std::stod(summaries.back().at("images_per_sec"));
  r.images_per_sec_best = std::stod(summaries.back().at("images_per_sec_best"));
  if (summaries.back().contains("version")) r.version = summaries.back().at("version");
  if (summaries.back().contains("variant")) r.variant = summaries.back().at("variant");
  return r;
}

// The value that occurs most often (the first of those tied): the form PyTorch was
// fastest in over the rounds.
std::string most_frequent(const std::vector<std::string>& values) {
  std::string best;
  long best_count = 0;
  for (const std::string& v : values) {
    const long count = std::count(values.begin(), values.end(), v);
    if (count > best_count) best = v, best_count = count;
  }
  return best;
}

void print_row(const std::string& who, const std::string& threads, int batch, double median_ms,
               double best_ms, const std::string& losses, const std::string& ok) {
  std::printf("  %-8s  %7s  %5d  %10.2f  %10.2f  %12.1f  %12.1f  %17s  %4s\n", who.c_str(),
              threads.c_str(), batch, median_ms, best_ms, batch / median_ms * 1e3,
              batch / best_ms * 1e3, losses.c_str(), ok.c_str());
}

// One thread count on the host: `pairs` rounds, each the sgemm, a towers run and a
// PyTorch run, one right after the other, so that each ratio compares runs under the
// same load.
struct HostCase {
  std::vector<CaseResult> towers;
  std::vector<double> pytorch_ips;  // empty without PyTorch
  std::string pytorch_version;
  std::vector<std::string> pytorch_variants;  // the fastest form, one per round
  std::vector<double> ratios;  // towers / PyTorch images/s, one per round
  std::vector<double> gflops;  // sgemm, one per round (empty with --sgemm-size 0)
  std::vector<double> shares;  // towers images/s / that round's ceiling
};

HostCase run_host_case(Trainer& trainer, const BenchOptions& options, int threads,
                       const std::string& python, double flops_per_image) {
  HostCase hc;
  char note[96];
  for (int round = 0; round < options.pairs; ++round) {
    if (options.sgemm_size > 0) {
      const double g = sgemm_gflops(options.sgemm_size, threads, 3);
      hc.gflops.push_back(g);
      std::printf("# sgemm %d^3, OpenBLAS %s kernels, %d thread(s): %.1f GFLOP/s (best of 3) "
                  "-> ceiling %.0f images/s\n",
                  options.sgemm_size, host::loaded_openblas().core.c_str(), threads, g,
                  g * 1e9 / flops_per_image);
    }
    ops::set_host_op_threads(threads);
    const CaseResult r = run_case(trainer, options);
    hc.towers.push_back(r);
    const double ips = options.batch_size / r.median_s;
    if (!hc.gflops.empty()) hc.shares.push_back(ips / (hc.gflops.back() * 1e9 / flops_per_image));
    std::snprintf(note, sizeof note, "%.4f -> %.4f", r.first_loss, r.last_loss);
    print_row("towers", std::to_string(threads), options.batch_size, r.median_s * 1e3,
              r.best_s * 1e3, note, r.ok ? "yes" : "NO");
    if (python.empty()) continue;
    const PytorchResult p = run_pytorch(options, python, threads);
    if (!p.measured) {
      std::printf("# pytorch: %s\n", p.why.c_str());
      continue;
    }
    hc.pytorch_ips.push_back(p.images_per_sec);
    hc.pytorch_version = p.version.empty() ? "unknown" : p.version;
    hc.pytorch_variants.push_back(p.variant.empty() ? "unknown" : p.variant);
    hc.ratios.push_back(ips / p.images_per_sec);
    std::snprintf(note, sizeof note, "ratio %.2f", hc.ratios.back());
    print_row("pytorch", std::to_string(threads), options.batch_size,
              options.batch_size / p.images_per_sec * 1e3,
              options.batch_size / p.images_per_sec_best * 1e3, note, "");
  }
  return hc;
}

// `python`: the Python that imports torch (python_with_torch), "" for none.
int run_host(Runtime& runtime, Trainer& trainer, const BenchOptions& options,
             const std::string& python) {
  const double flops_per_image = 2.0 * model::Network::multiply_adds_per_image();
  std::printf("# matrix products of one image's step: %.1f MFLOP (from the layer shapes)\n",
              flops_per_image / 1e6);
  // The ceiling is OpenBLAS's: which kernels it runs, and whether they are below the CPU's
  // (a line on stderr if so, before the first sgemm).
  host::warn_once_if_openblas_core_is_below_the_cpu();
  const host::OpenblasBuild openblas = host::loaded_openblas();
  std::printf("# OpenBLAS: %s kernels (%s)\n", openblas.core.c_str(), openblas.config.c_str());
  std::string why;
  if (!options.pytorch) {
    why = "skipped (--no-pytorch)";
  } else if (python.empty()) {
    why = "not installed (no torch for " + python_list() +
          "; to compare, install it: python3 -m venv .venv && .venv/bin/pip install torch, "
          "as bench/README.md says, or name a Python with --python)";
  }
  if (!why.empty()) std::printf("# pytorch: %s; towers and the ceiling only\n", why.c_str());
  std::printf("# %-8s  %7s  %5s  %10s  %10s  %12s  %12s  %17s  %4s\n", "who", "threads", "batch",
              "median(ms)", "best(ms)", "img/s(med)", "img/s(best)", "loss0 -> lossN", "ok");
  std::vector<HostCase> cases;
  for (int threads : options.threads) {
    cases.push_back(run_host_case(trainer, options, threads, python, flops_per_image));
  }
  std::vector<bench::StepProfile> profiles;
  for (int threads : options.threads) {
    ops::set_host_op_threads(threads);
    profiles.push_back(profile(runtime, trainer, options.profile_steps,
                               "host, " + std::to_string(threads) + " op thread(s)"));
  }

  bool all_ok = true;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const HostCase& hc = cases[i];
    std::vector<double> medians, bests;
    bool ok = true;
    for (const CaseResult& r : hc.towers) {
      medians.push_back(r.median_s);
      bests.push_back(r.best_s);
      ok = ok && r.ok;
    }
    all_ok = all_ok && ok;
    Summary summary;
    summary.add("backend", std::string("host"))
        .add("threads", options.threads[i])
        .add("batch_size", options.batch_size)
        .add("images_per_sec", options.batch_size / base::median(medians), 1)
        .add("images_per_sec_best",
             options.batch_size / *std::min_element(bests.begin(), bests.end()), 1)
        .add("step_ms", base::median(medians) * 1e3, 2)
        .add("loss_falls", std::string(ok ? "yes" : "no"))
        .add("rounds", options.pairs);
    if (!hc.ratios.empty()) {
      summary.add("pytorch", std::string("measured"))
          .add("pytorch_version", hc.pytorch_version)
          .add("pytorch_images_per_sec", base::median(hc.pytorch_ips), 1)
          .add("pytorch_variant", most_frequent(hc.pytorch_variants))
          .add("ratio", base::median(hc.ratios), 2)
          .add("pairs", static_cast<int>(hc.ratios.size()));
    } else {
      summary.add("pytorch", std::string(python.empty() ? "missing" : "failed"));
    }
    if (!hc.gflops.empty()) {
      const double gflops = base::median(hc.gflops);
      summary.add("mflop_per_image", flops_per_image / 1e6, 1)
          .add("openblas_core", host::loaded_openblas().core)
          .add("sgemm_gflops", gflops, 1)
          .add("ceiling_images_per_sec", gflops * 1e9 / flops_per_image, 0)
          .add("ceiling_share", base::median(hc.shares), 2);
    }
    add_profile(summary, profiles[i]);
    summary.print();
  }
  if (!all_ok) {
    std::fprintf(stderr, "error: a case's loss did not fall or was not finite\n");
    return 1;
  }
  return 0;
}

int run(RuntimeOptions runtime_options, const BenchOptions& options) {
  if (options.threads.empty()) throw UsageError("--threads: give at least one count");
  runtime_options.devices = 1;  // one tower on one device
  // Line by line even into a file or pipe: a run takes minutes, and its rows show progress.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto runtime = Runtime::create(runtime_options);
  const bool host = runtime->backend() == Backend::kHost;
  // Before any work: a --python that cannot run PyTorch is the command line's mistake.
  const std::string python = host && options.pytorch ? python_with_torch(options) : "";
  Trainer trainer(runtime->device(0), options.batch_size);
  std::printf("# bench_train: forward + backward + SGD, batch %d, warmup %d, %d timed steps "
              "per run; one device (%s)\n",
              options.batch_size, options.warmup, options.steps,
              runtime->device(0).name().c_str());
  if (host) return run_host(*runtime, trainer, options, python);

  // A GPU: one run, no PyTorch (scripts/gpu-bench.d runs PyTorch's GPU script beside it).
  const CaseResult r = run_case(trainer, options);
  char losses[64];
  std::snprintf(losses, sizeof losses, "%.4f -> %.4f", r.first_loss, r.last_loss);
  std::printf("# %-8s  %7s  %5s  %10s  %10s  %12s  %12s  %17s  %4s\n", "who", "threads", "batch",
              "median(ms)", "best(ms)", "img/s(med)", "img/s(best)", "loss0 -> lossN", "ok");
  print_row("cuda", "-", options.batch_size, r.median_s * 1e3, r.best_s * 1e3, losses,
            r.ok ? "yes" : "NO");
  // The fused convolutions have no phase records on a GPU: their spans count as `other`.
  const bench::StepProfile p = profile(*runtime, trainer, options.profile_steps, "cuda");
  Summary summary;
  summary.add("backend", std::string("cuda"))
      .add("batch_size", options.batch_size)
      .add("images_per_sec", options.batch_size / r.median_s, 1)
      .add("images_per_sec_best", options.batch_size / r.best_s, 1)
      .add("step_ms", r.median_s * 1e3, 2)
      .add("loss_falls", std::string(r.ok ? "yes" : "no"));
  add_profile(summary, p);
  summary.print();
  if (!r.ok) {
    std::fprintf(stderr, "error: the loss did not fall or was not finite\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  CLI::App app{"Times one tower's training step (forward + backward + SGD): images/s, per-op "
               "profile; on the host beside PyTorch (when installed) and the sgemm ceiling"};
  towers::RuntimeOptions runtime_options;
  towers::BenchOptions options;
  app.add_option_function<std::string>(
         "--backend",
         [&](const std::string& text) { runtime_options.backend = towers::parse_backend_choice(text); },
         "auto (a GPU if there is one, else host), cuda or host; one device either way")
      ->default_str("auto");
  // Every number is checked as it is parsed: CLI11 reads an empty value as 0, and
  // `--sgemm-size ''` skipped the ceiling without a word.
  app.add_option("--batch-size", options.batch_size, "images per step")
      ->capture_default_str()->check(towers::whole_number(1, towers::model::kMaxBatchSize));
  app.add_option("--warmup", options.warmup, "untimed steps first")
      ->capture_default_str()->check(towers::whole_number(0, 1000000));
  app.add_option("--steps", options.steps, "timed steps")
      ->capture_default_str()->check(towers::whole_number(1, 1000000));
  app.add_option("--pairs", options.pairs,
                 "host: runs of towers and PyTorch, alternately, per thread count")
      ->capture_default_str()->check(towers::whole_number(1, 1000));
  app.add_option("--sgemm-size", options.sgemm_size,
                 "host: n of the n x n x n sgemm that measures the ceiling (0: skip)")
      ->capture_default_str()->check(towers::whole_number(0, 16384));
  app.add_option("--threads", options.threads, "host: threads per op, one case each")
      ->delimiter(',')
      ->capture_default_str()->check(towers::whole_number(1, 1024));
  app.add_option("--profile-steps", options.profile_steps,
                 "traced steps of the per-op profile (means), per thread count")
      ->capture_default_str()->check(towers::whole_number(1, 100000));
  app.add_flag("!--no-pytorch", options.pytorch, "do not run the PyTorch comparison");
  app.add_option("--python", options.python,
                 "the Python that may have torch (default: python3, the checkout's .venv, "
                 "/usr/bin/python3)");
  app.add_option("--pytorch-script", options.pytorch_script, "bench/torch_cifar10.py")
      ->capture_default_str();
  return towers::run_program(app, argc, argv,
                             [&] { return towers::run(runtime_options, options); });
}
