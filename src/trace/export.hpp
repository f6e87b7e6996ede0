// SPDX-License-Identifier: MIT
// Writing a trace for other tools.
//
// Chrome-trace JSON opens in https://ui.perfetto.dev (or chrome://tracing): one process
// per device ("device 0", "host"), one thread per stream, one slice per op, with the
// tower and step in each slice's args. SVG is a static picture of the same rows, for docs.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace towers {

/// The Chrome-trace JSON text for `events` (times in microseconds). Processes are named
/// `process_label` and the device index: "device 0", or "rank 0" in chapter 5, whose
/// merged trace puts rank r's spans on device r. A span's stamped kernels (cuda, ran_us)
/// are slices named "<op> (ran)" on thread 100 + its stream. Record and wait markers are
/// instant events ("ph":"i", args: event, record, waited_us), and each wait whose record
/// is in `events` gets a flow arrow ("ph":"s" to "ph":"f") from the op its stream ran
/// before the record to the op its own stream runs after the wait.
std::string chrome_trace_json(const std::vector<TraceEvent>& events,
                              const std::string& process_label = "device");

/// An SVG picture of `events`: one row per device stream, one rectangle per op, coloured
/// by tower (record and wait markers are left out). `title` is drawn above the rows.
std::string timeline_svg(const std::vector<TraceEvent>& events, const std::string& title);

/// Writes `text` to `path`; throws WriteError naming the path when it cannot be written.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace towers
