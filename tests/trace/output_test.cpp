// SPDX-License-Identifier: MIT
// Timeline text, Chrome JSON, SVG and summary lines: what learners and tools read.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/summary.hpp"
#include "runtime/busy.hpp"
#include "runtime/runtime.hpp"
#include "trace/analysis.hpp"
#include "trace/export.hpp"
#include "trace/timeline.hpp"

#include "tower_spans.hpp"

namespace towers {
namespace {

using testing::span;

// The row of the timeline that starts with `label`.
std::string row_of(const std::string& text, const std::string& label) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find(label) != std::string::npos) return line.substr(line.find('|'));
  }
  return "";
}

TEST(Timeline, StaircaseDrawsEachTowerInItsOwnSlice) {
  std::vector<TraceEvent> events = {span(0, 0, 0, 10), span(1, 1, 10, 20)};
  std::string text = render_timeline(events, {20, ""});
  EXPECT_EQ(row_of(text, "dev0 s0"), "|0000000000..........|") << text;
  EXPECT_EQ(row_of(text, "dev1 s0"), "|..........1111111111|") << text;
}

TEST(Timeline, ConcurrentTowersShareColumns) {
  std::vector<TraceEvent> events = {span(0, 0, 0, 10), span(1, 1, 0, 10)};
  std::string text = render_timeline(events, {10, ""});
  EXPECT_EQ(row_of(text, "dev0 s0"), "|0000000000|") << text;
  EXPECT_EQ(row_of(text, "dev1 s0"), "|1111111111|") << text;
}

TEST(Timeline, GlyphsCoverManyTowers) {
  EXPECT_EQ(tower_glyph(3), '3');
  EXPECT_EQ(tower_glyph(10), 'a');
  EXPECT_EQ(tower_glyph(-1), '#');
}

TEST(ChromeTrace, HasOneSliceForEveryOpWithTowerAndStep) {
  std::vector<TraceEvent> events = {span(0, 0, 0, 1), span(1, 1, 0, 2)};
  events[1].name = "conv\"1";
  std::string json = chrome_trace_json(events);
  size_t slices = 0;
  for (size_t at = json.find("\"ph\":\"X\""); at != std::string::npos;
       at = json.find("\"ph\":\"X\"", at + 1)) {
    ++slices;
  }
  EXPECT_EQ(slices, 2u);
  EXPECT_NE(json.find("\"tower\":1"), std::string::npos);
  EXPECT_NE(json.find("conv\\\"1"), std::string::npos) << "quotes must be escaped";
  EXPECT_NE(json.find("\"name\":\"device 1\""), std::string::npos);
}

TEST(ChromeTrace, StampedKernelsGetSlicesOnATrackBesideTheirStream) {
  // cuda: the stream held the op 0-2 ms, its kernel ran 1.5-2 ms (queued before that).
  std::vector<TraceEvent> events = {span(0, 0, 0, 2)};
  events[0].ran_us = {{1500, 2000}};
  events[0].stamped = true;
  std::string json = chrome_trace_json(events);
  const std::string ran =
      "\"name\":\"op (ran)\",\"pid\":0,\"tid\":100,\"ts\":1500.000,\"dur\":500.000";
  EXPECT_NE(json.find(ran), std::string::npos) << json;
}

TEST(Svg, DrawsOneRectanglePerOp) {
  std::vector<TraceEvent> events = {span(0, 0, 0, 1), span(1, 1, 0, 2), span(1, 1, 2, 3)};
  std::string svg = timeline_svg(events, "t");
  size_t rects = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) ++rects;
  EXPECT_EQ(rects, 3u);
  EXPECT_EQ(svg.rfind("</svg>"), svg.size() - 7);
}

// One figure style: an all-reduce op is drawn in the communication colour whichever tower
// it serves, and the Chrome trace names its category, which the docs' figures colour by.
TEST(Svg, AllReduceOpsShareTheCommunicationColourAndCategory) {
  std::vector<TraceEvent> events = {span(0, 0, 0, 1), span(1, 1, 0, 2)};
  events[1].name = "ring rs 1/2";
  const std::string svg = timeline_svg(events, "t");
  const std::string json = chrome_trace_json(events);
  EXPECT_NE(svg.find("fill=\"#222222\"><title>ring rs 1/2"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("fill=\"#222222\"><title>op"), std::string::npos) << "compute is not comm";
  EXPECT_NE(json.find("\"cat\":\"all-reduce\",\"name\":\"ring rs 1/2\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"cat\":\"op\",\"name\":\"op\""), std::string::npos) << json;
}

TEST(Summary, LineRoundTripsThroughTheParser) {
  std::string line = Summary().add("mode", "sync").add("max_concurrent_towers", 1)
                         .add("step_ms", 12.3456, 1).line();
  EXPECT_EQ(line, "summary: mode=sync max_concurrent_towers=1 step_ms=12.3");
  auto parsed = parse_summaries("noise\n" + line + "\nmore noise\n");
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0]["max_concurrent_towers"], "1");
  EXPECT_THROW(Summary().add("k", "two words"), std::invalid_argument);
}

TEST(TraceRecording, HostStreamsRecordTowerStepAndNameOnlyWhenEnabled) {
  auto rt = Runtime::create({BackendChoice::kHost, 2});
  auto s0 = rt->device(0).create_stream();
  auto s1 = rt->device(1).create_stream();
  s0->set_tower(0);
  s1->set_tower(1);
  busy_kernel(*s0, 1);  // tracing is off: not recorded
  s0->synchronize();
  rt->trace().set_enabled(true);
  rt->trace().set_step(7);
  busy_kernel(*s0, 20);
  busy_kernel(*s1, 20);
  rt->synchronize();
  auto events = rt->trace().collect();
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events) {
    EXPECT_EQ(e.step, 7);
    EXPECT_EQ(e.name, "busy");
    EXPECT_EQ(e.tower, e.device);
    EXPECT_GE(e.end_us - e.start_us, 19000.0);
  }
  EXPECT_EQ(analyze_step(events, 7).max_concurrent_towers, 2);
}

}  // namespace
}  // namespace towers
