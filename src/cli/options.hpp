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
#include <exception>
#include <functional>
#include <optional>
#include <string>

#include <vector>

#include "runtime/runtime.hpp"
#include "trace/trace.hpp"

namespace towers {

/// A flag check for a whole number in [lo, hi]: "abc" and "" are "not a whole number", 7
/// outside the range is "not in [lo, hi]"; `unit_or_reason` (if any) follows the range after
/// a space, saying what is counted or what the limit is for ("[1, 64] stages").
CLI::Validator whole_number(long long lo, long long hi, const std::string& unit_or_reason = "");

/// A flag check for a finite number in [lo, hi], the one check every floating-point flag
/// uses: "abc" is "not a number"; "nan" and "inf" are "not a finite number" (NaN fails
/// every comparison, so a range check alone lets it through, and a NaN timeout cast to an
/// integer is undefined); 7 outside the range is "not in [lo, hi]", bounds written as
/// people write them (0.1, 1e+06); `unit_or_reason` (if any) follows the range after a
/// space, as whole_number's does.
CLI::Validator finite_number(double lo, double hi, const std::string& unit_or_reason = "");

/// The simulated link's bounds (runtime/link_model.hpp). A peer copy must end in a time a
/// step can wait for and a Ctrl-C can interrupt: below kMinLinkGbps one copy of the
/// model's 4.3 MB of gradients takes over a third of a second, and a step of many towers
/// minutes; above kMaxLinkGbps (20x NVLink 4) a link is no different from no model.
inline constexpr double kMinLinkGbps = 0.1;
inline constexpr double kMaxLinkGbps = 100000;
/// At most 0.1 s per copy (a link across a continent): a ring makes 2 (N-1) copies a step.
inline constexpr double kMaxLinkLatencyUs = 100000;

/// --link-gbps's check: a finite number in [kMinLinkGbps, kMaxLinkGbps], saying why. With
/// `zero_means_unlimited` (a bench's list of links) 0 passes too.
CLI::Validator link_gbps(bool zero_means_unlimited = false);
/// link_gbps(), or the word `auto` (harness/link_sizing.hpp).
CLI::Validator link_gbps_or_auto();

/// A flag check for an unsigned 64-bit number (a seed): rejects "-1", "2^64" and text
/// instead of letting them wrap around or be cut short.
CLI::Validator unsigned_64();

/// A flag check that runs check_output_file() on the value: the file's folder exists and
/// is writable. Empty values pass (the output is off).
CLI::Validator writable_file();

/// The most --devices any backend accepts: each simulated device is a worker thread per
/// stream, and no machine holds more GPUs than this.
inline constexpr int kMaxDevices = 1024;

/// Adds `--backend auto|cuda|host`, `--devices N` (1 to kMaxDevices), and the host
/// backend's simulated link `--link-gbps`, `--link-latency-us` (runtime/link_model.hpp).
void add_runtime_flags(CLI::App& app, RuntimeOptions& options);

/// Where to write trace files; empty: do not write.
struct TraceFiles {
  std::string json;  ///< --trace FILE.json (Chrome trace, opens in Perfetto)
  std::string svg;   ///< --trace-svg FILE.svg
  std::string process_label = "device";  ///< Chrome-trace process names; chapter 5: "rank"
};

/// Adds `--trace FILE.json` and `--trace-svg FILE.svg`, both checked writable() at parse
/// time, before any work.
void add_trace_flags(CLI::App& app, TraceFiles& files);

/// Writes `events` to the files named in `files` (those not empty) and says where; throws
/// WriteError naming the file when a write, flush or close fails (a full disk: exit 1).
void write_trace_files(const TraceFiles& files, const std::vector<TraceEvent>& events,
                       const std::string& title);

/// Parses the command line into `app`. Returns nothing when the program should go on, or
/// the status to exit with: 0 after printing `--help`, 2 after a flag error, which is
/// printed ("error: ..." and how to see every flag) when `report_errors`.
std::optional<int> parse_flags(CLI::App& app, int argc, char** argv, bool report_errors = true);

/// What "error: ..." says for `e`: its what(), except for std::bad_alloc (the host's
/// allocator gave up: std::vector, new), whose what() says only "std::bad_alloc", and a
/// std::system_error of EAGAIN (std::thread could not start one more thread: a simulated
/// device's stream, an iterator), whose what() says only "Resource temporarily
/// unavailable"; both get what ran out and what to do.
std::string error_text(const std::exception& e);

/// Parses the command line and runs `body`, returning the process exit status:
/// `--help` prints every flag with its default and returns 0; a flag error or a
/// UsageError thrown by `body` prints "error: ..." and returns 2; any other exception
/// prints "error: ..." and returns 1.
int run_program(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

}  // namespace towers
