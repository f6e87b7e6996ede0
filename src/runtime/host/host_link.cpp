// SPDX-License-Identifier: MIT
#include "runtime/host/host_link.hpp"

namespace towers {

void HostLink::add(const void* data, std::size_t bytes, int device) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  std::lock_guard<std::mutex> lock(mutex_);
  ranges_[begin] = {begin + bytes, device};
}

void HostLink::remove(const void* data) {
  std::lock_guard<std::mutex> lock(mutex_);
  ranges_.erase(reinterpret_cast<std::uintptr_t>(data));
}

int HostLink::owner(const void* address) const {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ranges_.upper_bound(a);  // first range starting after a
  if (it == ranges_.begin()) return -1;
  --it;
  return a < it->second.first ? it->second.second : -1;
}

double HostLink::copy_seconds(void* dst, const void* src, std::size_t bytes) const {
  if (!model_.limited() || bytes == 0) return 0;
  const int from = owner(src), to = owner(dst);
  if (from < 0 || to < 0 || from == to) return 0;  // not a peer copy
  return model_.seconds(bytes);
}

}  // namespace towers
