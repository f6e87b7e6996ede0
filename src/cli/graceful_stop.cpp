// SPDX-License-Identifier: MIT
#include "cli/graceful_stop.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace towers {
namespace {

std::atomic<int> first_signal{0};

void say(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  if (first_signal.compare_exchange_strong(expected, sig)) {
    say("\nstopping after this step (saving first); send the signal again to quit at once\n");
    return;
  }
  say("\nsecond signal: quitting at once\n");
  ::_exit(128 + sig);
}

}  // namespace

GracefulStop::GracefulStop() {
  first_signal.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a read or write in progress continues instead of failing
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

GracefulStop::~GracefulStop() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

bool GracefulStop::requested() const { return first_signal.load() != 0; }

int GracefulStop::signal() const { return first_signal.load(); }

const char* GracefulStop::signal_name() const {
  switch (first_signal.load()) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "";
  }
}

int GracefulStop::exit_status(int status) const {
  return requested() ? 128 + first_signal.load() : status;
}

}  // namespace towers
