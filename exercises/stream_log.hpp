// SPDX-License-Identifier: MIT
// What the graders of stream schedules share: streams that write down every call the
// student's code makes on them, and what those calls guarantee about the order of the work.
//
// A grader hands the student LoggedStreams instead of the runtime's streams. Each call is
// passed on (the work really runs, each stream on its own thread) and written into a
// Schedule, which keeps a vector clock per op: clock[s] of an op is how many ops of stream
// s are guaranteed to have run before it, by stream order (an op runs after everything
// enqueued before it on its stream) and by events (a wait makes later work run after
// everything before the event's most recent record, as cudaStreamWaitEvent). Op a surely
// runs before op b exactly when a.clock[a.stream] <= b.clock[a.stream]. When it does not,
// some timing of the threads runs b first: a missing wait fails on every run, on a quiet
// or a loaded machine, not only when the threads happen to race. (The same idea as a race
// detector's happens-before relation, for the ops of a step instead of memory accesses.)
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/event.hpp"
#include "runtime/stream.hpp"

namespace towers::exercises {

// The ops the host enqueued on streams 0..streams-1, in call order, each with its clock.
// Used from the one host thread that enqueues.
class Schedule {
 public:
  explicit Schedule(int streams)
      : clocks_(streams, std::vector<int>(streams, 0)), host_(streams, 0) {}

  int launch(int stream) {
    join(clocks_[stream], host_);
    ++clocks_[stream][stream];
    ops_.push_back(Op{stream, clocks_[stream]});
    return static_cast<int>(ops_.size()) - 1;
  }
  void record(int stream, const Event* event) {
    join(clocks_[stream], host_);
    recorded_[event] = clocks_[stream];
  }
  void wait(int stream, const Event* event) {
    join(clocks_[stream], host_);
    auto it = recorded_.find(event);
    if (it == recorded_.end()) return;  // never recorded: nothing to wait for, as in CUDA
    join(clocks_[stream], it->second);
  }
  // The host waited for `stream`: what it enqueued so far runs before anything enqueued
  // later, on any stream (a wait on the host, which the graders count as a mistake of its
  // own, not as a missing wait).
  void synchronize(int stream) {
    join(host_, clocks_[stream]);
    ++host_waits;
  }
  // Does op `before` surely run before op `after`?
  bool ordered(int before, int after) const {
    const Op& a = ops_[before];
    return a.clock[a.stream] <= ops_[after].clock[a.stream];
  }
  int host_waits = 0;  // Stream::synchronize() calls on the streams handed out

 private:
  struct Op {
    int stream;
    std::vector<int> clock;
  };
  static void join(std::vector<int>& clock, const std::vector<int>& other) {
    for (std::size_t s = 0; s < clock.size(); ++s) clock[s] = std::max(clock[s], other[s]);
  }
  std::vector<std::vector<int>> clocks_;  // [stream]: the clock of its next op
  std::vector<int> host_;                 // what the host has waited for
  std::vector<Op> ops_;
  std::map<const Event*, std::vector<int>> recorded_;
};

// A stream as the student gets it: every call goes to the runtime's stream `real` and
// into the Schedule, as stream `id`. The tower tag is copied from `real`.
class LoggedStream final : public Stream {
 public:
  LoggedStream(std::unique_ptr<Stream> real, Schedule& schedule, int id)
      : real_(std::move(real)), schedule_(schedule), id_(id) {
    set_tower(real_->tower());
  }
  Device& device() override { return real_->device(); }
  int index() const override { return real_->index(); }
  void launch(std::string_view name, HostWork host, CudaWork cuda) override {
    last_op_ = schedule_.launch(id_);
    real_->launch(name, std::move(host), std::move(cuda));
  }
  void copy(void* dst, const void* src, std::size_t bytes, std::string_view name) override {
    last_op_ = schedule_.launch(id_);
    real_->copy(dst, src, bytes, name);
  }
  void fill_zero(void* dst, std::size_t bytes, std::string_view name) override {
    last_op_ = schedule_.launch(id_);
    real_->fill_zero(dst, bytes, name);
  }
  void record(Event& event) override {
    schedule_.record(id_, &event);
    real_->record(event);
  }
  void wait(Event& event) override {
    schedule_.wait(id_, &event);
    real_->wait(event);
  }
  void synchronize() override {
    schedule_.synchronize(id_);
    real_->synchronize();
  }
  // The grader's own op: enqueued as any other, and its index in the Schedule returned.
  int launch_op(std::string_view name, HostWork host) {
    launch(name, std::move(host), nullptr);
    return last_op_;
  }
  void finish() { real_->synchronize(); }  // the grader's wait, not counted as the student's
  Stream& real() { return *real_; }

 private:
  std::unique_ptr<Stream> real_;
  Schedule& schedule_;
  int id_;
  int last_op_ = -1;
};

// A door that stream work waits behind, so that a grader can look at the schedule while
// that work has not finished. The grader opens it; as a safety it opens itself after
// `limit` and stays open, so a wrong solution that waits on the host costs one limit, never
// a hang. Held by shared_ptr, so queued work never outlives it.
class Gate {
 public:
  explicit Gate(std::chrono::milliseconds limit = std::chrono::milliseconds(5000))
      : limit_(limit) {}
  // Waits until open() or the limit; false when the limit opened it.
  bool wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (opened_cv_.wait_for(lock, limit_, [&] { return open_; })) return true;
    open_ = true;
    return false;
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

}  // namespace towers::exercises
