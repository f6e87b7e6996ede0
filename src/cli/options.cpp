// SPDX-License-Identifier: MIT
#include "cli/options.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <sstream>
#include <system_error>

#include "cli/output_paths.hpp"
#include "trace/export.hpp"

namespace towers {

namespace {

// A check's `why` after the range, one space between: "[1, 64] stages", never "[1, 64]stages"
// (callers write a unit, "stages", or a reason, "(a day at most)", with or without the space).
std::string set_apart(const std::string& why) {
  return why.empty() || why.front() == ' ' ? why : " " + why;
}

// 0.1, 100000, 1e+06: six significant digits, as people write bounds (not 309 digits).
std::string readable(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

std::string range_text(double lo, double hi) { return "[" + readable(lo) + ", " + readable(hi) + "]"; }

}  // namespace

CLI::Validator whole_number(long long lo, long long hi, const std::string& unit_or_reason) {
  const std::string why = set_apart(unit_or_reason);
  return CLI::Validator(
      [lo, hi, why](std::string& text) -> std::string {
        long long value = 0;
        const char* end = text.data() + text.size();
        auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error == std::errc::invalid_argument || stop != end) {
          return "'" + text + "' is not a whole number";
        }
        if (error == std::errc::result_out_of_range || value < lo || value > hi) {
          return text + " is not in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]" + why;
        }
        return "";
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

CLI::Validator finite_number(double lo, double hi, const std::string& unit_or_reason) {
  const std::string why = set_apart(unit_or_reason);
  return CLI::Validator(
      [lo, hi, why](std::string& text) -> std::string {
        double value = 0;
        // from_chars takes no leading '+', which people (and strtod) write.
        const char* begin = text.data() + (text.size() > 1 && text[0] == '+' ? 1 : 0);
        const char* end = text.data() + text.size();
        auto [stop, error] = std::from_chars(begin, end, value);
        if (text.empty() || error == std::errc::invalid_argument || stop != end) {
          return "'" + text + "' is not a number";
        }
        if (error == std::errc::result_out_of_range) {  // 1e999: beyond any double
          return text + " is not in " + range_text(lo, hi) + why;
        }
        if (!std::isfinite(value)) {
          return "'" + text + "' is not a finite number: give a number in " + range_text(lo, hi) + why;
        }
        if (value < lo || value > hi) return text + " is not in " + range_text(lo, hi) + why;
        return "";
      },
      "NUMBER in " + range_text(lo, hi));
}

CLI::Validator link_gbps(bool zero_means_unlimited) {
  const std::string why =
      " (below " + readable(kMinLinkGbps) + " Gb/s one copy of the model's gradients takes over a "
      "third of a second and a step of many towers minutes; above " + readable(kMaxLinkGbps) +
      " Gb/s a link is no different from none" + (zero_means_unlimited ? "; 0: unlimited)" : ")");
  const CLI::Validator range = finite_number(kMinLinkGbps, kMaxLinkGbps, why);
  if (!zero_means_unlimited) return range;
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        double value = -1;
        auto [stop, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error == std::errc() && stop == text.data() + text.size() && value == 0) return "";
        return range(text);
      },
      "NUMBER: 0 or in " + range_text(kMinLinkGbps, kMaxLinkGbps));
}

CLI::Validator link_gbps_or_auto() {
  const CLI::Validator number = link_gbps();
  return CLI::Validator(
      [number](std::string& text) -> std::string {
        if (text == "auto") return "";
        const std::string error = number(text);
        return error.empty() ? "" : error + "; or auto (sized to this machine's compute)";
      },
      "NUMBER in " + range_text(kMinLinkGbps, kMaxLinkGbps) + " or auto");
}

CLI::Validator unsigned_64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error == std::errc::invalid_argument || stop != end) {
          return "'" + text + "' is not a whole number from 0 to 18446744073709551615";
        }
        if (error == std::errc::result_out_of_range) {
          return text + " is larger than 18446744073709551615 (2^64 - 1)";
        }
        return "";
      },
      "UINT64");
}

CLI::Validator writable_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        try {
          check_output_file(path, "");
        } catch (const UsageError& e) {
          return std::string(e.what()).substr(1);  // CLI11 puts the flag's name in front
        }
        return "";
      },
      "FILE");
}

void add_runtime_flags(CLI::App& app, RuntimeOptions& options) {
  app.add_option_function<std::string>(
         "--backend",
         [&options](const std::string& text) { options.backend = parse_backend_choice(text); },
         "auto (a GPU if there is one, else host), cuda (real GPUs) or host (simulated "
         "devices on CPU threads)")
      ->default_str("auto");
  app.add_option_function<int>(
         "--devices", [&options](int n) { options.devices = n; },
         "devices to use: host: how many to simulate; cuda: the first N GPUs")
      ->check(whole_number(1, kMaxDevices,
                           " (each simulated device runs its own threads; no machine has more GPUs)"))
      ->default_str("host: " + std::to_string(kDefaultHostDevices) + ", cuda: all GPUs");
  app.add_option_function<std::string>(
         "--link-gbps",
         [&options](const std::string& text) {
           options.link.sized_to_compute = text == "auto";
           options.link.gbps = text == "auto" ? 0 : std::stod(text);
         },
         "host: simulate a link of this many gigabits/s between devices (peer copies "
         "take latency + 8 * bytes / bandwidth; 10 GbE ~ 10, PCIe 4 ~ 256, NVLink 3 ~ "
         "4800), or auto: the bandwidth at which one all-reduce of the gradients takes as "
         "long as a tower's backward pass on this machine, measured first. Chapter 6")
      ->check(link_gbps_or_auto())
      ->default_str("unlimited");
  app.add_option("--link-latency-us", options.link.latency_us,
                 "host: microseconds added to every peer copy of the simulated link")
      ->check(finite_number(0, kMaxLinkLatencyUs,
                            " (at most " + readable(kMaxLinkLatencyUs / 1e6) +
                                " s per copy, a link across a continent: a ring makes 2 (N-1) "
                                "copies a step)"))
      ->default_str("0");
}

void add_trace_flags(CLI::App& app, TraceFiles& files) {
  app.add_option("--trace", files.json,
                 "write a Chrome-trace JSON of every op (open it at ui.perfetto.dev)")
      ->check(writable_file());
  app.add_option("--trace-svg", files.svg, "write the timeline as an SVG picture")
      ->check(writable_file());
}

void write_trace_files(const TraceFiles& files, const std::vector<TraceEvent>& events,
                       const std::string& title) {
  if (!files.json.empty()) {
    write_text_file(files.json, chrome_trace_json(events, files.process_label));
    std::printf("trace: wrote %s (open it at https://ui.perfetto.dev)\n", files.json.c_str());
  }
  if (!files.svg.empty()) {
    write_text_file(files.svg, timeline_svg(events, title));
    std::printf("trace: wrote %s\n", files.svg.c_str());
  }
}

std::optional<int> parse_flags(CLI::App& app, int argc, char** argv, bool report_errors) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    // CLI11 wraps exceptions thrown by our option callbacks; its message carries ours.
    if (report_errors) {
      std::fprintf(stderr, "error: %s\nRun %s --help to see every flag.\n", e.what(), argv[0]);
    }
    return 2;
  }
  return std::nullopt;
}

int run_program(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  try {
    if (const std::optional<int> status = parse_flags(app, argc, argv)) return *status;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", error_text(e).c_str());
    return 1;
  }
}

std::string error_text(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return "out of host memory (std::bad_alloc): this machine could not give the program the "
           "memory it asked for. Use a smaller --batch-size or fewer towers (--towers, "
           "--devices), or stop other programs that hold memory.";
  }
  // std::thread reports a refused thread (the user's limit on processes and threads,
  // ulimit -u, or the memory for its stack) as EAGAIN, and nothing else.
  const auto* refused = dynamic_cast<const std::system_error*>(&e);
  if (refused != nullptr && refused->code() == std::errc::resource_unavailable_try_again) {
    return std::string("out of threads (") + refused->what() + "): the system refused to start "
           "one more thread; each simulated device and each of its streams runs one. Use "
           "fewer --devices or towers (--towers, --towers-per-device), or raise the limit on "
           "processes and threads (ulimit -u).";
  }
  return e.what();
}

}  // namespace towers
