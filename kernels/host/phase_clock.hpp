// SPDX-License-Identifier: MIT
// Phase clock: where the time of a fused host op goes, for profiles.
//
// The trace sees an op as one span from start to end. A fused op (model/ops_fast_host.hpp:
// im2col, product, bias and ReLU in one op, tile by tile) hides inside that span what a
// profile most wants to know: how much was the matrix product and how much the data
// movement around it. So each run of a fused op keeps a PhaseRecord, its tiles time
// their passes with a PhaseTimer, and when the op ends the record joins the process's
// list of splits. bench_train takes that list after a traced step and divides each fused
// span among its phases in the record's proportions (bench/step_profile.hpp); records
// come in the order the op ran, as its spans do on the stream.
//
// Off by default. When off, a PhaseRecord and its timers read no clock and record
// nothing, so the ops cost what they did. Phase times are thread time: two op threads
// running tiles at once add about twice the span's wall time, which is why the profile
// uses only proportions. Thread-safe: a record's totals are atomics that every op
// thread of its op adds to, and the list has a lock.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace towers::host {

/// What a fused op spends its time on. kCount is the number of phases.
enum class Phase { kIm2col, kProduct, kBiasRelu, kCol2im, kCount };

inline constexpr int kPhaseCount = static_cast<int>(Phase::kCount);

/// A phase's name, as profiles print it: "im2col", "gemm", "bias_relu", "col2im".
const char* phase_name(Phase phase);

/// Turns the phase clock on or off for the whole process (off by default).
void set_phase_clock(bool on);

/// Whether the phase clock is on.
bool phase_clock_on();

/// One run of a fused op: its name (the op's launch name) and the thread seconds it spent
/// in each phase, by index.
struct PhaseSplit {
  std::string op;                                ///< the fused op's launch name
  std::array<double, kPhaseCount> seconds{};  ///< thread seconds per phase, by Phase's index
};

/// The splits recorded since the last call, in the order their ops ended; forgets them.
std::vector<PhaseSplit> take_phase_splits();

/// The phase times of one run of a fused op: constructed where the op starts, it adds
/// itself to the list of splits when destroyed (where the op ends), if the clock was on.
class PhaseRecord {
 public:
  /// Starts the record of one run of `op` (a static string: the op's launch name).
  explicit PhaseRecord(const char* op) : op_(op), on_(phase_clock_on()) {}
  ~PhaseRecord();
  PhaseRecord(const PhaseRecord&) = delete;
  PhaseRecord& operator=(const PhaseRecord&) = delete;

  /// Whether the clock was on when the op started (off: nothing is timed or kept).
  bool on() const { return on_; }
  /// Adds `nanoseconds` to `phase`; several threads of one op may add at once.
  void add(Phase phase, std::int64_t nanoseconds) {
    nanoseconds_[static_cast<int>(phase)].fetch_add(nanoseconds, std::memory_order_relaxed);
  }

 private:
  const char* op_;
  bool on_;
  std::array<std::atomic<std::int64_t>, kPhaseCount> nanoseconds_{};
};

/// Times consecutive phases on the calling thread: each lap(phase) adds the time since
/// the previous lap (or construction) to that phase of `record`. Reads no clock while
/// the record is off.
class PhaseTimer {
 public:
  /// Starts timing on this thread for `record` (reads the clock only when it is on).
  explicit PhaseTimer(PhaseRecord& record) : record_(record) {
    if (record_.on()) last_ = std::chrono::steady_clock::now();
  }

  /// Adds the time since the previous lap (or construction) to `phase`.
  void lap(Phase phase) {
    if (!record_.on()) return;
    const auto now = std::chrono::steady_clock::now();
    record_.add(phase, std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_).count());
    last_ = now;
  }

 private:
  PhaseRecord& record_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace towers::host
