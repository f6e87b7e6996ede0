// SPDX-License-Identifier: MIT
#include "cli/options.hpp"

#include <cstdio>
#include <exception>

#include "trace/export.hpp"

namespace towers {

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
      ->default_str("host: " + std::to_string(kDefaultHostDevices) + ", cuda: all GPUs");
}

void add_trace_flags(CLI::App& app, TraceFiles& files) {
  app.add_option("--trace", files.json,
                 "write a Chrome-trace JSON of every op (open it at ui.perfetto.dev)");
  app.add_option("--trace-svg", files.svg, "write the timeline as an SVG picture");
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

int run_program(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  const std::string hint = "Run " + std::string(argv[0]) + " --help to see every flag.";
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    // CLI11 wraps exceptions thrown by our option callbacks; its message carries ours.
    std::fprintf(stderr, "error: %s\n%s\n", e.what(), hint.c_str());
    return 2;
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
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace towers
