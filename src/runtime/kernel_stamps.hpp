// SPDX-License-Identifier: MIT
// Kernel stamps: when a towers kernel really ran, written by the kernel itself (cuda).
//
// A CUDA event completes when its stream reaches it, so an event pair around an op also
// covers the time the op's kernel sat queued behind other streams' kernels: N towers on
// one GPU always look concurrent. A stamped kernel instead reads the GPU's nanosecond
// clock (%globaltimer) when each of its blocks starts, and its last block to finish reads
// it again and writes {start, end, seq} into its record in device memory. Nothing queued
// can produce a stamp: a stamp interval is time the kernel's blocks were on the GPU.
//
// Records live in a ring in device memory, one per stamped launch. The host never waits
// for them per op: a span's resolver reads its records once its end event completed,
// from a host copy of the ring refreshed at most once per collect (KernelStampBuffer).
// The ring only hands out a record whose previous owner was read; when all are in use,
// the launch runs unstamped and is counted (unstamped()), never blocked.
//
// cuBLAS GEMMs and copies cannot be stamped (their kernels are not ours). They are left
// out of the stamp intervals rather than bracketed by stamp kernels, since a bracket's
// first stamp runs as soon as the stream reaches it, queued GEMM or not.
//
// This header includes no CUDA header: the ring's bookkeeping is tested on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace towers {

/// One stamped launch's record in device memory. Introduced in chapter 3.
struct KernelStampRecord {
  unsigned long long first_inverted;  ///< scratch: ~(earliest block start); 0 = none yet
  unsigned long long blocks_done;     ///< scratch: blocks finished so far
  unsigned long long start_ns;        ///< %globaltimer when the first block started
  unsigned long long end_ns;          ///< %globaltimer once the last block finished
  unsigned long long check;           ///< stamp_check(start_ns, end_ns, seq), before seq
  unsigned long long seq;             ///< the launch's number, written last: "this is mine"
};

/// The check word a kernel writes beside its stamp. The host copies the ring while other
/// launches may be writing their records, and a copy engine gives no order between the
/// words it reads: a record of a launch still running can arrive with its new `seq` but
/// the previous owner's times. Such a record fails this check (its `check` belongs to the
/// other `seq`), and the reader copies the ring again once the launch has finished.
/// Rotations, so that no two of the three words cancel each other.
constexpr unsigned long long stamp_check(unsigned long long start_ns, unsigned long long end_ns,
                                         unsigned long long seq) {
  const auto rotl = [](unsigned long long x, int k) { return (x << k) | (x >> (64 - k)); };
  return start_ns ^ rotl(end_ns, 21) ^ rotl(seq, 42) ^ 0x9E3779B97F4A7C15ull;
}

/// What a kernel is given: where to stamp, and the number that marks the record as its own.
/// `record == nullptr`: do not stamp (tracing off, or the ring was full).
struct KernelStamp {
  KernelStampRecord* record = nullptr;  ///< device memory
  unsigned long long seq = 0;           ///< > 0 for a stamped launch
};

/// Hands out stamps to the kernel launches of one op (CudaLaunchContext::stamps).
class KernelStampSink {
 public:
  /// A stamp for the next kernel launch; {nullptr, 0} when it must run unstamped.
  virtual KernelStamp next() = 0;

 protected:
  ~KernelStampSink() = default;
};

/// Maps one device's %globaltimer onto the trace's time axis: `anchor_ns` was read by a
/// kernel at trace time `anchor_trace_us`. Differences between stamps of one device are
/// exact (ns); the anchor itself is known to a few microseconds.
///
/// %globaltimer counts in nanoseconds but without a profiler commonly changes only about
/// once a microsecond (`tick_ns`, measured when the device is opened). A kernel shorter
/// than a tick may start and end on the same reading: zero width, and it would vanish from
/// the concurrency analysis. Its interval is widened to one tick, the most it can have
/// lasted and still read so (OpKernelStamps::ran_us).
struct StampClock {
  unsigned long long anchor_ns = 0;  ///< a %globaltimer reading
  double anchor_trace_us = 0;        ///< the trace time of that reading (Trace::now_us)
  unsigned long long tick_ns = 0;    ///< the clock's smallest change; 0: not measured
  /// The trace time of the %globaltimer reading `ns` (also before the anchor).
  double to_trace_us(unsigned long long ns) const;
};

/// The host side of one device's ring of stamp records. Thread-safe.
class KernelStampBuffer {
 public:
  /// Copies `count` records starting at ring index `first` from the device into `dst`.
  using CopyToHost =
      std::function<void(KernelStampRecord* dst, std::size_t first, std::size_t count)>;

  /// `device_records`: `capacity` records in device memory, zeroed before first use.
  KernelStampBuffer(KernelStampRecord* device_records, std::size_t capacity, CopyToHost copy);

  /// A record for the next stamped launch, or {nullptr, 0} when every record is still
  /// owned by a launch not yet read (the launch then runs unstamped).
  KernelStamp acquire();
  /// The {start_ns, end_ns} that launch `seq` wrote, or nothing when it has not written
  /// them yet. Refreshes the host copy of the ring when it does not hold `seq` yet.
  std::optional<std::pair<unsigned long long, unsigned long long>> read(unsigned long long seq);
  /// Gives launch `seq`'s record back to the ring (read or not: its span was dropped).
  void release(unsigned long long seq);

  /// Launches that ran unstamped because the ring was full.
  std::uint64_t unstamped() const;
  /// Copies of the ring made so far (one per collect when all work has finished).
  std::uint64_t refreshes() const;
  /// Records in the ring.
  std::size_t capacity() const { return capacity_; }

 private:
  std::size_t index_of(unsigned long long seq) const { return (seq - 1) % capacity_; }
  void refresh();  // mutex_ held

  KernelStampRecord* device_records_;
  std::size_t capacity_;
  CopyToHost copy_;
  mutable std::mutex mutex_;
  std::vector<KernelStampRecord> mirror_;
  unsigned long long next_seq_ = 1;
  std::set<unsigned long long> owned_;  // acquired, not yet released
  std::uint64_t unstamped_ = 0;
  std::uint64_t refreshes_ = 0;
};

/// The stamps of one traced op: a KernelStampSink for its launches, then read by the
/// op's span resolver. Gives its records back when destroyed.
class OpKernelStamps final : public KernelStampSink {
 public:
  /// Stamps from `buffer`'s ring, read back onto the trace's axis with `clock`.
  OpKernelStamps(std::shared_ptr<KernelStampBuffer> buffer, StampClock clock)
      : buffer_(std::move(buffer)), clock_(clock) {}
  ~OpKernelStamps();
  OpKernelStamps(const OpKernelStamps&) = delete;
  OpKernelStamps& operator=(const OpKernelStamps&) = delete;

  KernelStamp next() override;
  /// When the op's stamped kernels ran, in trace microseconds, each at least one clock
  /// tick wide; empty when the op launched none (cuBLAS only, copies). Call once the op's end event has completed: then nothing
  /// means a record was lost (its span was dropped and the record reused meanwhile).
  std::optional<std::vector<std::pair<double, double>>> ran_us() const;
  /// Whether a launch of this op ran unstamped (ring full): its intervals are incomplete.
  bool missed() const { return missed_; }

 private:
  std::shared_ptr<KernelStampBuffer> buffer_;
  StampClock clock_;
  std::vector<unsigned long long> seqs_;
  bool missed_ = false;
};

}  // namespace towers
