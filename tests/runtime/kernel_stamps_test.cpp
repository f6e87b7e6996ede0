// SPDX-License-Identifier: MIT
// Kernel stamps' host side (issue 17): the ring of records, reading them back once per
// collect, and putting %globaltimer readings on the trace's axis. The "device" here is a
// vector that a fake kernel writes as the CUDA stamp_end() does; the CUDA side itself is
// checked by scripts/gpu-check.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends.hpp"
#include "runtime/backend.hpp"
#include "runtime/busy.hpp"
#include "runtime/kernel_stamps.hpp"
#include "runtime/runtime.hpp"
#include "runtime/span_resolver.hpp"
#include "trace/analysis.hpp"

namespace towers {
namespace {

// Device memory of `capacity` records, and a KernelStampBuffer that copies from it.
struct FakeDevice {
  explicit FakeDevice(std::size_t capacity)
      : records(capacity, KernelStampRecord{}),
        buffer(std::make_shared<KernelStampBuffer>(
            records.data(), capacity,
            [this](KernelStampRecord* dst, std::size_t first, std::size_t count) {
              ++copies;
              copied += count;
              for (std::size_t i = 0; i < count; ++i) dst[i] = records[first + i];
            })) {}

  // What the last block of a stamped kernel writes when it finishes.
  void run(KernelStamp stamp, unsigned long long start_ns, unsigned long long end_ns) {
    stamp.record->start_ns = start_ns;
    stamp.record->end_ns = end_ns;
    stamp.record->check = stamp_check(start_ns, end_ns, stamp.seq);
    stamp.record->seq = stamp.seq;
  }

  std::vector<KernelStampRecord> records;
  std::shared_ptr<KernelStampBuffer> buffer;
  int copies = 0;
  std::size_t copied = 0;
};

TEST(KernelStamps, ClockPutsReadingsOnTheTraceAxisAlsoBeforeTheAnchor) {
  // %globaltimer counts nanoseconds from an arbitrary origin, typically ~1.7e18.
  const StampClock clock{1'700'000'000'123'456'789ull, 5000.0};
  EXPECT_DOUBLE_EQ(clock.to_trace_us(1'700'000'000'123'456'789ull), 5000.0);
  EXPECT_DOUBLE_EQ(clock.to_trace_us(1'700'000'000'123'459'289ull), 5002.5);
  EXPECT_DOUBLE_EQ(clock.to_trace_us(1'700'000'000'123'455'789ull), 4999.0)
      << "a reading before the anchor lands before it, not 2^64 ns later";
}

TEST(KernelStamps, RecordIsReadOnlyOnceItsKernelWroteIt) {
  FakeDevice device(8);
  KernelStamp a = device.buffer->acquire();
  KernelStamp b = device.buffer->acquire();
  ASSERT_NE(a.record, nullptr);
  ASSERT_NE(b.record, nullptr);
  EXPECT_NE(a.record, b.record);
  EXPECT_NE(a.seq, b.seq);
  EXPECT_FALSE(device.buffer->read(a.seq).has_value()) << "the kernel has not run yet";
  device.run(a, 100, 250);
  auto ns = device.buffer->read(a.seq);
  ASSERT_TRUE(ns.has_value());
  EXPECT_EQ(ns->first, 100u);
  EXPECT_EQ(ns->second, 250u);
}

TEST(KernelStamps, ATornCopyOfARecordIsCopiedAgainNotBelieved) {
  // A ring of 2: launch 3 reuses launch 1's record. Its copy arrives with the new seq but
  // the old times and check word (a copy engine orders no words), as when the ring was
  // copied while launch 3 was still writing. Believed, it would give launch 1's times.
  FakeDevice device(2);
  KernelStamp first = device.buffer->acquire();
  device.run(first, 100, 200);
  ASSERT_TRUE(device.buffer->read(first.seq).has_value());
  device.buffer->release(first.seq);
  KernelStamp second = device.buffer->acquire();
  KernelStamp third = device.buffer->acquire();
  ASSERT_EQ(third.record, first.record);
  device.run(second, 300, 400);
  third.record->seq = third.seq;  // half written: the seq landed, the rest is launch 1's
  const int copies_before = device.copies;
  EXPECT_TRUE(device.buffer->read(second.seq).has_value());  // copies the torn record too
  EXPECT_FALSE(device.buffer->read(third.seq).has_value())
      << "the torn record was taken for launch 3's stamp";
  device.run(third, 500, 650);  // the launch finishes; its record is whole
  auto ns = device.buffer->read(third.seq);
  ASSERT_TRUE(ns.has_value());
  EXPECT_EQ(ns->first, 500u);
  EXPECT_EQ(ns->second, 650u);
  EXPECT_GT(device.copies, copies_before + 1) << "the torn record made the ring be copied again";
}

TEST(KernelStamps, AKernelWithinOneClockTickIsWidenedToTheTick) {
  // %globaltimer commonly changes once a microsecond: a short kernel starts and ends on
  // one reading. At zero width it would drop out of the concurrency analysis.
  FakeDevice device(4);
  const StampClock clock{1'000'000, 100.0, /*tick_ns=*/1000};
  OpKernelStamps op(device.buffer, clock);
  device.run(op.next(), 1'002'000, 1'002'000);  // one reading: shorter than a tick
  device.run(op.next(), 1'004'000, 1'007'000);  // longer: kept as read
  auto ran = op.ran_us();
  ASSERT_TRUE(ran.has_value());
  ASSERT_EQ(ran->size(), 2u);
  EXPECT_DOUBLE_EQ((*ran)[0].first, 102.0);
  EXPECT_DOUBLE_EQ((*ran)[0].second, 103.0) << "one tick wide";
  EXPECT_DOUBLE_EQ((*ran)[1].second, 107.0);
}

TEST(KernelStamps, OneCopyOfTheRingServesEveryFinishedKernel) {
  // After a step's synchronize every kernel has finished: reading all of them must copy
  // the ring once, not once per op (a device-to-host copy per op would cost a sync each).
  FakeDevice device(64);
  std::vector<KernelStamp> stamps;
  for (int i = 0; i < 10; ++i) stamps.push_back(device.buffer->acquire());
  for (int i = 0; i < 10; ++i) device.run(stamps[i], 1000 + i, 2000 + i);
  for (int i = 0; i < 10; ++i) {
    auto ns = device.buffer->read(stamps[i].seq);
    ASSERT_TRUE(ns.has_value());
    EXPECT_EQ(ns->first, 1000u + i);
  }
  EXPECT_EQ(device.copies, 1);
  EXPECT_EQ(device.copied, 10u) << "only the records in use are copied";
}

TEST(KernelStamps, FullRingLaunchesUnstampedAndReusesRecordsOnceRead) {
  FakeDevice device(4);
  std::vector<KernelStamp> stamps;
  for (int i = 0; i < 4; ++i) stamps.push_back(device.buffer->acquire());
  KernelStamp none = device.buffer->acquire();
  EXPECT_EQ(none.record, nullptr) << "every record is still owned: run unstamped";
  EXPECT_EQ(device.buffer->unstamped(), 1u);

  device.buffer->release(stamps[0].seq);
  KernelStamp reused = device.buffer->acquire();
  ASSERT_EQ(reused.record, stamps[0].record) << "the ring wraps onto the record given back";
  // The owned records now wrap around the end of the ring: seqs 2..4 at 1..3, 5 at 0.
  for (int i = 1; i < 4; ++i) device.run(stamps[i], 10 * i, 10 * i + 5);
  device.run(reused, 77, 88);
  auto ns = device.buffer->read(reused.seq);
  ASSERT_TRUE(ns.has_value());
  EXPECT_EQ(ns->first, 77u);
  ns = device.buffer->read(stamps[3].seq);
  ASSERT_TRUE(ns.has_value());
  EXPECT_EQ(ns->first, 30u);
  EXPECT_EQ(device.copies, 2) << "one wrapped range is two pieces";
}

TEST(KernelStamps, OpStampsConvertItsKernelsAndGiveTheirRecordsBack) {
  FakeDevice device(2);
  const StampClock clock{1'000'000, 100.0};
  {
    OpKernelStamps op(device.buffer, clock);
    device.run(op.next(), 1'002'000, 1'005'000);
    device.run(op.next(), 1'009'000, 1'010'000);
    EXPECT_EQ(op.next().record, nullptr) << "a ring of 2 records";
    EXPECT_TRUE(op.missed());
    auto ran = op.ran_us();
    ASSERT_TRUE(ran.has_value());
    ASSERT_EQ(ran->size(), 2u);
    EXPECT_DOUBLE_EQ((*ran)[0].first, 102.0);
    EXPECT_DOUBLE_EQ((*ran)[0].second, 105.0);
    EXPECT_DOUBLE_EQ((*ran)[1].first, 109.0);
  }
  EXPECT_NE(device.buffer->acquire().record, nullptr) << "the op gave its records back";
}

// A cuda span's events on a host stream, as its resolver sees them: the epoch and start
// events recorded, and the op's stamps taken from `device`'s ring; the test then runs (or
// does not run) the op's kernels, and resolve() records the end event, waits for it, and
// returns the span the trace resolved. The host backend has real events, so the
// resolver's code is the one a cuda run uses.
struct OneSpan {
  explicit OneSpan(FakeDevice& device) : rt(host_runtime()), stream(rt->device(0).create_stream()) {
    events.epoch = rt->device(0).create_event();
    events.start = rt->device(0).create_event();
    events.end = rt->device(0).create_event();
    stream->record(*events.epoch);
    stream->record(*events.start);
    events.stamps = std::make_shared<OpKernelStamps>(device.buffer, StampClock{5'000, 40.0});
  }

  std::vector<TraceEvent> resolve(const std::string& name) {
    stream->record(*events.end);
    stream->synchronize();
    rt->trace().add_pending(TraceEvent{0, 0, 1, 3, name, 0, 0}, resolve_when_complete(events));
    events = SpanEvents{};  // the pending span's resolver holds the last reference
    return rt->trace().take();
  }

  static std::unique_ptr<Runtime> host_runtime() {
    RuntimeOptions options;
    options.backend = BackendChoice::kHost;
    return Runtime::create(options);
  }

  std::unique_ptr<Runtime> rt;
  std::unique_ptr<Stream> stream;
  SpanEvents events;
};

TEST(KernelStamps, ResolvedSpanCarriesItsKernelsAndStreamOccupancy) {
  // The resolver of a cuda span, on host events: once the end event completed, the span
  // gets both its event times (stream occupancy) and its kernels' stamps (what ran).
  FakeDevice device(8);
  OneSpan span(device);
  device.run(span.events.stamps->next(), 7'000, 9'000);
  std::vector<TraceEvent> spans = span.resolve("relu");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_TRUE(spans[0].stamped);
  ASSERT_EQ(spans[0].ran_us.size(), 1u);
  EXPECT_DOUBLE_EQ(spans[0].ran_us[0].first, 42.0);
  EXPECT_DOUBLE_EQ(spans[0].ran_us[0].second, 44.0);
}

TEST(KernelStamps, AnOpThatLaunchedNoStampedKernelIsNotStamped) {
  // A graph replay (chapter 7) or a cuBLAS-only op takes stamps but launches none of our
  // kernels. Counted as stamped, it made the step's concurrency "from kernel stamps" with
  // no stamp in it: max_concurrent_towers=0 with concurrency_from=kernel_stamps on cuda.
  FakeDevice device(8);
  OneSpan span(device);
  std::vector<TraceEvent> spans = span.resolve("graph launch");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_FALSE(spans[0].stamped);
  EXPECT_FALSE(analyze_step(spans, 3).from_kernel_stamps);
}

// The resolver of a span whose stamps did not all come back: a launch the full ring left
// unstamped (KernelStampBuffer::unstamped()), or a record never written. Either way the span
// is not stamped and says its stamps were lost, so the analysis counts it and the program
// reports it (lost_stamp_ops) instead of silently reading less concurrency.
std::vector<TraceEvent> resolve_one_span(FakeDevice& device, bool ring_full, bool write) {
  OneSpan span(device);
  KernelStamp stamp = span.events.stamps->next();
  if (write) device.run(stamp, 7'000, 9'000);
  if (ring_full) {
    EXPECT_EQ(span.events.stamps->next().record, nullptr) << "a ring of one record";
  }
  return span.resolve("relu");
}

TEST(KernelStamps, ASpanWithALaunchTheFullRingLeftUnstampedSaysItsStampsWereLost) {
  FakeDevice device(1);
  std::vector<TraceEvent> spans = resolve_one_span(device, /*ring_full=*/true, /*write=*/true);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(device.buffer->unstamped(), 1u);
  EXPECT_FALSE(spans[0].stamped);
  EXPECT_TRUE(spans[0].stamps_lost);
  EXPECT_EQ(analyze_step(spans, 3).lost_stamp_ops, 1);
}

TEST(KernelStamps, ASpanWhoseRecordWasNeverWrittenSaysItsStampsWereLost) {
  FakeDevice device(8);
  std::vector<TraceEvent> spans = resolve_one_span(device, /*ring_full=*/false, /*write=*/false);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_FALSE(spans[0].stamped);
  EXPECT_TRUE(spans[0].stamps_lost);
}

TEST(KernelStamps, ASpanWithEveryStampReadLostNone) {
  FakeDevice device(8);
  std::vector<TraceEvent> spans = resolve_one_span(device, /*ring_full=*/false, /*write=*/true);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_TRUE(spans[0].stamped);
  EXPECT_FALSE(spans[0].stamps_lost);
  EXPECT_EQ(analyze_step(spans, 3).lost_stamp_ops, 0);
}

// On both backends (cuda where a GPU exists, as gpu-check runs it): two towers' busy
// kernels on two streams of one device ran together, and on cuda the kernels' own stamps
// say so, each as long as the kernel spun and inside its op's event span.
TOWERS_BOTH_BACKENDS_SUITE(KernelStampsBoth);

TEST_P(KernelStampsBoth, BusyKernelsOnTwoStreamsStampThatTheyRanTogether) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  constexpr double kMs = 30;
  std::vector<std::unique_ptr<Stream>> streams;
  rt->trace().set_enabled(true);
  rt->trace().set_step(0);
  for (int tower = 0; tower < 2; ++tower) {
    streams.push_back(rt->device(0).create_stream());
    streams.back()->set_tower(tower);
    busy_kernel(*streams.back(), kMs);
  }
  for (auto& stream : streams) stream->synchronize();
  std::vector<TraceEvent> spans = rt->trace().take();
  ASSERT_EQ(spans.size(), 2u);
  const StepAnalysis a = analyze_step(spans, 0);
  EXPECT_EQ(a.max_concurrent_towers, 2);
  EXPECT_EQ(a.stream_concurrent_towers, 2);
  const bool cuda = GetParam() == Backend::kCuda;
  EXPECT_EQ(a.from_kernel_stamps, cuda);
  if (!cuda) return;
  for (const TraceEvent& span : spans) {
    ASSERT_TRUE(span.stamped) << span.name;
    ASSERT_EQ(span.ran_us.size(), 1u) << "one kernel, one interval";
    const auto [from, to] = span.ran_us[0];
    EXPECT_GE(to - from, kMs * 1000 * 0.99) << "the kernel spun for " << kMs << " ms";
    // The anchor puts stamps on the events' axis to a few microseconds.
    EXPECT_GE(from, span.start_us - 50) << "a kernel cannot start before its stream reached it";
    EXPECT_LE(to, span.end_us + 50) << "nor end after its end event";
  }
}

}  // namespace
}  // namespace towers
