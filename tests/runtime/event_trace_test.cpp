// SPDX-License-Identifier: MIT
// Record and wait markers in the trace: who records an event, who waits on it, and for
// which record. The docs' chapter 3 diagram draws its arrows from exactly these pairs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends.hpp"
#include "runtime/busy.hpp"
#include "trace/analysis.hpp"
#include "trace/export.hpp"
#include "trace/span_names.hpp"
#include "trace/timeline.hpp"

namespace towers {
namespace {

TOWERS_BOTH_BACKENDS_SUITE(EventTrace);

std::vector<TraceEvent> of_kind(const std::vector<TraceEvent>& events, TraceKind kind) {
  std::vector<TraceEvent> out;
  for (const auto& e : events) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

std::vector<TraceEvent> spans_of(const std::vector<TraceEvent>& events) {
  std::vector<TraceEvent> out;
  for (const auto& e : events) {
    if (e.is_span()) out.push_back(e);
  }
  return out;
}

TEST_P(EventTrace, RecordAndWaitCarryTheSameEventAndRecord) {
  TOWERS_RUNTIME_OR_SKIP(rt, 2);
  auto producer = rt->device(0).create_stream();
  auto consumer = rt->device(1).create_stream();
  producer->set_tower(0);
  consumer->set_tower(1);
  auto ready = rt->device(0).create_event();
  auto other = rt->device(0).create_event();  // recorded, never waited on: no pair
  rt->trace().set_enabled(true);
  rt->trace().set_step(3);
  busy_kernel(*producer, 40);
  producer->record(*ready);
  producer->record(*other);
  consumer->wait(*ready);  // blocks the consumer's stream ~40 ms
  busy_kernel(*consumer, 1);
  rt->synchronize();
  rt->trace().set_step(4);
  producer->record(*ready);  // a second record: a wait now names record 2
  consumer->wait(*ready);
  rt->synchronize();
  rt->trace().set_enabled(false);
  const std::vector<TraceEvent> events = rt->trace().collect();

  const auto records = of_kind(events, TraceKind::kRecord);
  const auto waits = of_kind(events, TraceKind::kWait);
  ASSERT_EQ(records.size(), 3u);
  ASSERT_EQ(waits.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const TraceEvent& wait = waits[i];
    EXPECT_EQ(wait.name, span::kEventWait);
    EXPECT_EQ(wait.device, 1);
    EXPECT_EQ(wait.stream, consumer->index());
    EXPECT_EQ(wait.tower, 1);
    EXPECT_EQ(wait.step, 3 + i);
    EXPECT_EQ(wait.event_id, ready->trace_id());
    EXPECT_EQ(wait.record, static_cast<std::uint64_t>(i + 1));
    int matching = 0;
    for (const TraceEvent& record : records) {
      if (record.event_id != wait.event_id || record.record != wait.record) continue;
      ++matching;
      EXPECT_EQ(record.name, span::kEventRecord);
      EXPECT_EQ(record.device, 0);
      EXPECT_EQ(record.stream, producer->index());
      EXPECT_EQ(record.tower, 0);
      EXPECT_EQ(record.step, wait.step);
      EXPECT_EQ(record.start_us, record.end_us) << "a marker is an instant";
      EXPECT_LE(record.start_us, wait.start_us) << "a wait passes after its record";
    }
    EXPECT_EQ(matching, 1) << "wait " << i << " pairs with exactly one record";
    EXPECT_EQ(wait.start_us, wait.end_us);
    EXPECT_LE(wait.waited_from_us, wait.start_us);
  }
  EXPECT_NE(ready->trace_id(), other->trace_id()) << "every event has its own number";
  // The first wait held the consumer until the producer's 40 ms op had run.
  EXPECT_GE(waits[0].start_us - waits[0].waited_from_us, 20'000.0);
  // The busy op recorded after the first record: it ended before the record's instant.
  for (const TraceEvent& e : spans_of(events)) {
    if (e.device == 0 && e.step == 3) {
      EXPECT_LE(e.end_us, records[0].start_us + 1.0);
    }
  }
}

TEST_P(EventTrace, NoMarkersWhileTracingIsOff) {
  TOWERS_RUNTIME_OR_SKIP(rt, 1);
  auto a = rt->device(0).create_stream();
  auto b = rt->device(0).create_stream();
  auto e = rt->device(0).create_event();
  a->record(*e);
  b->wait(*e);
  rt->synchronize();
  EXPECT_TRUE(rt->trace().collect().empty());
}

TEST(EventTraceAnalyses, MarkersChangeNoAnalysisOfSpans) {
  // A traced step with records and waits analyses, and draws, exactly as its spans alone.
  auto rt = Runtime::create([] {
    RuntimeOptions options;
    options.backend = BackendChoice::kHost;
    options.devices = 2;
    return options;
  }());
  auto s0 = rt->device(0).create_stream();
  auto s1 = rt->device(1).create_stream();
  auto meet = rt->device(0).create_stream();
  s0->set_tower(0);
  s1->set_tower(1);
  auto done0 = rt->device(0).create_event();
  auto done1 = rt->device(1).create_event();
  rt->trace().set_enabled(true);
  rt->trace().set_step(0);
  busy_kernel(*s0, 5);
  busy_kernel(*s1, 5);
  s0->record(*done0);
  s1->record(*done1);
  meet->wait(*done0);
  meet->wait(*done1);
  busy_kernel(*meet, 1);
  rt->synchronize();
  const std::vector<TraceEvent> all = rt->trace().collect();
  const std::vector<TraceEvent> spans = spans_of(all);
  ASSERT_EQ(all.size(), spans.size() + 4) << "2 records and 2 waits";

  const StepAnalysis with = analyze_step(all, 0), without = analyze_step(spans, 0);
  EXPECT_EQ(with.device_ms, without.device_ms);
  EXPECT_EQ(with.max_concurrent_towers, without.max_concurrent_towers);
  EXPECT_EQ(with.overlap, without.overlap);
  EXPECT_EQ(with.tower_busy_ms, without.tower_busy_ms);
  EXPECT_EQ(analyze_steps(all).size(), analyze_steps(spans).size());
  EXPECT_EQ(render_timeline(all, {40, "t"}), render_timeline(spans, {40, "t"}));
  EXPECT_EQ(timeline_svg(all, "t"), timeline_svg(spans, "t"));

  // Chrome trace: spans stay slices; markers are instants, each wait with a flow arrow.
  const std::string json = chrome_trace_json(all), plain = chrome_trace_json(spans);
  auto count = [](const std::string& text, const std::string& what) {
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(json, "\"ph\":\"X\""), count(plain, "\"ph\":\"X\""));
  EXPECT_EQ(count(json, "\"ph\":\"i\""), 4);
  EXPECT_EQ(count(json, "\"ph\":\"s\""), 2);
  EXPECT_EQ(count(json, "\"ph\":\"f\""), 2);
  EXPECT_EQ(count(json, "\"event\":" + std::to_string(done1->trace_id()) + ","), 2);
}

}  // namespace
}  // namespace towers
