// SPDX-License-Identifier: MIT
#include "runtime/kernel_stamps.hpp"

#include <algorithm>
#include <stdexcept>

namespace towers {

double StampClock::to_trace_us(unsigned long long ns) const {
  // The unsigned difference read as signed: a reading before the anchor comes out negative.
  const auto delta_ns = static_cast<long long>(ns - anchor_ns);
  return anchor_trace_us + static_cast<double>(delta_ns) / 1000.0;
}

KernelStampBuffer::KernelStampBuffer(KernelStampRecord* device_records, std::size_t capacity,
                                     CopyToHost copy)
    : device_records_(device_records), capacity_(capacity), copy_(std::move(copy)),
      mirror_(capacity, KernelStampRecord{}) {
  if (capacity_ == 0) throw std::invalid_argument("KernelStampBuffer: capacity must be > 0");
}

KernelStamp KernelStampBuffer::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Seqs are handed out in order, so the oldest owned one bounds the ring: a record is
  // reused only once every launch before it has given its record back.
  if (!owned_.empty() && next_seq_ - *owned_.begin() >= capacity_) {
    ++unstamped_;
    return {};
  }
  const unsigned long long seq = next_seq_++;
  owned_.insert(seq);
  return {device_records_ + index_of(seq), seq};
}

void KernelStampBuffer::refresh() {
  // The records of every owned launch: [oldest owned, next), at most one ring's worth,
  // in one piece or two where it wraps. The lock is held meanwhile (tens of us), which
  // delays only launches that want a stamp during a collect.
  if (owned_.empty()) return;
  const std::size_t count = next_seq_ - *owned_.begin();
  const std::size_t first = index_of(*owned_.begin());
  const std::size_t head = std::min(count, capacity_ - first);
  copy_(mirror_.data() + first, first, head);
  if (count > head) copy_(mirror_.data(), 0, count - head);
  ++refreshes_;
}

std::optional<std::pair<unsigned long long, unsigned long long>> KernelStampBuffer::read(
    unsigned long long seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (owned_.count(seq) == 0) return std::nullopt;
  const auto complete = [seq](const KernelStampRecord* r) {
    return r->seq == seq && r->check == stamp_check(r->start_ns, r->end_ns, seq);
  };
  const KernelStampRecord* r = &mirror_[index_of(seq)];
  if (!complete(r)) {
    // The host copy predates this launch's end, or caught its record half written (see
    // stamp_check): copy the ring again. The caller knows the launch has finished, so
    // this copy holds its final record.
    refresh();
    r = &mirror_[index_of(seq)];
    if (!complete(r)) return std::nullopt;
  }
  return std::make_pair(r->start_ns, r->end_ns);
}

void KernelStampBuffer::release(unsigned long long seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  owned_.erase(seq);
}

std::uint64_t KernelStampBuffer::unstamped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unstamped_;
}

std::uint64_t KernelStampBuffer::refreshes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refreshes_;
}

OpKernelStamps::~OpKernelStamps() {
  for (unsigned long long seq : seqs_) buffer_->release(seq);
}

KernelStamp OpKernelStamps::next() {
  KernelStamp stamp = buffer_->acquire();
  if (stamp.record == nullptr) {
    missed_ = true;
  } else {
    seqs_.push_back(stamp.seq);
  }
  return stamp;
}

std::optional<std::vector<std::pair<double, double>>> OpKernelStamps::ran_us() const {
  std::vector<std::pair<double, double>> intervals;
  for (unsigned long long seq : seqs_) {
    auto ns = buffer_->read(seq);
    if (!ns) return std::nullopt;
    const unsigned long long end_ns = std::max(ns->second, ns->first + clock_.tick_ns);
    intervals.emplace_back(clock_.to_trace_us(ns->first), clock_.to_trace_us(end_ns));
  }
  return intervals;
}

}  // namespace towers
