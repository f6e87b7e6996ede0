// SPDX-License-Identifier: MIT
// bench_input: is chapter 4's input pipeline fast enough that training never waits on it?
//   build/bin/bench_input                      # host: 1 and 2 iterators, then the target
//   build/bin/bench_input --backend cuda --devices 1 --towers 2
// Part 1: one TowerIterator, then --towers sharing one ThreadPool, full distortions, the
// consumer only calling next()/release(). A round takes one batch from each; rounds are
// ~1000x shorter than steps, so 10 x --steps rounds are timed and img/s is over the whole
// loop (a round that finds its batch ready takes ~0 ms: per-round bests mean little).
// #bad: batches out of step order, indices outside the set, indices two towers share.
// Part 2, the target: one tower's step (forward + backward + SGD) fed from pre-made batches
// already on the device (taken from an iterator before timing; no iterator then runs), then
// by a fresh iterator with the same seed: the same batches, so the losses must agree bit
// for bit. A step is timed from next() to the stream's completion. Target: median
// step_ms_iterator / step_ms_premade <= 1.05. The premade img/s is what training consumes.
// On the host backend the pool, the copy stream and the training share the machine's cores.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <tuple>
#include <vector>

#include "base/thread_pool.hpp"
#include "base/timing.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "harness/input_queue.hpp"
#include "harness/tower_inputs.hpp"
#include "model/network.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"

namespace towers {
namespace {

using base::Clock;
struct BenchOptions {
  int batch_size = 128, steps = 20, warmup = 3, towers = 2;
  InputFlags input;  // --prefetch, --input-threads: chapter 4's flags and defaults
  std::string data_dir;
};
struct Timing {
  double median_s = 0, best_s = 0, images_per_sec = 0;
};

Timing timing(const std::vector<double>& t, double images) {
  const double median = base::median(t);
  return {median, base::best(t), images / median};
}
data::IteratorOptions iterator_options(const BenchOptions& o, int towers) {
  return {.num_towers = towers, .batch_size = o.batch_size, .seed = 1,
          .prefetch_depth = o.input.prefetch};
}

// Part 1: `towers` iterators on one pool; the consumer does nothing but next()/release().
Timing produce(Runtime& runtime, const data::Dataset& train, const BenchOptions& o, int towers,
               long long* bad) {
  base::ThreadPool pool(o.input.input_threads);
  std::vector<std::unique_ptr<Stream>> streams;  // release() records on these; nothing else
  std::vector<std::unique_ptr<data::TowerIterator>> iterators;  // after: destroyed first
  for (int t = 0; t < towers; ++t) {
    Device& device = runtime.device(t % runtime.device_count());
    streams.push_back(device.create_stream());
    iterators.push_back(std::make_unique<data::TowerIterator>(
        train, iterator_options(o, towers), t, device, pool));
  }
  std::vector<double> times;
  const int rounds = 10 * o.steps;
  auto first = Clock::now();
  for (int round = 0; round < o.warmup + rounds; ++round) {
    const auto start = Clock::now();
    if (round == o.warmup) first = start;
    std::vector<std::size_t> seen;
    for (int t = 0; t < towers; ++t) {
      const data::Batch batch = iterators[t]->next();
      *bad += batch.step != round || batch.indices.size() != std::size_t(o.batch_size);
      for (std::size_t i : batch.indices) *bad += i >= train.size();
      seen.insert(seen.end(), batch.indices.begin(), batch.indices.end());
      iterators[t]->release(batch, *streams[t]);
    }
    if (round >= o.warmup) times.push_back(base::seconds_since(start));
    std::sort(seen.begin(), seen.end());
    *bad += seen.end() - std::unique(seen.begin(), seen.end());  // shards must be disjoint
  }
  Timing t = timing(times, double(towers) * o.batch_size);
  t.images_per_sec = double(towers) * o.batch_size * rounds / base::seconds_since(first);
  return t;
}

// Part 2: one tower's model on one device; every loop trains from the same start.
struct Trainer {
  Trainer(Device& d, int batch) : device(d), stream(d.create_stream()), network(d, batch) {
    model::initialize_parameters(1, initial.as<float>());
  }
  Device& device;
  std::unique_ptr<Stream> stream;
  model::Network network;
  const std::size_t bytes = model::kNumParameters * sizeof(float);
  Buffer params = device.allocate(bytes), grads = device.allocate(bytes),
         initial = device.allocate_pinned(bytes),
         loss = device.allocate_pinned(model::kLossCount * sizeof(float));
  // Trains `steps` steps on next(step); release(batch) right after the enqueue, as chapter 4
  // does, so the producer may refill while the step runs. Appends each step's loss.
  template <class Next, class Release>
  Timing train(const BenchOptions& o, std::vector<float>* losses, Next next, Release release) {
    stream->copy(params.data(), initial.data(), params.bytes(), "copy params");
    stream->synchronize();
    std::vector<double> times;
    for (int step = 0; step < o.warmup + o.steps; ++step) {
      const auto start = Clock::now();
      const data::Batch batch = next(step);
      if (batch.ready != nullptr) stream->wait(*batch.ready);
      network.forward_backward(*stream, params.as<float>(), batch.images, batch.labels,
                               grads.as<float>());
      model::apply_gradients(*stream, model::kInitialLearningRate, grads.as<float>(),
                             params.as<float>());
      stream->copy(loss.data(), network.losses(), loss.bytes(), "copy loss");
      release(batch);
      stream->synchronize();
      losses->push_back(loss.as<float>()[model::kTotalLoss]);
      if (step >= o.warmup) times.push_back(base::seconds_since(start));
    }
    return timing(times, o.batch_size);
  }
};

void row(const char* name, int towers, int batch, const Timing& t, bool best, const char* check) {
  std::printf("  %-20s  %6d  %5d  %8.2f  %8.2f  %10.1f  %11s  %s\n", name, towers, batch,
              t.median_s * 1e3, t.best_s * 1e3, t.images_per_sec,
              best ? std::to_string(int(batch / t.best_s)).c_str() : "-", check);
}

int run(const RuntimeOptions& runtime_options, const BenchOptions& o) {
  auto runtime = Runtime::create(runtime_options);
  const data::Dataset train_set = load_training_set(o.data_dir);
  const std::string backend(to_string(runtime->backend()));
  Device& device = runtime->device(0);
  std::printf("# bench_input: batch %d, warmup %d, %d timed steps, prefetch %d, %d input threads;"
              " %d %s device(s), training on %s\n# %-20s  %6s  %5s  %8s  %8s  %10s  %11s  %s\n",
              o.batch_size, o.warmup, o.steps, o.input.prefetch, o.input.input_threads,
              runtime->device_count(), backend.c_str(), device.name().c_str(), "case", "towers",
              "batch", "med(ms)", "best(ms)", "img/s", "img/s(best)", "check");
  long long bad = 0, bad_all = 0;
  const Timing one = produce(*runtime, train_set, o, 1, &bad);
  row("produce", 1, o.batch_size, one, false, bad == 0 ? "#bad=0" : "#bad>0");
  const Timing all = o.towers > 1 ? produce(*runtime, train_set, o, o.towers, &bad_all) : one;
  if (o.towers > 1) row("produce, shared pool", o.towers, o.batch_size, all, false,
                        bad_all == 0 ? "#bad=0" : "#bad>0");

  Trainer trainer(device, o.batch_size);
  const std::size_t image_bytes = std::size_t(o.batch_size) * data::kCropValues * sizeof(float);
  const std::size_t label_bytes = std::size_t(o.batch_size) * sizeof(std::int32_t);
  std::vector<Buffer> premade;  // per step: [images | labels] on the device
  {
    base::ThreadPool pool(o.input.input_threads);
    data::TowerIterator iterator(train_set, iterator_options(o, 1), 0, device, pool);
    for (int step = 0; step < o.warmup + o.steps; ++step) {
      const data::Batch batch = iterator.next();
      premade.push_back(device.allocate(image_bytes + label_bytes));
      trainer.stream->wait(*batch.ready);
      trainer.stream->copy(premade.back().data(), batch.images, image_bytes, "copy premade");
      trainer.stream->copy(premade.back().as<char>() + image_bytes, batch.labels, label_bytes,
                            "copy premade");
      iterator.release(batch, *trainer.stream);
    }
    trainer.stream->synchronize();
  }  // destroyed: no iterator runs while the premade loop is timed
  std::vector<float> loss_premade, loss_iterator;
  const Timing premade_t = trainer.train(o, &loss_premade, [&](int step) {
    data::Batch batch;
    batch.images = premade[step].as<float>();
    batch.labels = reinterpret_cast<const std::int32_t*>(premade[step].as<char>() + image_bytes);
    return batch;
  }, [](const data::Batch&) {});
  const bool finite = std::ranges::all_of(loss_premade, [](float l) { return std::isfinite(l); });
  row("train, premade", 1, o.batch_size, premade_t, true, finite ? "loss finite" : "NOT FINITE");

  base::ThreadPool pool(o.input.input_threads);
  data::TowerIterator iterator(train_set, iterator_options(o, 1), 0, device, pool);
  const Timing iterator_t = trainer.train(o, &loss_iterator, [&](int) { return iterator.next(); },
      [&](const data::Batch& batch) { iterator.release(batch, *trainer.stream); });
  const bool same = loss_iterator == loss_premade;
  row("train, iterator", 1, o.batch_size, iterator_t, true, same ? "same loss" : "LOSS DIFFERS");

  const double ratio = iterator_t.median_s / premade_t.median_s;
  std::printf("#\n# training consumes %.1f images/s per tower, one iterator makes %.1f (x%.1f); "
              "step ratio %.3f (of bests %.3f): target <= 1.05 %s; input wait %.2f ms/step\n",
              premade_t.images_per_sec, one.images_per_sec,
              one.images_per_sec / premade_t.images_per_sec, ratio,
              iterator_t.best_s / premade_t.best_s, ratio <= 1.05 ? "met" : "NOT met",
              iterator.input_wait_ms() / (o.warmup + o.steps));
  Summary().add("backend", backend).add("batch_size", o.batch_size).add("towers", o.towers)
      .add("prefetch", o.input.prefetch).add("input_threads", o.input.input_threads)
      .add("bad", bad + bad_all).add("same_loss", std::string(same ? "yes" : "no"))
      .add("towers_images_per_sec", all.images_per_sec, 1)
      .add("iterator_images_per_sec", one.images_per_sec, 1)
      .add("training_images_per_sec", premade_t.images_per_sec, 1)
      .add("step_ms_iterator", iterator_t.median_s * 1e3, 2)
      .add("step_ms_premade", premade_t.median_s * 1e3, 2).add("ratio", ratio, 3).print();
  if (bad + bad_all == 0 && same && finite) return 0;
  std::fprintf(stderr, "error: bad batches, or losses that differ or are not finite\n");
  return 1;
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  CLI::App app{"Times the input pipeline (TowerIterator) against what training consumes, and "
               "one tower's step fed by an iterator against pre-made device batches"};
  towers::RuntimeOptions runtime_options;
  towers::BenchOptions options;
  towers::add_runtime_flags(app, runtime_options);
  towers::add_input_flags(app, options.input);
  // Every number is checked as it is parsed: CLI11 reads an empty value as 0.
  app.add_option("--towers", options.towers, "iterators in part 1")
      ->capture_default_str()->check(towers::whole_number(1, 256));
  app.add_option("--batch-size", options.batch_size, "images per batch")
      ->capture_default_str()->check(towers::whole_number(1, towers::model::kMaxBatchSize));
  app.add_option("--steps", options.steps, "timed steps (x10 rounds)")
      ->capture_default_str()->check(towers::whole_number(1, 1000000));
  app.add_option("--warmup", options.warmup, "untimed steps first")
      ->capture_default_str()->check(towers::whole_number(0, 1000000));
  app.add_option("--data-dir", options.data_dir, "CIFAR-10 binaries; empty: synthetic")
      ->capture_default_str();
  return towers::run_program(app, argc, argv, [&] { return towers::run(runtime_options, options); });
}
