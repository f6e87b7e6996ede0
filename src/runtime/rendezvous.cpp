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
  int max_present = 0;  // most probes seen running at once
  bool met = false;     // all were running at once
};

Rendezvous::Rendezvous(Runtime& runtime, int participants, std::chrono::milliseconds timeout)
    : backend_(runtime.backend()), participants_(participants), timeout_(timeout) {
  if (participants < 1) throw std::invalid_argument("Rendezvous needs at least one participant");
  if (backend_ == Backend::kHost) {
    host_ = std::make_shared<HostState>();
  } else {
    cuda_flags_ = allocate_cuda_shared_flags(2 * participants + 1);
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

bool Rendezvous::all_met() const { return max_present() == participants_; }

int Rendezvous::max_present() const {
  if (host_) {
    std::lock_guard<std::mutex> lock(host_->mutex);
    return host_->max_present;
  }
  // Second half of the flags: the most participants each probe saw running at once.
  const int* seen = cuda_flags_.as<int>() + participants_;
  return *std::max_element(seen, seen + participants_);
}

}  // namespace towers
