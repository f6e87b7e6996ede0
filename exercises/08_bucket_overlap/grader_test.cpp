// SPDX-License-Identifier: MIT
// Grader of exercise 08: overlap_buckets() all-reduces each gradient bucket on the
// communication streams as soon as the layer that completes it is done, and applies the
// optimizer per bucket, each waiting for its own bucket only. On simulated devices (the
// host backend). The grader runs the backward pass, the all-reduce and the optimizer
// itself: concurrency is proved by rendezvous probes, order by gates (the wrong order
// reads the wrong numbers), and what the optimizer read is checked bit for bit. Each test
// is one point.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "bucket_overlap.hpp"
#include "exercises/grader.hpp"
#include "exercises/todo.hpp"
#include "runtime/rendezvous.hpp"
#include "runtime/runtime.hpp"

namespace towers::exercises {
namespace {

using namespace std::chrono_literals;

// The model, cut down: five layers in backward order (layer 0, the model's last, is final
// first), of unequal sizes. As in the real flat buffer, layer 0 sits at its end.
constexpr std::array<std::size_t, 5> kLayerSizes = {10, 129, 5, 64, 37};
constexpr int kLayers = static_cast<int>(kLayerSizes.size());
constexpr std::size_t kTotal = 245;  // the sum of kLayerSizes
constexpr float kPoison = 1.0e6f;    // gradients not written yet

std::size_t layer_offset(int k) {
  std::size_t offset = 0;
  for (int j = k + 1; j < kLayers; ++j) offset += kLayerSizes[j];
  return offset;
}

// A bucket layout: groups of consecutive layers [first, last] in backward order.
struct Layout {
  std::string name;
  std::vector<std::pair<int, int>> groups;
  int towers = 2;
};

std::vector<GradientBucket> buckets_of(const Layout& layout) {
  std::vector<GradientBucket> buckets;
  for (auto [first, last] : layout.groups) {
    std::size_t count = 0;
    for (int k = first; k <= last; ++k) count += kLayerSizes[k];
    buckets.push_back({layer_offset(last), count, last});
  }
  return buckets;
}

// One bucket per layer; three buckets whose indices are not their last layers; one bucket.
const Layout kPerLayer{"PerLayer", {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}}, 2};
const Layout kGrouped{"Grouped", {{0, 1}, {2, 2}, {3, 4}}, 3};
const Layout kOneBucket{"OneBucket", {{0, 4}}, 2};

// A door that work waits behind, so that the grader can force an order. The grader (or
// the work it gates) opens it; as a safety it opens itself after `limit` and stays open,
// so the right schedule costs one limit and a wrong one never hangs.
class Gate {
 public:
  explicit Gate(std::chrono::milliseconds limit) : limit_(limit) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!opened_cv_.wait_for(lock, limit_, [&] { return open_; })) open_ = true;
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    opened_cv_.notify_all();
  }

 private:
  std::chrono::milliseconds limit_;
  std::mutex mutex_;
  std::condition_variable opened_cv_;
  bool open_ = false;
};

constexpr auto kGateLimit = 200ms;

// What a step adds to the plain schedule, to make a wrong one visible.
struct Probes {
  // Every compute stream waits behind this before its backward pass.
  std::shared_ptr<Gate> hold;
  // Layer k's gradients are written only after a gate that an all-reduce of a range
  // touching layer k opens: an all-reduce that does not wait for layer k reads it unwritten.
  bool gate_layers = false;
  // Bucket b's all-reduce averages only after a gate that the optimizer's update of bucket
  // b opens: an update that does not wait for bucket b's mean reads the tower's own values.
  bool gate_allreduces = false;
  // Met by tower 0's compute stream right after the first bucket's layer event, and by the
  // first all-reduce: both run at once only if the bucket does not wait for the whole pass.
  Rendezvous* first_bucket = nullptr;
  // Met by tower 0's update of bucket 0 and by the last bucket's all-reduce: both run at
  // once only if the update does not wait for the last bucket.
  Rendezvous* first_update = nullptr;
};

// One step's data: the towers' gradients (exact mean known) and what the optimizer read.
struct StepData {
  StepData(int n, std::uint64_t seed)
      : data(make_exact_mean_data(n, kTotal, seed)),
        applied(n, std::vector<float>(kTotal, -kPoison)),
        reductions(kTotal),
        written(n * kLayers) {}
  // Called by an all-reduce when it runs: were the layers of its range written on every
  // tower? The first that was not is kept, for the failure line.
  void check_written(std::size_t offset, std::size_t count, int bucket) {
    for (int k = 0; k < kLayers; ++k) {
      if (layer_offset(k) >= offset + count || layer_offset(k) + kLayerSizes[k] <= offset) continue;
      for (std::size_t t = 0; t < applied.size(); ++t) {
        if (written[t * kLayers + k].load()) continue;
        std::lock_guard<std::mutex> lock(mutex);
        if (early.empty()) {
          early = "all-reduce of bucket " + std::to_string(bucket) + " ran before layer " +
                  std::to_string(k) + "'s gradients of tower " + std::to_string(t) +
                  " were written";
        }
        return;
      }
    }
  }
  ExactMeanData data;
  std::vector<std::vector<float>> applied;       // [tower][kTotal], written by updates
  std::vector<std::atomic<int>> reductions;      // per element: all-reduces that averaged it
  std::vector<std::atomic<bool>> written;        // [tower * kLayers + layer]: backward done
  std::mutex mutex;
  std::string early;                             // the first all-reduce that ran too early
  std::vector<std::vector<std::shared_ptr<Gate>>> layer_gates;  // [tower][layer]
  std::vector<std::shared_ptr<Gate>> allreduce_gates;           // [bucket]
};

// One call of the all-reduce, as the grader saw it.
struct AllReduceCall {
  std::size_t offset = 0, count = 0;
  bool on_comm_streams = true;
};

// N simulated devices; tower i's compute and comm streams on device i. What queued work
// touches is declared before the runtime, and the streams last, so work never outlives it.
struct Towers {
  explicit Towers(const Layout& layout)
      : n(layout.towers),
        buckets(buckets_of(layout)),
        grads(n, std::vector<float>(kTotal, kPoison)) {
    runtime = Runtime::create(RuntimeOptions{BackendChoice::kHost, n});
    layer_ready.resize(n);
    bucket_reduced.resize(n);
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < kLayers; ++k) {
        owned_events.push_back(runtime->device(i).create_event());
        layer_ready[i].push_back(owned_events.back().get());
      }
      for (std::size_t b = 0; b < buckets.size(); ++b) {
        owned_events.push_back(runtime->device(i).create_event());
        bucket_reduced[i].push_back(owned_events.back().get());
      }
    }
    for (int i = 0; i < n; ++i) {
      compute.push_back(runtime->device(i).create_stream());
      compute.back()->set_tower(i);
      comm.push_back(runtime->device(i).create_stream());
      comm.back()->set_tower(i);
      towers.push_back(OverlapTower{compute.back().get(), comm.back().get(), grads[i].data(),
                                    layer_ready[i], bucket_reduced[i]});
    }
  }

  int bucket_at(std::size_t offset, std::size_t count) const {
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      if (buckets[b].offset == offset && buckets[b].count == count) return static_cast<int>(b);
    }
    return -1;
  }
  int bucket_of_element(std::size_t j) const {
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const GradientBucket& bucket = buckets[b];
      if (j >= bucket.offset && j < bucket.offset + bucket.count) return static_cast<int>(b);
    }
    return -1;
  }

  // Enqueues the backward pass of one step on every compute stream, then calls the
  // student's overlap_buckets. Returns the step's index.
  int run_step(const Probes& probes = {}) {
    const int s = static_cast<int>(steps.size());
    steps.push_back(std::make_unique<StepData>(n, 800 + 31 * s + 7 * n + buckets.size()));
    StepData& step = *steps.back();
    step.layer_gates.assign(n, {});
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < kLayers; ++k) {
        step.layer_gates[i].push_back(probes.gate_layers ? std::make_shared<Gate>(kGateLimit)
                                                         : nullptr);
      }
    }
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      step.allreduce_gates.push_back(probes.gate_allreduces ? std::make_shared<Gate>(kGateLimit)
                                                            : nullptr);
    }
    for (int i = 0; i < n; ++i) enqueue_backward(step, i, probes);
    try {
      overlap_buckets(towers, buckets, allreduce_for(step, probes), apply_for(step, probes));
    } catch (const NotImplemented& e) {
      std::printf("note: overlap_buckets is unfinished: %s\n", e.what());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "expected overlap_buckets to return, got an exception: " << e.what()
                    << "; hint: it only enqueues; nothing in it should throw";
    }
    return s;
  }

  void enqueue_backward(StepData& step, int i, const Probes& probes) {
    Stream& stream = *compute[i];
    if (probes.hold) stream.launch("hold", [gate = probes.hold] { gate->wait(); }, nullptr);
    for (int k = 0; k < kLayers; ++k) {
      stream.launch("backward", [this, &step, i, k, gate = step.layer_gates[i][k]] {
        if (gate) gate->wait();
        const std::size_t offset = layer_offset(k);
        for (std::size_t j = offset; j < offset + kLayerSizes[k]; ++j) {
          grads[i][j] = step.data.towers[i][j];
        }
        step.written[i * kLayers + k] = true;
      }, nullptr);
      stream.record(*layer_ready[i][k]);
      if (probes.first_bucket && i == 0 && k == buckets.front().last_layer) {
        probes.first_bucket->enqueue(stream);  // the rest of the backward pass waits here
      }
    }
  }

  AllReduce allreduce_for(StepData& step, const Probes& probes) {
    return [this, &step, probes](std::span<float* const> parts, std::size_t count,
                                 std::span<Stream* const> streams) {
      const auto towers_n = static_cast<std::size_t>(n);
      if (parts.size() != towers_n || streams.size() != towers_n) {
        ADD_FAILURE() << "expected allreduce to be given one part and one stream per tower ("
                      << n << "), got " << parts.size() << " parts and " << streams.size()
                      << " streams; hint: one call per bucket covers every tower";
        return;
      }
      AllReduceCall call{0, count, true};
      for (int i = 0; i < n; ++i) {
        const float* begin = grads[i].data();
        if (parts[i] < begin || parts[i] + count > begin + kTotal) {
          ADD_FAILURE() << "expected part " << i << " of the all-reduce inside tower " << i
                        << "'s gradient buffer (" << kTotal << " floats), got a range outside "
                           "it; hint: towers[i].grads + bucket.offset, bucket.count elements";
          return;
        }
        const auto offset = static_cast<std::size_t>(parts[i] - begin);
        if (i > 0 && offset != call.offset) {
          ADD_FAILURE() << "expected every tower's part at the same offset, got " << call.offset
                        << " for tower 0 and " << offset << " for tower " << i;
          return;
        }
        call.offset = offset;
        if (streams[i] != comm[i].get()) call.on_comm_streams = false;
      }
      calls.push_back(call);
      Stream& lead = *streams[0];
      const int bucket = bucket_at(call.offset, count);
      if (probes.first_bucket && calls.size() == 1) probes.first_bucket->enqueue(lead);
      if (probes.first_update && bucket == static_cast<int>(buckets.size()) - 1) {
        probes.first_update->enqueue(lead);
      }
      // A collective: the lead stream waits for every tower's stream, averages, and every
      // stream waits for the lead before its next work.
      for (int i = 1; i < n; ++i) {
        owned_events.push_back(streams[i]->device().create_event());
        streams[i]->record(*owned_events.back());
        lead.wait(*owned_events.back());
      }
      std::shared_ptr<Gate> gate = bucket >= 0 ? step.allreduce_gates[bucket] : nullptr;
      lead.launch("allreduce", [this, &step, call, gate, bucket] {
        if (gate) gate->wait();
        step.check_written(call.offset, call.count, bucket);
        for (std::size_t j = call.offset; j < call.offset + call.count; ++j) {
          float sum = 0;
          for (int t = 0; t < n; ++t) sum += grads[t][j];
          for (int t = 0; t < n; ++t) grads[t][j] = sum / static_cast<float>(n);
          ++step.reductions[j];
        }
        for (int k = 0; k < kLayers; ++k) {  // after the reads: a gated layer comes too late
          const std::size_t first = layer_offset(k), end = first + kLayerSizes[k];
          if (first >= call.offset + call.count || end <= call.offset) continue;
          for (auto& tower_gates : step.layer_gates) {
            if (tower_gates[k]) tower_gates[k]->open();
          }
        }
        ++allreduce_runs;
      }, nullptr);
      owned_events.push_back(lead.device().create_event());
      Event& done = *owned_events.back();
      lead.record(done);
      for (int i = 1; i < n; ++i) streams[i]->wait(done);
    };
  }

  ApplyBucket apply_for(StepData& step, const Probes& probes) {
    return [this, &step, probes](int tower, int bucket) {
      if (tower < 0 || tower >= n || bucket < 0 || bucket >= static_cast<int>(buckets.size())) {
        ADD_FAILURE() << "expected apply(tower, bucket) with tower < " << n << " and bucket < "
                      << buckets.size() << ", got apply(" << tower << ", " << bucket << ")";
        return;
      }
      ++apply_calls;
      Stream& stream = *compute[tower];
      if (probes.first_update && tower == 0 && bucket == 0) probes.first_update->enqueue(stream);
      stream.launch("apply", [this, &step, tower, bucket] {
        const GradientBucket& range = buckets[bucket];
        for (std::size_t j = range.offset; j < range.offset + range.count; ++j) {
          step.applied[tower][j] = grads[tower][j];
        }
        if (step.allreduce_gates[bucket]) step.allreduce_gates[bucket]->open();
        ++apply_runs;
      }, nullptr);
    };
  }

  void synchronize_all() {
    for (auto& s : compute) s->synchronize();
    for (auto& s : comm) s->synchronize();
  }

  // One failure line if the optimizer of some tower read anything but the exact mean.
  void expect_optimizer_read_the_mean(int s, const std::string& hint) {
    const StepData& step = *steps[s];
    for (int i = 0; i < n; ++i) {
      auto bad = first_mismatch(step.applied[i], step.data.mean);
      if (!bad) continue;
      const float got = step.applied[i][*bad];
      const char* what = got == -kPoison                 ? "never applied"
                         : got == step.data.towers[i][*bad] ? "the tower's own gradient"
                                                            : "a wrong value";
      ADD_FAILURE() << "step " << s << ": expected tower " << i << "'s optimizer to read the "
                    << "exact mean of " << n << " towers in every bucket, got "
                    << describe_mismatch(step.applied[i], step.data.mean, *bad) << " (bucket "
                    << bucket_of_element(*bad) << " of " << buckets.size() << ", " << what
                    << "); hint: " << hint;
      return;
    }
  }

  const int n;
  const std::vector<GradientBucket> buckets;
  std::vector<std::vector<float>> grads;  // [tower][kTotal]
  std::vector<std::unique_ptr<StepData>> steps;
  std::vector<AllReduceCall> calls;
  int apply_calls = 0;
  std::atomic<int> allreduce_runs{0}, apply_runs{0};
  std::unique_ptr<Runtime> runtime;
  std::vector<std::unique_ptr<Event>> owned_events;
  std::vector<std::vector<Event*>> layer_ready, bucket_reduced;  // [tower][layer|bucket]
  std::vector<std::unique_ptr<Stream>> compute, comm;
  std::vector<OverlapTower> towers;
};

// What a test name shows of its parameter (gtest would print the struct's bytes).
void PrintTo(const Layout& layout, std::ostream* out) {
  *out << layout.name << " with " << layout.towers << " towers";
}

std::string name_of(const ::testing::TestParamInfo<Layout>& info) {
  return info.param.name + "_N" + std::to_string(info.param.towers);
}

class Buckets : public ::testing::TestWithParam<Layout> {};
INSTANTIATE_TEST_SUITE_P(Layouts, Buckets, ::testing::Values(kPerLayer, kGrouped, kOneBucket),
                         name_of);

TEST_P(Buckets, EachBucketIsAllReducedOnceOnTheCommStreams) {
  Towers towers(GetParam());
  towers.run_step();
  towers.synchronize_all();
  const auto& buckets = towers.buckets;
  ASSERT_EQ(towers.calls.size(), buckets.size())
      << "expected one all-reduce per bucket (" << buckets.size() << "), got "
      << towers.calls.size() << "; hint: call allreduce once per bucket, for all towers at "
                                "once, and for every bucket including the last";
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const AllReduceCall& call = towers.calls[b];
    EXPECT_TRUE(call.offset == buckets[b].offset && call.count == buckets[b].count)
        << "expected all-reduce " << b << " over bucket " << b << " (elements "
        << buckets[b].offset << ".." << buckets[b].offset + buckets[b].count << "), got "
        << call.offset << ".." << call.offset + call.count
        << "; hint: parts are towers[i].grads + bucket.offset, count is bucket.count";
    EXPECT_TRUE(call.on_comm_streams)
        << "expected all-reduce " << b << " on the towers' comm streams, got another stream; "
           "hint: pass every tower's comm stream, in tower order, not the compute streams";
  }
  const StepData& step = *towers.steps[0];
  for (std::size_t j = 0; j < kTotal; ++j) {
    ASSERT_EQ(step.reductions[j].load(), 1)
        << "expected every gradient element averaged exactly once per step, got element " << j
        << " (bucket " << towers.bucket_of_element(j) << ") averaged "
        << step.reductions[j].load() << " times; hint: one all-reduce per bucket, not one per "
                                         "tower, and no bucket left out";
  }
}

TEST_P(Buckets, AllReduceWaitsForTheLayersOfItsBucket) {
  // Every layer's gradients appear behind a gate that an all-reduce touching it opens (or
  // 200 ms pass): an all-reduce that does not wait for its bucket's last layer runs first,
  // and the grader's all-reduce sees, when it runs, that the layer is not written yet.
  Towers towers(GetParam());
  Probes probes;
  probes.gate_layers = true;
  towers.run_step(probes);
  towers.synchronize_all();
  const StepData& step = *towers.steps[0];
  ASSERT_EQ(towers.allreduce_runs.load(), static_cast<int>(towers.buckets.size()))
      << "expected one all-reduce per bucket to run, got " << towers.allreduce_runs.load()
      << " of " << towers.buckets.size() << "; hint: call allreduce once for every bucket";
  EXPECT_TRUE(step.early.empty())
      << "expected every bucket's all-reduce to run after its layers' gradients were written "
      << "on every tower, got: " << step.early << "; hint: before all-reducing bucket b, make "
      << "every tower's comm stream wait for layer_ready[buckets[b].last_layer] (the layer "
         "that completes the bucket; b is not a layer index)";
}

TEST_P(Buckets, OptimizerReadsEachBucketOnlyAfterItsAllReduce) {
  // Bucket b's all-reduce averages only behind a gate that the update of bucket b opens (or
  // 200 ms pass): an update that does not wait for bucket b's mean reads the tower's own
  // gradients.
  Towers towers(GetParam());
  Probes probes;
  probes.gate_allreduces = true;
  towers.run_step(probes);
  towers.synchronize_all();
  towers.expect_optimizer_read_the_mean(
      0, "record bucket_reduced[b] on each comm stream after bucket b's all-reduce, and make "
         "the tower's compute stream (not the comm stream) wait for it before apply(i, b)");
}

TEST_P(Buckets, ReturnsBeforeTheBackwardPassRuns) {
  // The whole backward pass waits behind a gate until overlap_buckets has returned: a call
  // that waits on the host for any of it cannot return before the gate's limit (5 s).
  Towers towers(GetParam());
  Probes probes;
  probes.hold = std::make_shared<Gate>(5000ms);
  towers.run_step(probes);
  const int allreduces_run = towers.allreduce_runs.load(), applies_run = towers.apply_runs.load();
  probes.hold->open();
  towers.synchronize_all();
  const int expected_applies = towers.n * static_cast<int>(towers.buckets.size());
  EXPECT_EQ(towers.apply_calls, expected_applies)
      << "expected apply(i, b) enqueued for every tower and bucket (" << expected_applies
      << ") when overlap_buckets returns, got " << towers.apply_calls;
  EXPECT_EQ(towers.calls.size(), towers.buckets.size())
      << "expected every bucket's all-reduce enqueued when overlap_buckets returns, got "
      << towers.calls.size() << " of " << towers.buckets.size();
  EXPECT_EQ(allreduces_run + applies_run, 0)
      << "expected overlap_buckets to return before anything it enqueued ran, got "
      << allreduces_run << " all-reduces and " << applies_run << " updates already run; hint: "
      << "the host never waits in overlap_buckets: no synchronize(), streams wait on events";
}

TEST_P(Buckets, ConsecutiveStepsEachApplyTheirOwnMeans) {
  // Three steps enqueued back to back, the host waiting only at the end, as a training
  // loop runs: the events are recorded again every step.
  Towers towers(GetParam());
  for (int s = 0; s < 3; ++s) towers.run_step();
  towers.synchronize_all();
  for (int s = 0; s < 3; ++s) {
    towers.expect_optimizer_read_the_mean(
        s, "every step, each bucket's all-reduce waits for this step's layer event, and each "
           "update for this step's bucket_reduced event");
  }
}

class OverlappedBuckets : public ::testing::TestWithParam<Layout> {};
INSTANTIATE_TEST_SUITE_P(Layouts, OverlappedBuckets, ::testing::Values(kPerLayer, kGrouped),
                         name_of);

TEST_P(OverlappedBuckets, FirstBucketIsAllReducedWhileTheBackwardPassRuns) {
  Towers towers(GetParam());
  Rendezvous rendezvous(*towers.runtime, 2, 1000ms);
  Probes probes;
  probes.first_bucket = &rendezvous;
  towers.run_step(probes);
  towers.synchronize_all();
  EXPECT_TRUE(rendezvous.all_met())
      << "expected the first bucket's all-reduce to run while tower 0's backward pass "
         "still runs (earlier layers), got them one after the other; hint: wait for the "
         "event of the bucket's last layer, not for the whole backward pass, and all-reduce "
         "on the comm streams, not the compute streams";
}

TEST_P(OverlappedBuckets, FirstBucketsUpdateRunsWhileTheLastBucketIsAllReduced) {
  Towers towers(GetParam());
  Rendezvous rendezvous(*towers.runtime, 2, 1000ms);
  Probes probes;
  probes.first_update = &rendezvous;
  towers.run_step(probes);
  towers.synchronize_all();
  EXPECT_TRUE(rendezvous.all_met())
      << "expected tower 0's update of bucket 0 to run while the last bucket is all-reduced, "
         "got them one after the other; hint: before apply(i, b) wait for bucket b's "
         "bucket_reduced event only, not for the last bucket's, and apply buckets in order";
}

}  // namespace
}  // namespace towers::exercises
