// SPDX-License-Identifier: MIT
// Tests for iterator.hpp on the host backend: the towers' iterators deliver every example
// once per epoch, reproducibly, exactly as fill_batch makes it; the producer runs ahead by
// the prefetch depth and no further; shutdown never hangs; a worker's error reaches next();
// and the production shows in the trace.
#include "data/iterator.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "data/iterator_plan.hpp"
#include "runtime/runtime.hpp"
#include "trace/span_names.hpp"
#include "trace/trace.hpp"

namespace towers::data {
namespace {

// n examples of seeded random bytes; label i % 10.
Dataset random_dataset(std::size_t n) {
  Dataset data;
  data.labels.resize(n);
  data.images.resize(n * kImageBytes);
  Rng rng(11);
  for (std::size_t i = 0; i < n; ++i) data.labels[i] = static_cast<uint8_t>(i % kNumClasses);
  for (auto& byte : data.images) byte = static_cast<uint8_t>(rng.below(256));
  return data;
}

// A batch as the host sees it once its copy has landed.
struct Taken {
  std::vector<std::size_t> indices;
  std::vector<float> images;
  std::vector<std::int32_t> labels;
  std::uint64_t epoch = 0;
  std::int64_t step = 0;
};

// One step of a consumer: next(), the stream waits for the batch, read it, release().
Taken take(TowerIterator& iterator, Stream& stream) {
  const Batch batch = iterator.next();
  stream.wait(*batch.ready);
  stream.synchronize();  // the test reads the batch on the host
  Taken taken{{batch.indices.begin(), batch.indices.end()}, {}, {}, batch.epoch, batch.step};
  taken.images.assign(batch.images, batch.images + batch.indices.size() * kCropValues);
  taken.labels.assign(batch.labels, batch.labels + batch.indices.size());
  iterator.release(batch, stream);
  return taken;
}

// A runtime, a pool, and one iterator plus compute stream per tower.
struct Towers {
  Towers(const Dataset& data, const IteratorOptions& options, int threads = 3)
      : runtime(Runtime::create({BackendChoice::kHost, 2})), pool(threads) {
    for (int t = 0; t < options.num_towers; ++t) {
      Device& device = runtime->device(t % runtime->device_count());
      streams.push_back(device.create_stream());
      iterators.push_back(std::make_unique<TowerIterator>(data, options, t, device, pool));
    }
  }
  Taken take(int tower) { return data::take(*iterators[tower], *streams[tower]); }

  std::unique_ptr<Runtime> runtime;
  ThreadPool pool;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::unique_ptr<TowerIterator>> iterators;  // last: destroyed first
};

TEST(TowerIterator, FeedsATrainingLoopWhereEachTowerWaitsForItsOwnBatch) {
  const Dataset train = random_dataset(96);
  auto runtime = Runtime::create({BackendChoice::kHost, 2});
  constexpr int num_gpus = 2, max_steps = 8;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::int64_t> label_sums(num_gpus, 0), expected(num_gpus, 0);
  // A stand-in for the model: one op that reads the batch's labels on the device.
  auto tower_loss = [&](Stream& stream, int tower, const Batch& batch) {
    for (std::size_t index : batch.indices) expected[tower] += train.labels[index];
    const std::int32_t* labels = batch.labels;
    const std::size_t n = batch.indices.size();
    stream.launch("tower_loss", [&label_sums, tower, labels, n] {
      for (std::size_t j = 0; j < n; ++j) label_sums[tower] += labels[j];
    }, nullptr);
  };
  // docs-begin: tower-iterator-feed
  ThreadPool pool(4);  // num_preprocess_threads, shared by the towers' producers
  const IteratorOptions options{.num_towers = num_gpus, .batch_size = 8, .steps = max_steps};
  std::vector<std::unique_ptr<TowerIterator>> inputs;
  for (int i = 0; i < num_gpus; ++i) {
    streams.push_back(runtime->device(i).create_stream());
    inputs.push_back(std::make_unique<TowerIterator>(train, options, i, runtime->device(i), pool));
  }
  for (int step = 0; step < max_steps; ++step) {
    for (int i = 0; i < num_gpus; ++i) {
      const Batch batch = inputs[i]->next();   // blocks only if tower i's producer is behind
      streams[i]->wait(*batch.ready);          // tower i waits for its own copy, nothing else
      tower_loss(*streams[i], i, batch);       // enqueues the step that reads the batch
      inputs[i]->release(batch, *streams[i]);  // its slot is refilled only after that step
    }
  }
  // docs-end: tower-iterator-feed
  for (int i = 0; i < num_gpus; ++i) {
    streams[i]->synchronize();
    EXPECT_EQ(label_sums[i], expected[i]) << "tower " << i << " read its own batches";
    EXPECT_EQ(inputs[i]->epoch(), 1u) << "6 batches per epoch, 8 steps";
  }
}

TEST(TowerIterator, EveryExampleOncePerEpochAcrossTowers) {
  const Dataset data = random_dataset(103);  // a prime: every shape leaves a tail
  for (int towers : {1, 2, 3, 4}) {
    for (int batch : {1, 4, 7}) {
      SCOPED_TRACE(testing::Message() << towers << " towers, batch " << batch);
      Towers run(data, {.num_towers = towers, .batch_size = batch, .seed = 5});
      const std::size_t per_epoch = run.iterators[0]->batches_per_epoch();
      for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
        std::set<std::size_t> seen;
        for (std::size_t b = 0; b < per_epoch; ++b) {
          for (int t = 0; t < towers; ++t) {
            const Taken taken = run.take(t);
            EXPECT_EQ(taken.epoch, epoch);
            EXPECT_EQ(run.iterators[t]->epoch(), epoch);
            for (std::size_t index : taken.indices) {
              EXPECT_TRUE(seen.insert(index).second) << "example " << index << " twice";
            }
          }
        }
        EXPECT_EQ(seen.size(), per_epoch * towers * batch);
        EXPECT_LT(data.size() - seen.size(), static_cast<std::size_t>(towers * batch));
      }
    }
  }
}

TEST(TowerIterator, BatchesAreFillBatchOfTheirIndices) {
  const Dataset data = random_dataset(64);
  for (Mode mode : {Mode::kTrain, Mode::kEval}) {
    Towers run(data, {.num_towers = 2, .batch_size = 10, .seed = 9, .mode = mode});
    for (int step = 0; step < 7; ++step) {  // more than one epoch of 3 batches
      for (int t = 0; t < 2; ++t) {
        const Taken taken = run.take(t);
        EXPECT_EQ(taken.step, step);
        std::vector<float> images(taken.indices.size() * kCropValues);
        std::vector<std::int32_t> labels(taken.indices.size());
        fill_batch(data, taken.indices, mode, 9, taken.epoch, images.data(), labels.data());
        EXPECT_EQ(taken.images, images) << "tower " << t << " step " << step;
        EXPECT_EQ(taken.labels, labels);
      }
    }
  }
}

TEST(TowerIterator, SameSeedSameBatchesAndAnotherSeedAnotherOrder) {
  const Dataset data = random_dataset(80);
  auto first_batches = [&](std::uint64_t seed) {
    Towers run(data, {.num_towers = 2, .batch_size = 8, .seed = seed}, /*threads=*/2);
    std::vector<Taken> batches;
    for (int step = 0; step < 6; ++step) batches.push_back(run.take(1));
    return batches;
  };
  const auto a = first_batches(7), b = first_batches(7), c = first_batches(8);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].indices, b[i].indices);
    EXPECT_EQ(a[i].images, b[i].images);
  }
  EXPECT_NE(a[0].indices, c[0].indices);
  EXPECT_NE(a[0].indices, a[5].indices) << "epoch 1 is reshuffled";
}

// A resumed run starts its iterators at a later global batch: from there on they deliver
// what an iterator that ran from step 0 delivers, and position() says where they stand.
TEST(TowerIterator, StartingAtAStepContinuesTheSequenceExactly) {
  const Dataset data = random_dataset(40);  // 2 towers of 4: 5 steps per epoch
  const IteratorOptions from_zero{.num_towers = 2, .batch_size = 4, .seed = 3};
  IteratorOptions from_seven = from_zero;
  from_seven.first_step = 7;
  Towers a(data, from_zero, /*threads=*/2), b(data, from_seven, /*threads=*/2);
  EXPECT_EQ(b.iterators[1]->position(), position_after(7, 40, 2, 4, 3));
  for (int step = 0; step < 7; ++step) a.take(1);
  EXPECT_EQ(a.iterators[1]->position(), b.iterators[1]->position());
  for (int step = 7; step < 12; ++step) {  // across the epoch boundary at 10
    const Taken x = a.take(1), y = b.take(1);
    EXPECT_EQ(x.step, step);
    EXPECT_EQ(y.step, step);
    EXPECT_EQ(x.epoch, y.epoch);
    EXPECT_EQ(x.indices, y.indices);
    EXPECT_EQ(x.images, y.images);
  }
  EXPECT_EQ(b.iterators[1]->position(), position_after(12, 40, 2, 4, 3));
  EXPECT_EQ(b.iterators[1]->position().epoch, 2u);
}

TEST(TowerIterator, PrefetchFillsKSlotsAheadAndNoMore) {
  constexpr int kDepth = 3, kBatch = 4;
  std::atomic<int> preprocessed{0};
  IteratorOptions options{.batch_size = kBatch, .prefetch_depth = kDepth};
  options.transform = [&](std::size_t, float*) { ++preprocessed; };
  const Dataset data = random_dataset(40);
  Towers run(data, options);
  TowerIterator& iterator = *run.iterators[0];
  auto wait_for_ready = [&](int count) {  // a hang guard, not a measurement
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (iterator.ready_count() < count && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  wait_for_ready(kDepth);  // without a single next()
  EXPECT_EQ(iterator.ready_count(), kDepth);
  // Every slot is full, so the producer cannot have started another batch.
  EXPECT_EQ(preprocessed.load(), kDepth * kBatch);
  run.take(0);
  wait_for_ready(kDepth);
  EXPECT_EQ(iterator.ready_count(), kDepth);
  EXPECT_EQ(preprocessed.load(), (kDepth + 1) * kBatch);
}

TEST(TowerIterator, NextCountsTheTimeItWaits) {
  std::atomic<bool> open{false};
  IteratorOptions options{.batch_size = 2};
  options.transform = [&](std::size_t, float*) {
    while (!open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  const Dataset data = random_dataset(20);
  Towers run(data, options);
  EXPECT_EQ(run.iterators[0]->input_wait_ms(), 0.0);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    open = true;
  });
  run.take(0);  // blocks until the opener lets the producer finish, about 50 ms
  opener.join();
  // A loose lower bound: it fails only if this thread stalls 40 ms before next() waits.
  EXPECT_GE(run.iterators[0]->input_wait_ms(), 10.0);
}

TEST(TowerIterator, DestroyingMidEpochStopsTheWorkers) {
  IteratorOptions options{.num_towers = 4, .batch_size = 8, .prefetch_depth = 2};
  options.transform = [](std::size_t, float*) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // keep the workers busy
  };
  const Dataset data = random_dataset(200);
  {
    Towers run(data, options, /*threads=*/2);
    for (int t = 0; t < 4; ++t) run.take(t);
  }  // destroyed while producers distort: must return, with no thread left behind
  { Towers never_read(data, options, /*threads=*/2); }
  SUCCEED();
}

TEST(TowerIterator, DestructionWaitsForTheComputeThatReadTheBatch) {
  auto runtime = Runtime::create({BackendChoice::kHost, 1});
  ThreadPool pool(1);
  auto stream = runtime->device(0).create_stream();
  std::atomic<bool> step_done{false};
  const Dataset data = random_dataset(20);
  {
    TowerIterator iterator(data, {.batch_size = 4}, 0, runtime->device(0), pool);
    const Batch batch = iterator.next();
    stream->wait(*batch.ready);
    stream->launch("slow step", [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      step_done = true;
    }, nullptr);
    iterator.release(batch, *stream);
  }
  EXPECT_TRUE(step_done.load()) << "the buffers were freed under a running step";
}

TEST(TowerIterator, AWorkerErrorIsRethrownByNext) {
  constexpr int kBatch = 4;
  const Dataset data = random_dataset(40);
  // The first example of tower 0's third batch fails to distort.
  const std::size_t bad = shard_batch(epoch_order(data.size(), 3, 0), 1, 0, kBatch, 2)[0];
  IteratorOptions options{.batch_size = kBatch, .seed = 3};
  options.transform = [bad](std::size_t example, float*) {
    if (example == bad) throw std::runtime_error("cannot distort example " + std::to_string(bad));
  };
  Towers run(data, options);
  EXPECT_EQ(run.take(0).step, 0);  // batches finished before the failure still arrive
  EXPECT_EQ(run.take(0).step, 1);
  for (int again = 0; again < 2; ++again) {
    try {
      run.take(0);
      ADD_FAILURE() << "next() returned a batch after the producer failed";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "cannot distort example " + std::to_string(bad));
    }
  }
}

TEST(TowerIterator, EndsAfterItsStepsAndRefusesToHoldEverySlot) {
  const Dataset data = random_dataset(20);
  Towers run(data, {.batch_size = 4, .prefetch_depth = 2, .steps = 7});
  TowerIterator& iterator = *run.iterators[0];
  EXPECT_EQ(iterator.batches_per_epoch(), 5u);
  const Batch first = iterator.next();
  const Batch second = iterator.next();
  EXPECT_THROW(iterator.next(), UsageError) << "both slots held: next() would wait forever";
  iterator.release(first, *run.streams[0]);
  EXPECT_THROW(iterator.release(first, *run.streams[0]), std::logic_error);
  auto other_device = run.runtime->device(1).create_stream();
  EXPECT_THROW(iterator.release(second, *other_device), std::invalid_argument);
  iterator.release(second, *run.streams[0]);
  for (int step = 2; step < 7; ++step) EXPECT_EQ(run.take(0).epoch, step < 5 ? 0u : 1u);
  EXPECT_THROW(iterator.next(), UsageError) << "made for 7 steps";
}

TEST(TowerIterator, BadOptionsAreUsageErrors) {
  auto runtime = Runtime::create({BackendChoice::kHost, 1});
  ThreadPool pool(1);
  Device& device = runtime->device(0);
  const Dataset data = random_dataset(10);
  auto make = [&](const IteratorOptions& options, int tower = 0) {
    TowerIterator iterator(data, options, tower, device, pool);
  };
  EXPECT_THROW(make({.num_towers = 11}), UsageError);    // more towers than examples
  EXPECT_THROW(make({.num_towers = 3, .batch_size = 4}), UsageError);  // shard of 3
  EXPECT_THROW(make({.batch_size = 0}), UsageError);
  EXPECT_THROW(make({.num_towers = 0}), UsageError);
  EXPECT_THROW(make({.batch_size = 2, .prefetch_depth = 0}), UsageError);
  EXPECT_THROW(make({.batch_size = 2, .steps = -1}), UsageError);
  EXPECT_THROW(make({.batch_size = 2, .first_step = -1}), UsageError);
  EXPECT_THROW(make({.num_towers = 2, .batch_size = 2}, 2), std::out_of_range);
}

TEST(TowerIterator, CopiesAndDistortionsShowInTheTraceUnderTheirTower) {
  auto runtime = Runtime::create({BackendChoice::kHost, 1});
  runtime->trace().set_enabled(true);
  ThreadPool pool(2);
  auto stream = runtime->device(0).create_stream();
  const Dataset data = random_dataset(30);
  {
    TowerIterator iterator(data, {.num_towers = 3, .batch_size = 4,
                                                .trace = &runtime->trace()},
                           2, runtime->device(0), pool);
    take(iterator, *stream);
  }
  int copies = 0, distorts = 0;
  for (const TraceEvent& e : runtime->trace().collect()) {
    if (e.name == span::kCopyInput) copies += e.tower == 2 && e.device == 0;
    if (e.name == "distort") distorts += e.tower == 2 && e.device == -1;
  }
  EXPECT_GE(copies, 1);
  EXPECT_GE(distorts, 2) << "one span per pool task; 2 tasks per batch";
}

}  // namespace
}  // namespace towers::data
