// SPDX-License-Identifier: MIT
// Grader of exercise 01: run_step() enqueues N towers that run at the same time and meet
// once, on the averaging stream. On simulated devices (the host backend): concurrency is
// proved by the rendezvous probe and the trace, never by timing. Each test is one point.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exercises/grader.hpp"
#include "exercises/stream_log.hpp"
#include "exercises/todo.hpp"
#include "run_step.hpp"
#include "runtime/rendezvous.hpp"
#include "runtime/runtime.hpp"
#include "trace/analysis.hpp"
#include "trace/trace.hpp"

namespace towers::exercises {
namespace {

using namespace std::chrono_literals;

// N simulated devices, tower i's stream on device i, and the meeting stream on device 0.
// The student gets LoggedStreams (exercises/stream_log.hpp): every call also goes into
// `schedule` (stream i: tower i, stream n: meet), so that what the waits guarantee is
// checked on every run, not only when the threads happen to race. Memory that tower work
// touches is declared before the runtime, so it outlives the streams, which finish their
// queued work when destroyed.
struct Towers {
  explicit Towers(int n) : grads(n), schedule(n + 1) {
    runtime = Runtime::create(RuntimeOptions{BackendChoice::kHost, n});
    runtime->trace().set_enabled(true);
    for (int i = 0; i < n; ++i) {
      auto stream = runtime->device(i).create_stream();
      stream->set_tower(i);
      streams.push_back(std::make_unique<LoggedStream>(std::move(stream), schedule, i));
      done.push_back(runtime->device(i).create_event());
      step.push_back(StepTower{streams.back().get(), done.back().get()});
    }
    // tagged with no tower
    meet = std::make_unique<LoggedStream>(runtime->device(0).create_stream(), schedule, n);
  }

  // Calls the student's run_step. An unfinished TODO (NotImplemented) is reported once,
  // as a note, so a test still judges only its own criterion; other exceptions fail.
  void run_step_with(const TowerLoss& tower_loss, const AverageGradients& average) {
    try {
      run_step(step, tower_loss, *meet, average);
    } catch (const NotImplemented& e) {
      std::printf("note: run_step is unfinished: %s\n", e.what());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "expected run_step to return, got an exception: " << e.what()
                    << "; hint: run_step only enqueues, nothing in it should throw";
    }
  }

  void synchronize_all() {
    for (auto& s : streams) s->finish();
    meet->finish();
  }

  int size() const { return static_cast<int>(streams.size()); }

  std::vector<std::vector<float>> grads;  // [towers][count]: written by tower work
  std::vector<float> average;             // [count]: written by the average on `meet`
  Schedule schedule;
  std::unique_ptr<Runtime> runtime;
  std::vector<std::unique_ptr<LoggedStream>> streams;
  std::vector<std::unique_ptr<Event>> done;
  std::unique_ptr<LoggedStream> meet;
  std::vector<StepTower> step;
};

std::string name_of(const ::testing::TestParamInfo<int>& info) {
  return "N" + std::to_string(info.param);
}

class ConcurrentTowers : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Towers, ConcurrentTowers, ::testing::Values(2, 3, 4), name_of);

TEST_P(ConcurrentTowers, AllTowersMeetInTheRendezvous) {
  Towers towers(GetParam());
  // Each probe waits up to 1 s for all N towers to be running at once.
  Rendezvous rendezvous(*towers.runtime, towers.size(), 1000ms);
  towers.run_step_with([&](int i) { rendezvous.enqueue(*towers.streams[i]); }, [](Stream&) {});
  towers.synchronize_all();
  EXPECT_TRUE(rendezvous.all_met())
      << "expected all " << towers.size() << " towers running at once, got at most "
      << rendezvous.max_present() << "; hint: the host must not wait for tower i before "
                                     "enqueueing tower i+1 (no synchronize() in the loop)";
}

// Counts the towers whose work has started; each waits until all N have (or `limit`
// passed). When run_step enqueued every tower before waiting, their spans in the trace
// overlap by construction, however late a loaded machine starts a tower's thread (a fixed
// 50 ms kernel did not always overlap under load: the reference solution lost the point);
// a run_step that waits for tower i before enqueueing i+1 leaves each tower alone for
// `limit`, and the trace shows one at a time.
class AllStarted {
 public:
  explicit AllStarted(int n, std::chrono::milliseconds limit = 5000ms) : n_(n), limit_(limit) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++started_;
    all_cv_.notify_all();
    all_cv_.wait_for(lock, limit_, [&] { return started_ >= n_; });
  }

 private:
  int n_;
  std::chrono::milliseconds limit_;
  std::mutex mutex_;
  std::condition_variable all_cv_;
  int started_ = 0;
};

TEST_P(ConcurrentTowers, TraceShowsNTowersBusyAtOnce) {
  Towers towers(GetParam());
  auto all_started = std::make_shared<AllStarted>(towers.size());
  towers.run_step_with(
      [&](int i) {
        towers.streams[i]->launch(
            "busy", [all_started] {
              all_started->arrive_and_wait();
              std::this_thread::sleep_for(5ms);  // a span with a length, after all met
            },
            nullptr);
      },
      [](Stream&) {});
  towers.synchronize_all();
  const StepAnalysis analysis = analyze_step(towers.runtime->trace().collect(), -1);
  EXPECT_EQ(analysis.max_concurrent_towers, towers.size())
      << "expected the trace to show max_concurrent_towers == " << towers.size() << ", got "
      << analysis.max_concurrent_towers << "; hint: enqueue every tower's work first, wait "
                                           "(if at all) after the loop";
}

class MeetingTowers : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Towers, MeetingTowers, ::testing::Values(1, 2, 3, 4), name_of);

// One step whose tower `slow` is the slowest: its gradients appear only after a gate that
// the average itself opens (or 50 ms pass). An average that does not wait for tower
// `slow` usually runs first, reads its zeros and opens the gate too late: a wrong mean. On
// a loaded machine it may start late enough to read the right one, so the verdict comes
// from the schedule: the average must be ordered after every tower's work by the waits
// the student enqueued (exercises/stream_log.hpp), whatever the threads' timing. A correct
// run_step waits the 50 ms and reads every tower's gradients.
// The step's tower work and average write `grads` and `average`, which outlive the streams.
struct SlowStep {
  SlowStep(int n, std::size_t count, std::uint64_t seed)
      : data(make_exact_mean_data(n, count, seed)),
        grads(n, std::vector<float>(count, 0.0f)),
        average(count, -1.0f),
        gate(std::make_shared<Gate>(50ms)) {}
  ExactMeanData data;
  std::vector<std::vector<float>> grads;  // [towers][count]
  std::vector<float> average;             // [count]
  std::shared_ptr<Gate> gate;
  int average_calls = 0;
  Stream* average_stream = nullptr;
  std::vector<int> backward_op;  // [tower]: the op writing its gradients, in the Schedule
  int average_op = -1;           // the op averaging them
};

void run_slow_step(Towers& towers, SlowStep& step, int slow) {
  const int n = towers.size();
  step.backward_op.assign(n, -1);
  towers.run_step_with(
      [&towers, &step, slow](int i) {
        if (i == slow) {
          towers.streams[i]->launch("slow tower", [gate = step.gate] { gate->wait(); }, nullptr);
        }
        step.backward_op[i] = towers.streams[i]->launch_op(
            "backward", [&step, i] { step.grads[i] = step.data.towers[i]; });
      },
      [&towers, &step, n](Stream& meet) {
        ++step.average_calls;
        step.average_stream = &meet;
        if (&meet != towers.meet.get()) return;  // a failure line says so
        step.average_op = towers.meet->launch_op("average", [&step, n] {
          for (std::size_t j = 0; j < step.average.size(); ++j) {
            float sum = 0;
            for (int t = 0; t < n; ++t) sum += step.grads[t][j];
            step.average[j] = sum / static_cast<float>(n);
          }
          step.gate->open();
        });
      });
}

void expect_exact_slow_step(Towers& towers, const SlowStep& step, int slow, const std::string& which) {
  ASSERT_EQ(step.average_calls, 1) << "expected average_gradients(meet) to be called once per "
                                      "step, got " << step.average_calls
                                   << " calls in " << which << "; hint: call it after the tower loop";
  ASSERT_EQ(step.average_stream, towers.meet.get())
      << "expected average_gradients to be given the `meet` stream, got another one; hint: "
         "call average_gradients(meet)";
  for (int i = 0; i < towers.size(); ++i) {
    ASSERT_GE(step.backward_op[i], 0) << "expected tower_loss(" << i << ") called in " << which
                                      << ", got no call; hint: call tower_loss(i) for every tower";
    ASSERT_TRUE(towers.schedule.ordered(step.backward_op[i], step.average_op))
        << "expected the average in " << which << " to run after every tower's work, got a "
        << "schedule in which it can run before tower " << i << "'s (tower " << slow
        << " the slowest); hint: before average_gradients(meet), make `meet` wait for EVERY "
           "tower's done event (not only the first or the last), recorded after that tower's "
           "work in this step";
  }
  auto bad = first_mismatch(step.average, step.data.mean);
  EXPECT_FALSE(bad) << "expected the exact mean of " << towers.size() << " towers in " << which
                    << " with tower " << slow << " the slowest, got "
                    << (bad ? describe_mismatch(step.average, step.data.mean, *bad) : "")
                    << "; hint: before average_gradients(meet), make `meet` wait for EVERY "
                       "tower's done event (not only the first or the last), recorded after "
                       "that tower's work in this step";
}

TEST_P(MeetingTowers, AverageIsTheExactMeanOfEveryTowersGradients) {
  // Every tower position in turn is the slowest, not only the first or the last.
  const int n = GetParam();
  for (int slow = 0; slow < n; ++slow) {
    Towers towers(n);
    SlowStep step(n, 257, 17 + 10 * n + slow);
    run_slow_step(towers, step, slow);
    towers.synchronize_all();
    expect_exact_slow_step(towers, step, slow, "one step");
  }
}

TEST_P(MeetingTowers, ConsecutiveStepsEachAverageTheirOwnGradients) {
  // Three steps enqueued back to back, the host waiting only at the end, as a training
  // loop runs: each step's average must wait for that step's towers (events recorded
  // again every step), and a different tower is the slowest in each.
  const int n = GetParam();
  Towers towers(n);
  std::vector<std::unique_ptr<SlowStep>> steps;
  for (int s = 0; s < 3; ++s) {
    steps.push_back(std::make_unique<SlowStep>(n, 101, 300 + 10 * n + s));
    run_slow_step(towers, *steps.back(), (n - 1 + s) % n);
  }
  towers.synchronize_all();
  for (int s = 0; s < 3; ++s) {
    expect_exact_slow_step(towers, *steps[s], (n - 1 + s) % n, "step " + std::to_string(s) + " of 3");
  }
}

TEST_P(MeetingTowers, RunStepReturnsBeforeAnyTowerFinishes) {
  // Three steps in a row while every tower's work waits behind a gate: each call must
  // return at once, also the second and third (no wait for the previous step either).
  Towers towers(GetParam());
  auto gate = std::make_shared<Gate>();
  auto finished = std::make_shared<std::atomic<int>>(0);
  std::vector<int> finished_at_return;
  for (int s = 0; s < 3; ++s) {
    towers.run_step_with(
        [&](int i) {
          towers.streams[i]->launch("tower", [gate, finished] { gate->wait(); ++*finished; }, nullptr);
        },
        [](Stream&) {});
    finished_at_return.push_back(finished->load());
  }
  gate->open();
  towers.synchronize_all();
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(finished_at_return[s], 0)
        << "expected run_step (call " << s + 1 << " of 3 in a row) to return while every tower "
        << "still runs (it only enqueues), got " << finished_at_return[s]
        << " tower steps finished first; hint: the host waits nowhere in run_step: no "
           "synchronize() of a tower, of `meet` or of the previous step; streams wait on events";
  }
}

TEST_P(MeetingTowers, EachTowerRecordsItsDoneEventAfterItsWork) {
  Towers towers(GetParam());
  auto gate = std::make_shared<Gate>();
  towers.run_step_with(
      [&](int i) { towers.streams[i]->launch("tower", [gate] { gate->wait(); }, nullptr); },
      [](Stream&) {});
  std::vector<bool> complete_while_running;
  for (auto& event : towers.done) complete_while_running.push_back(event->query());
  gate->open();
  towers.synchronize_all();
  for (int i = 0; i < towers.size(); ++i) {
    EXPECT_FALSE(complete_while_running[i])
        << "expected tower " << i << "'s done event to complete only after its work, got "
           "complete while tower " << i << " still ran; hint: towers[i].stream->record("
           "*towers[i].done) right after tower_loss(i), and do not wait for the tower on the "
           "host (an event never recorded counts as complete)";
    EXPECT_TRUE(towers.done[i]->query())
        << "expected tower " << i << "'s done event complete once its stream finished, got "
           "not complete; hint: record it on towers[i].stream, not on another stream";
  }
}

}  // namespace
}  // namespace towers::exercises
