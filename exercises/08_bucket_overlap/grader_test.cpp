// SPDX-License-Identifier: MIT
// Grader of exercise 08: overlap_buckets() all-reduces each gradient bucket on the
// communication streams as soon as the layer that completes it is done, and applies the
// optimizer per bucket, each waiting for its own bucket only. On simulated devices (the
// host backend). The grader runs the backward pass, the all-reduce and the optimizer
// itself, and hands the student streams that pass every call on to the runtime's and write
// it down: from those calls it knows, for every pair of ops, whether one must run before
// the other (what the streams' order and the events guarantee), whatever the threads'
// timing. Order is checked on that, never on the clock, so a grade is the same on a busy
// machine; what the optimizer read when it ran is checked bit for bit. Each test is one
// point.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bucket_overlap.hpp"
#include "exercises/grader.hpp"
#include "exercises/stream_log.hpp"
#include "exercises/todo.hpp"
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

// One call of the all-reduce, as the grader saw it, and its ops on each tower's stream:
// `send` reads the tower's part (NCCL's kernel on that device sends it), `receive` writes
// the mean into it after every tower's send (a collective waits for all its members).
struct AllReduceCall {
  std::size_t offset = 0, count = 0;
  int bucket = -1;  // the bucket whose range it is, or -1
  bool on_comm_streams = true;
  std::vector<int> send, receive;  // [tower]: ops in the Schedule
};

// One step's data: the towers' gradients (exact mean known), what the optimizer read, and
// the ops the grader enqueued, by index in the Schedule.
struct StepData {
  StepData(int n, std::uint64_t seed, std::size_t buckets)
      : data(make_exact_mean_data(n, kTotal, seed)),
        applied(n, std::vector<float>(kTotal, -kPoison)),
        reductions(static_cast<std::size_t>(n) * kTotal),
        backward(n, std::vector<int>(kLayers, -1)),
        update(n, std::vector<int>(buckets, -1)) {}
  ExactMeanData data;
  std::vector<std::vector<float>> applied;   // [tower][kTotal], written by updates
  std::vector<std::atomic<int>> reductions;  // [tower * kTotal + j]: means written there
  std::vector<std::vector<int>> backward;    // [tower][layer]: the op writing the layer
  std::vector<std::vector<int>> update;      // [tower][bucket]: the last apply's op
  std::vector<AllReduceCall> calls;
  int apply_calls = 0;
};

// N simulated devices; tower i's compute and comm streams on device i. What queued work
// touches is declared before the runtime, and the streams last, so work never outlives it.
struct Towers {
  explicit Towers(const Layout& layout)
      : n(layout.towers),
        buckets(buckets_of(layout)),
        grads(n, std::vector<float>(kTotal, kPoison)),
        schedule(2 * n) {
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
    for (int i = 0; i < n; ++i) {  // stream ids in the Schedule: compute i, comm n + i
      compute.push_back(
          std::make_unique<LoggedStream>(runtime->device(i).create_stream(), schedule, i));
      compute.back()->set_tower(i);
      comm.push_back(
          std::make_unique<LoggedStream>(runtime->device(i).create_stream(), schedule, n + i));
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
  // The stream's index among the towers' comm (or compute) streams, or -1.
  static int index_in(const std::vector<std::unique_ptr<LoggedStream>>& streams,
                      const Stream* stream) {
    for (std::size_t i = 0; i < streams.size(); ++i) {
      if (streams[i].get() == stream) return static_cast<int>(i);
    }
    return -1;
  }

  // Enqueues the backward pass of one step on every compute stream (behind `hold`, when
  // given), then calls the student's overlap_buckets. Returns the step's index.
  int run_step(const std::shared_ptr<Gate>& hold = nullptr) {
    const int s = static_cast<int>(steps.size());
    steps.push_back(
        std::make_unique<StepData>(n, 800 + 31 * s + 7 * n + buckets.size(), buckets.size()));
    StepData& step = *steps.back();
    for (int i = 0; i < n; ++i) {
      LoggedStream& stream = *compute[i];
      if (hold) stream.launch_op("hold", [hold] { hold->wait(); });
      for (int k = 0; k < kLayers; ++k) {
        step.backward[i][k] = stream.launch_op("backward", [this, &step, i, k] {
          const std::size_t offset = layer_offset(k);
          for (std::size_t j = offset; j < offset + kLayerSizes[k]; ++j) {
            grads[i][j] = step.data.towers[i][j];
          }
        });
        stream.record(*layer_ready[i][k]);
      }
    }
    try {
      overlap_buckets(towers, buckets, allreduce_for(step), apply_for(step));
    } catch (const NotImplemented& e) {
      std::printf("note: overlap_buckets is unfinished: %s\n", e.what());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "expected overlap_buckets to return, got an exception: " << e.what()
                    << "; hint: it only enqueues; nothing in it should throw";
    }
    return s;
  }

  // The all-reduce as NCCL runs it: each tower's part on that tower's own stream, which
  // reads that tower's gradients (send), then, once every tower has sent (the streams wait
  // for each other's events), writes the mean into that tower's part (receive).
  AllReduce allreduce_for(StepData& step) {
    return [this, &step](std::span<float* const> parts, std::size_t count,
                         std::span<Stream* const> streams) {
      const auto towers_n = static_cast<std::size_t>(n);
      if (parts.size() != towers_n || streams.size() != towers_n) {
        ADD_FAILURE() << "expected allreduce to be given one part and one stream per tower ("
                      << n << "), got " << parts.size() << " parts and " << streams.size()
                      << " streams; hint: one call per bucket covers every tower";
        return;
      }
      AllReduceCall call;
      call.count = count;
      std::vector<LoggedStream*> on(n);
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
        if (index_in(comm, streams[i]) == i) {
          on[i] = comm[i].get();
        } else if (index_in(compute, streams[i]) == i) {
          on[i] = compute[i].get();  // runs, but not where it overlaps: a failure line later
          call.on_comm_streams = false;
        } else {
          ADD_FAILURE() << "expected stream " << i << " of the all-reduce to be tower " << i
                        << "'s comm stream, got a stream that is not tower " << i << "'s; hint: "
                        << "pass every tower's comm stream, in tower order";
          return;
        }
      }
      call.bucket = bucket_at(call.offset, count);
      auto sent = std::make_shared<std::vector<std::vector<float>>>(n);
      const std::size_t offset = call.offset;
      std::vector<Event*> all_sent;
      for (int i = 0; i < n; ++i) {
        call.send.push_back(on[i]->launch_op("allreduce send", [this, sent, i, offset, count] {
          const float* part = grads[i].data() + offset;
          (*sent)[i].assign(part, part + count);
        }));
        owned_events.push_back(on[i]->device().create_event());
        all_sent.push_back(owned_events.back().get());
        on[i]->record(*all_sent.back());
      }
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          if (j != i) on[i]->wait(*all_sent[j]);
        }
        auto receive = [this, &step, sent, i, offset, count] {
          for (std::size_t j = 0; j < count; ++j) {
            float sum = 0;
            for (int t = 0; t < n; ++t) sum += (*sent)[t][j];
            grads[i][offset + j] = sum / static_cast<float>(n);
            ++step.reductions[static_cast<std::size_t>(i) * kTotal + offset + j];
          }
          ++allreduce_runs;
        };
        call.receive.push_back(on[i]->launch_op("allreduce receive", receive));
      }
      step.calls.push_back(call);
    };
  }

  ApplyBucket apply_for(StepData& step) {
    return [this, &step](int tower, int bucket) {
      if (tower < 0 || tower >= n || bucket < 0 || bucket >= static_cast<int>(buckets.size())) {
        ADD_FAILURE() << "expected apply(tower, bucket) with tower < " << n << " and bucket < "
                      << buckets.size() << ", got apply(" << tower << ", " << bucket << ")";
        return;
      }
      ++step.apply_calls;
      step.update[tower][bucket] = compute[tower]->launch_op("apply", [this, &step, tower, bucket] {
        const GradientBucket& range = buckets[bucket];
        for (std::size_t j = range.offset; j < range.offset + range.count; ++j) {
          step.applied[tower][j] = grads[tower][j];
        }
        ++apply_runs;
      });
    };
  }

  void synchronize_all() {
    for (auto& s : compute) s->finish();
    for (auto& s : comm) s->finish();
  }

  // Fails (and returns false) unless step s called allreduce once per bucket, in order,
  // and apply once per tower and bucket: the other checks look at those calls.
  bool expect_every_call(int s) const {
    const StepData& step = *steps[s];
    const int applies = n * static_cast<int>(buckets.size());
    if (step.calls.size() != buckets.size()) {
      ADD_FAILURE() << "step " << s << ": expected one all-reduce per bucket (" << buckets.size()
                    << "), got " << step.calls.size() << "; hint: call allreduce once per bucket, "
                    << "for all towers at once, and for every bucket including the last";
      return false;
    }
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      if (step.calls[b].bucket != static_cast<int>(b)) {
        ADD_FAILURE() << "step " << s << ": expected all-reduce " << b << " over bucket " << b
                      << " (elements " << buckets[b].offset << ".."
                      << buckets[b].offset + buckets[b].count << "), got "
                      << step.calls[b].offset << ".." << step.calls[b].offset + step.calls[b].count
                      << "; hint: parts are towers[i].grads + bucket.offset, count is "
                         "bucket.count, buckets in order";
        return false;
      }
    }
    if (step.apply_calls != applies) {
      ADD_FAILURE() << "step " << s << ": expected apply(i, b) once for every tower and bucket ("
                    << applies << "), got " << step.apply_calls << " calls";
      return false;
    }
    for (int i = 0; i < n; ++i) {
      for (std::size_t b = 0; b < buckets.size(); ++b) {
        if (step.update[i][b] >= 0) continue;
        ADD_FAILURE() << "step " << s << ": expected apply(" << i << ", " << b << "), got no "
                      << "such call; hint: for each tower i and bucket b, apply(i, b) once";
        return false;
      }
    }
    return true;
  }

  // Every tower's part of bucket b's all-reduce runs after that tower's layers of bucket b
  // are written, in every timing: on tower i's stream, after a wait for tower i's event.
  void expect_allreduces_wait_for_their_layers(int s) const {
    const StepData& step = *steps[s];
    for (const AllReduceCall& call : step.calls) {
      for (int i = 0; i < n; ++i) {
        for (int k = 0; k < kLayers; ++k) {
          const std::size_t first = layer_offset(k), end = first + kLayerSizes[k];
          if (first >= call.offset + call.count || end <= call.offset) continue;
          if (schedule.ordered(step.backward[i][k], call.send[i])) continue;
          ADD_FAILURE() << "step " << s << ": expected tower " << i << "'s part of bucket "
                        << call.bucket << "'s all-reduce to run after tower " << i << "'s layer "
                        << k << " is written, got a schedule in which it can run first (no wait "
                        << "orders it after that layer on tower " << i << "'s comm stream); "
                        << "hint: every tower's comm stream waits for its OWN "
                        << "layer_ready[buckets[b].last_layer] (the layer that completes the "
                        << "bucket; b is not a layer index), before the all-reduce";
          return;
        }
      }
    }
  }

  // No tower's part of a bucket's all-reduce waits for a layer after the bucket's last.
  void expect_allreduces_overlap_the_backward_pass(int s) const {
    const StepData& step = *steps[s];
    for (const AllReduceCall& call : step.calls) {
      if (call.bucket < 0) continue;
      const int next = buckets[call.bucket].last_layer + 1;
      if (next >= kLayers) continue;
      for (int i = 0; i < n; ++i) {
        if (!schedule.ordered(step.backward[i][next], call.send[i])) continue;
        ADD_FAILURE() << "step " << s << ": expected bucket " << call.bucket << "'s all-reduce "
                      << "to run while tower " << i << "'s backward pass goes on, got it ordered "
                      << "after layer " << next << " (a later layer than the bucket's last, "
                      << buckets[call.bucket].last_layer << "); hint: wait for the event of "
                      << "the bucket's last layer, not for the whole backward pass, and "
                      << "all-reduce on the comm streams, not the compute streams";
        return;
      }
    }
  }

  // Every update of bucket b on tower i runs after bucket b's mean is in tower i's part.
  void expect_updates_wait_for_their_mean(int s) const {
    const StepData& step = *steps[s];
    for (const AllReduceCall& call : step.calls) {
      if (call.bucket < 0) continue;
      for (int i = 0; i < n; ++i) {
        const int update = step.update[i][call.bucket];
        if (update >= 0 && schedule.ordered(call.receive[i], update)) continue;
        ADD_FAILURE() << "step " << s << ": expected tower " << i << "'s update of bucket "
                      << call.bucket << " to run after the bucket's mean is in tower " << i
                      << "'s gradients, got a schedule in which it can run first; hint: record "
                      << "bucket_reduced[b] on each comm stream after bucket b's all-reduce, "
                      << "and make the tower's own compute stream (not the comm stream) wait for "
                      << "its own bucket_reduced[b] before apply(i, b)";
        return;
      }
    }
  }

  // Tower i's update of bucket 0 does not wait for the last bucket's all-reduce.
  void expect_first_update_overlaps_the_last_allreduce(int s) const {
    const StepData& step = *steps[s];
    const AllReduceCall& last = step.calls.back();
    for (int i = 0; i < n; ++i) {
      if (!schedule.ordered(last.receive[i], step.update[i][0])) continue;
      ADD_FAILURE() << "step " << s << ": expected tower " << i << "'s update of bucket 0 to "
                    << "run while the last bucket is all-reduced, got it ordered after the last "
                    << "bucket's all-reduce; hint: before apply(i, b) wait for bucket b's "
                    << "bucket_reduced event only, not for the last bucket's";
      return;
    }
  }

  // One failure line if the optimizer of some tower read anything but the exact mean.
  void expect_optimizer_read_the_mean(int s, const std::string& hint) const {
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
  Schedule schedule;
  std::atomic<int> allreduce_runs{0}, apply_runs{0};
  std::unique_ptr<Runtime> runtime;
  std::vector<std::unique_ptr<Event>> owned_events;
  std::vector<std::vector<Event*>> layer_ready, bucket_reduced;  // [tower][layer|bucket]
  std::vector<std::unique_ptr<LoggedStream>> compute, comm;
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
  ASSERT_TRUE(towers.expect_every_call(0));
  const StepData& step = *towers.steps[0];
  for (std::size_t b = 0; b < towers.buckets.size(); ++b) {
    EXPECT_TRUE(step.calls[b].on_comm_streams)
        << "expected all-reduce " << b << " on the towers' comm streams, got the compute "
           "streams; hint: pass every tower's comm stream, in tower order, not the compute "
           "streams";
  }
  for (int i = 0; i < towers.n; ++i) {
    for (std::size_t j = 0; j < kTotal; ++j) {
      const int times = step.reductions[static_cast<std::size_t>(i) * kTotal + j].load();
      ASSERT_EQ(times, 1) << "expected every gradient element of every tower averaged exactly "
                          << "once per step, got element " << j << " of tower " << i
                          << " (bucket " << towers.bucket_of_element(j) << ") averaged " << times
                          << " times; hint: one all-reduce per bucket, not one per tower, and "
                             "no bucket left out";
    }
  }
}

TEST_P(Buckets, AllReduceWaitsForTheLayersOfItsBucketOnEveryTower) {
  // Checked on the schedule the calls make, for every tower's part: with NCCL each
  // device's part runs on its own stream and sends that device's gradients, so a tower
  // whose comm stream does not wait for its own layer sends gradients not yet written.
  Towers towers(GetParam());
  towers.run_step();
  towers.synchronize_all();
  ASSERT_TRUE(towers.expect_every_call(0));
  towers.expect_allreduces_wait_for_their_layers(0);
}

TEST_P(Buckets, OptimizerReadsEachBucketOnlyAfterItsAllReduce) {
  Towers towers(GetParam());
  towers.run_step();
  towers.synchronize_all();
  ASSERT_TRUE(towers.expect_every_call(0));
  towers.expect_updates_wait_for_their_mean(0);
  towers.expect_optimizer_read_the_mean(
      0, "record bucket_reduced[b] on each comm stream after bucket b's all-reduce, and make "
         "the tower's compute stream (not the comm stream) wait for it before apply(i, b)");
}

TEST_P(Buckets, EveryCallReturnsBeforeItsWorkRuns) {
  // Three steps, each called while every backward pass so far waits behind a gate that
  // opens only when the third call has returned: a call that waits on the host for any
  // work (of its own step or of the one before) cannot return until the gate's limit.
  Towers towers(GetParam());
  auto hold = std::make_shared<Gate>(5000ms);
  for (int s = 0; s < 3; ++s) towers.run_step(hold);
  const int allreduces_run = towers.allreduce_runs.load(), applies_run = towers.apply_runs.load();
  hold->open();
  towers.synchronize_all();
  for (int s = 0; s < 3; ++s) {
    if (!towers.expect_every_call(s)) return;
  }
  EXPECT_EQ(towers.schedule.host_waits, 0)
      << "expected overlap_buckets never to wait on the host, got " << towers.schedule.host_waits
      << " Stream::synchronize() calls; hint: streams wait on events, the host never waits";
  EXPECT_EQ(allreduces_run + applies_run, 0)
      << "expected three calls of overlap_buckets to return before anything they enqueued "
      << "ran, got " << allreduces_run << " all-reduce parts and " << applies_run
      << " updates already run; hint: the host never waits in overlap_buckets: no "
      << "synchronize(), on a stream or an event, not even for the step before";
}

TEST_P(Buckets, ConsecutiveStepsEachApplyTheirOwnMeans) {
  // Three steps enqueued back to back, the host waiting only at the end, as a training
  // loop runs: the events are recorded again every step.
  Towers towers(GetParam());
  for (int s = 0; s < 3; ++s) towers.run_step();
  towers.synchronize_all();
  for (int s = 0; s < 3; ++s) {
    ASSERT_TRUE(towers.expect_every_call(s));
    towers.expect_allreduces_wait_for_their_layers(s);
    towers.expect_updates_wait_for_their_mean(s);
    towers.expect_optimizer_read_the_mean(
        s, "every step, each bucket's all-reduce waits for this step's layer event, and each "
           "update for this step's bucket_reduced event");
  }
}

class OverlappedBuckets : public ::testing::TestWithParam<Layout> {};
INSTANTIATE_TEST_SUITE_P(Layouts, OverlappedBuckets, ::testing::Values(kPerLayer, kGrouped),
                         name_of);

TEST_P(OverlappedBuckets, EachAllReduceCanRunWhileTheBackwardPassGoesOn) {
  Towers towers(GetParam());
  towers.run_step();
  towers.synchronize_all();
  ASSERT_TRUE(towers.expect_every_call(0));
  towers.expect_allreduces_overlap_the_backward_pass(0);
}

TEST_P(OverlappedBuckets, FirstBucketsUpdateCanRunWhileTheLastBucketIsAllReduced) {
  Towers towers(GetParam());
  towers.run_step();
  towers.synchronize_all();
  ASSERT_TRUE(towers.expect_every_call(0));
  towers.expect_first_update_overlaps_the_last_allreduce(0);
}

}  // namespace
}  // namespace towers::exercises
