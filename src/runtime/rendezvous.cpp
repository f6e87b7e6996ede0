// SPDX-License-Identifier: MIT
#include "runtime/rendezvous.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "runtime/cuda_backend.hpp"

namespace towers {

struct Rendezvous::HostState {
  std::mutex mutex;
  std::condition_variable changed;
  int present = 0;      // probes running now
  int max_present = 0;  // most probes seen running at once, this round
  bool met = false;     // all were running at once, this round
  int rounds_done = 0;  // rounds closed by a reset
  int fewest = 0;       // the lowest max_present of the closed rounds
};

namespace {

// The lowest "most seen at once" over the closed rounds (`fewest`, `rounds_done` of them)
// and the current one (`current`, 0 when it has not run).
int fewest_of_rounds(int rounds_done, int fewest, int current) {
  if (rounds_done == 0) return current;
  return current > 0 ? std::min(fewest, current) : fewest;
}

}  // namespace

Rendezvous::Rendezvous(Runtime& runtime, int participants, std::chrono::milliseconds timeout)
    : backend_(runtime.backend()), participants_(participants), timeout_(timeout) {
  if (participants < 1) throw std::invalid_argument("Rendezvous needs at least one participant");
  if (backend_ == Backend::kHost) {
    host_ = std::make_shared<HostState>();
  } else {
    cuda_flags_ = allocate_cuda_shared_flags(2 * participants + 3);
  }
}

Rendezvous::~Rendezvous() = default;

void Rendezvous::enqueue(Stream& stream) {
  if (enqueued_ == participants_) {
    throw std::logic_error("Rendezvous::enqueue called more often than it has participants");
  }
  const int slot = enqueued_++;
  auto state = host_;
  const int n = participants_;
  const auto timeout = timeout_;
  int* flags = cuda_flags_.as<int>();
  stream.launch(
      "rendezvous",
      [state, n, timeout] {
        std::unique_lock<std::mutex> lock(state->mutex);
        ++state->present;
        state->max_present = std::max(state->max_present, state->present);
        if (state->present == n) state->met = true;
        state->changed.notify_all();
        state->changed.wait_for(lock, timeout, [&] { return state->met; });
        --state->present;
      },
      [flags, n, slot, timeout](const CudaLaunchContext& ctx) {
        launch_cuda_rendezvous(ctx, flags, n, slot, timeout);
      });
}

void Rendezvous::enqueue_reset(Stream& stream) {
  enqueued_ = 0;
  auto state = host_;
  const int n = participants_;
  int* flags = cuda_flags_.as<int>();
  stream.launch(
      "rendezvous reset",
      [state] {
        std::lock_guard<std::mutex> lock(state->mutex);
        if (state->max_present > 0) {  // the round that ends here ran: keep its result
          state->fewest = fewest_of_rounds(state->rounds_done, state->fewest, state->max_present);
          ++state->rounds_done;
        }
        state->present = 0;
        state->max_present = 0;
        state->met = false;
      },
      [flags, n](const CudaLaunchContext& ctx) { launch_cuda_rendezvous_reset(ctx, flags, n); });
}

bool Rendezvous::all_met() const { return max_present() == participants_; }

int Rendezvous::max_present() const {
  if (host_) {
    std::lock_guard<std::mutex> lock(host_->mutex);
    return fewest_of_rounds(host_->rounds_done, host_->fewest, host_->max_present);
  }
  // Second part of the flags: the most participants each probe saw running at once, this
  // round; after `met`, the closed rounds' lowest and how many rounds closed.
  const int* flags = cuda_flags_.as<int>();
  const int* seen = flags + participants_;
  const int current = *std::max_element(seen, seen + participants_);
  return fewest_of_rounds(flags[2 * participants_ + 2], flags[2 * participants_ + 1], current);
}

}  // namespace towers
