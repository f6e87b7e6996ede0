// SPDX-License-Identifier: MIT
// Command-line plumbing shared by every program: the common flags, and one way to turn
// mistakes into a one-line message and exit status 2.
//
//   int main(int argc, char** argv) {
//     CLI::App app{"what this program shows"};
//     towers::RuntimeOptions runtime_options;
//     towers::add_runtime_flags(app, runtime_options);
//     return towers::run_program(app, argc, argv, [&] { ...; return 0; });
//   }
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include <vector>

#include "runtime/runtime.hpp"
#include "trace/trace.hpp"

namespace towers {

/// Adds `--backend auto|cuda|host` and `--devices N`.
void add_runtime_flags(CLI::App& app, RuntimeOptions& options);

/// Where to write trace files; empty: do not write.
struct TraceFiles {
  std::string json;  ///< --trace FILE.json (Chrome trace, opens in Perfetto)
  std::string svg;   ///< --trace-svg FILE.svg
  std::string process_label = "device";  ///< Chrome-trace process names; chapter 5: "rank"
};

/// Adds `--trace FILE.json` and `--trace-svg FILE.svg`.
void add_trace_flags(CLI::App& app, TraceFiles& files);

/// Writes `events` to the files named in `files` (those not empty) and says where.
void write_trace_files(const TraceFiles& files, const std::vector<TraceEvent>& events,
                       const std::string& title);

/// Parses the command line and runs `body`, returning the process exit status:
/// `--help` prints every flag with its default and returns 0; a flag error or a
/// UsageError thrown by `body` prints "error: ..." and returns 2; any other exception
/// prints "error: ..." and returns 1.
int run_program(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

}  // namespace towers
