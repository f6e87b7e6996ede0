// SPDX-License-Identifier: MIT
// Ctrl-C without losing the run: the first SIGINT or SIGTERM asks the training loop to
// stop after the step it is in (which then saves a checkpoint, the trace and the summary);
// a second one ends the process at once, as a user pressing Ctrl-C twice expects.
//
//   GracefulStop stop;                      // handlers installed
//   for (step = 0; step < steps && !stop.requested(); ++step) { ...one step... }
//   ...save, print...
//   return stop.exit_status(0);             // 130 after SIGINT, 143 after SIGTERM
//
// The handlers only store the signal number in an atomic and write a line to stderr, so
// they are async-signal-safe; any thread may receive the signal. One GracefulStop at a
// time per process; its destructor restores the default handlers. Introduced in chapter 1.
#pragma once

namespace towers {

/// First SIGINT/SIGTERM: stop after this step; second: quit at once. Introduced in chapter 1.
class GracefulStop {
 public:
  /// Installs the SIGINT and SIGTERM handlers.
  GracefulStop();
  /// Restores the default handlers.
  ~GracefulStop();
  GracefulStop(const GracefulStop&) = delete;
  GracefulStop& operator=(const GracefulStop&) = delete;

  /// True once a first SIGINT or SIGTERM has arrived.
  bool requested() const;
  /// The first signal's number, 0 when none came.
  int signal() const;
  /// "SIGINT" or "SIGTERM" for the signal that stopped the run, "" when none did.
  const char* signal_name() const;
  /// 128 + the signal after a stop (130 for SIGINT, 143 for SIGTERM, as shells report
  /// them), else `status`.
  int exit_status(int status) const;
};

}  // namespace towers
