// SPDX-License-Identifier: MIT
#include "trace/export.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "base/usage_error.hpp"
#include "trace/analysis.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

std::string json_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string xml_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Thread id of the kernels' stamped intervals of stream s: kRanTrack + s.
constexpr int kRanTrack = 100;

// Process id in the JSON: devices keep their index, host spans get a separate one.
int pid_of(const TraceEvent& e) { return e.device < 0 ? 1000 : e.device; }

// The Chrome trace's category of a span: Perfetto can filter by it, and the docs' figures
// colour all-reduce ops by it (docs/_ext/towers_timeline.py), so what counts as
// communication is decided here, once.
const char* category(const TraceEvent& e) {
  return e.device < 0 ? "host" : span::is_collective(e.name) ? "all-reduce" : "op";
}

}  // namespace

std::string chrome_trace_json(const std::vector<TraceEvent>& events,
                              const std::string& process_label) {
  std::ostringstream out;
  out.precision(3);
  out << std::fixed << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  std::set<int> pids;
  for (const auto& e : events) pids.insert(pid_of(e));
  bool first = true;
  for (int pid : pids) {
    out << (first ? "" : ",\n") << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << pid
        << ",\"args\":{\"name\":\"" << (pid == 1000 ? std::string("host") : process_label + " " + std::to_string(pid))
        << "\"}}";
    first = false;
  }
  // (event, record number) -> where the arrows to its waits start. A flow starts inside
  // the slice that encloses it, so it starts in the middle of the last op the stream ran
  // before the record (the work the event marks); at the record itself if there is none.
  std::map<std::pair<int, int>, std::vector<Interval>> spans_of;  // (pid, stream), by end
  for (const auto& e : events) {
    if (e.is_span()) spans_of[{pid_of(e), e.stream}].push_back({e.end_us, e.start_us});
  }
  for (auto& [stream, spans] : spans_of) std::sort(spans.begin(), spans.end());
  std::map<std::pair<int, std::uint64_t>, std::pair<const TraceEvent*, double>> records;
  for (const auto& e : events) {
    if (e.kind != TraceKind::kRecord) continue;
    double from = e.start_us;
    const auto& spans = spans_of[{pid_of(e), e.stream}];
    auto after = std::upper_bound(spans.begin(), spans.end(),
                                  Interval{e.start_us, std::numeric_limits<double>::max()});
    if (after != spans.begin()) from = (std::prev(after)->first + std::prev(after)->second) / 2;
    records[{e.event_id, e.record}] = {&e, from};
  }
  int flow = 0;
  for (const auto& e : events) {
    if (!e.is_span()) {
      // A record or wait: an instant on its stream's thread, with the event in its args.
      out << (first ? "" : ",\n") << "{\"ph\":\"i\",\"s\":\"t\",\"name\":\""
          << json_escaped(e.name) << "\",\"pid\":" << pid_of(e) << ",\"tid\":"
          << std::max(e.stream, 0) << ",\"ts\":" << e.start_us << ",\"args\":{\"tower\":"
          << e.tower << ",\"step\":" << e.step << ",\"event\":" << e.event_id
          << ",\"record\":" << e.record;
      if (e.kind == TraceKind::kWait) out << ",\"waited_us\":" << e.start_us - e.waited_from_us;
      out << "}}";
      first = false;
      const auto recorded = records.find({e.event_id, e.record});
      if (e.kind == TraceKind::kWait && recorded != records.end()) {
        // A flow arrow from the record to this wait (one flow per wait: a flow has one end).
        // Its end binds to the next slice of the waiting stream: the op that waited.
        const auto& [r, from] = recorded->second;
        ++flow;
        out << ",\n{\"ph\":\"s\",\"cat\":\"event\",\"name\":\"event\",\"id\":" << flow
            << ",\"pid\":" << pid_of(*r) << ",\"tid\":" << std::max(r->stream, 0)
            << ",\"ts\":" << from << "},\n{\"ph\":\"f\",\"cat\":\"event\",\"name\":\"event\","
            << "\"id\":" << flow << ",\"pid\":" << pid_of(e) << ",\"tid\":" << std::max(e.stream, 0)
            << ",\"ts\":" << e.start_us << "}";
      }
      continue;
    }
    out << (first ? "" : ",\n") << "{\"ph\":\"X\",\"cat\":\"" << category(e)
        << "\",\"name\":\"" << json_escaped(e.name) << "\",\"pid\":" << pid_of(e) << ",\"tid\":" << std::max(e.stream, 0)
        << ",\"ts\":" << e.start_us << ",\"dur\":" << (e.end_us - e.start_us)
        << ",\"args\":{\"tower\":" << e.tower << ",\"step\":" << e.step << "}}";
    first = false;
    // cuda: when the op's own kernels ran (their stamps), on a track of their own beside
    // the stream's (tid kRanTrack + stream), so that queued time shows as the gap between.
    for (const auto& [from, to] : e.ran_us) {
      out << ",\n{\"ph\":\"X\",\"name\":\"" << json_escaped(e.name) << " (ran)\",\"pid\":"
          << pid_of(e) << ",\"tid\":" << kRanTrack + std::max(e.stream, 0) << ",\"ts\":" << from
          << ",\"dur\":" << (to - from) << ",\"args\":{\"tower\":" << e.tower
          << ",\"step\":" << e.step << "}}";
    }
  }
  out << "\n]}\n";
  return out.str();
}

std::string timeline_svg(const std::vector<TraceEvent>& all, const std::string& title) {
  std::vector<TraceEvent> events;  // the spans: record/wait markers are not drawn here
  for (const auto& e : all) {
    if (e.is_span()) events.push_back(e);
  }
  // The palette of every figure on the pages (docs/_ext/towers_timeline.py draws with the
  // same colours; ctest docs.OneFigureStyle compares them): a colour per tower, and one
  // colour for communication, whichever tower it serves, so an all-reduce reads the same
  // in every picture.
  static const char* kColors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                  "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"};
  static const char* kAllReduceColor = "#222222";
  const double kLabel = 90, kWidth = 720, kRow = 22, kTop = 28;
  std::map<std::pair<int, int>, int> row_of;
  double t0 = 0, t1 = 1;
  if (!events.empty()) {
    t0 = events.front().start_us;
    t1 = events.front().end_us;
  }
  for (const auto& e : events) {
    row_of[{e.device < 0 ? 1 << 30 : e.device, e.stream}] = 0;
    t0 = std::min(t0, e.start_us);
    t1 = std::max(t1, e.end_us);
  }
  int next = 0;
  for (auto& [key, row] : row_of) row = next++;
  const double scale = kWidth / std::max(1e-3, t1 - t0);
  const double height = kTop + kRow * next + 24;

  std::ostringstream out;
  out.precision(2);
  out << std::fixed << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLabel + kWidth + 10
      << "\" height=\"" << height << "\" font-family=\"monospace\" font-size=\"12\">\n"
      << "<text x=\"4\" y=\"16\">" << xml_escaped(title) << "</text>\n";
  for (const auto& [key, row] : row_of) {
    std::string label = key.first == (1 << 30) ? "host"
                                               : "dev" + std::to_string(key.first) + " s" +
                                                     std::to_string(key.second);
    out << "<text x=\"4\" y=\"" << kTop + kRow * row + 15 << "\">" << label << "</text>\n";
  }
  for (const auto& e : events) {
    int row = row_of[{e.device < 0 ? 1 << 30 : e.device, e.stream}];
    const char* color = e.device < 0                 ? "#bbbbbb"
                        : span::is_collective(e.name) ? kAllReduceColor
                        : e.tower < 0                ? "#555555"
                                                     : kColors[e.tower % 8];
    out << "<rect x=\"" << kLabel + (e.start_us - t0) * scale << "\" y=\"" << kTop + kRow * row + 2
        << "\" width=\"" << std::max(0.5, (e.end_us - e.start_us) * scale) << "\" height=\""
        << kRow - 4 << "\" fill=\"" << color << "\"><title>" << xml_escaped(e.name)
        << " tower " << e.tower << " step " << e.step << " "
        << (e.end_us - e.start_us) / 1000.0 << " ms</title></rect>\n";
  }
  out << "<text x=\"" << kLabel << "\" y=\"" << height - 6 << "\">0 ms</text>\n"
      << "<text x=\"" << kLabel + kWidth - 80 << "\" y=\"" << height - 6 << "\">"
      << (t1 - t0) / 1000.0 << " ms</text>\n</svg>\n";
  return out.str();
}

void write_text_file(const std::string& path, const std::string& text) {
  // Every step can fail on a full disk or a quota, the last two most of all (the data sits
  // in a buffer until then): each is checked, so "wrote" is printed only when it is true.
  auto fail = [&](const char* step) {
    throw WriteError("cannot write '" + path + "': " + step + " failed (" + std::strerror(errno) +
                     "). Check that its folder exists, is writable and has space.");
  };
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) fail("open");
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const int saved_errno = errno;
  if (!written) {
    std::fclose(file);
    errno = saved_errno;
    fail("write");
  }
  if (std::fflush(file) != 0) {
    const int flush_errno = errno;
    std::fclose(file);
    errno = flush_errno;
    fail("flush");
  }
  if (std::fclose(file) != 0) fail("close");
}

}  // namespace towers
