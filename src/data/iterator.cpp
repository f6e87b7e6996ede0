// SPDX-License-Identifier: MIT
#include "data/iterator.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "base/timing.hpp"
#include "base/usage_error.hpp"
#include "data/iterator_plan.hpp"
#include "trace/span_names.hpp"
#include "trace/trace.hpp"

namespace towers::data {

TowerIterator::TowerIterator(const Dataset& data, const IteratorOptions& options, int tower,
                             Device& device, ThreadPool& pool)
    : data_(data), options_(options), tower_(tower), device_(device), pool_(pool) {
  check_sharding(data.size(), options.num_towers, options.batch_size);
  if (tower < 0 || tower >= options.num_towers) {
    throw std::out_of_range("tower " + std::to_string(tower) + " of " +
                            std::to_string(options.num_towers) + " towers");
  }
  if (options.prefetch_depth < 1) {
    throw UsageError("a prefetch depth of " + std::to_string(options.prefetch_depth) +
                     " leaves no buffer to fill. Use a prefetch depth of 1 or more.");
  }
  if (options.first_step < 0) {
    throw UsageError("an iterator cannot start at step " + std::to_string(options.first_step) +
                     ". Use 0 for a fresh run.");
  }
  if (options.steps < 0) {
    throw UsageError("an iterator cannot run " + std::to_string(options.steps) +
                     " steps. Use 0 for endless, or a positive step count.");
  }
  batches_per_epoch_ = data::batches_per_epoch(data.size(), options.num_towers, options.batch_size);
  const auto batch = static_cast<std::size_t>(options.batch_size);
  image_bytes_ = batch * kCropValues * sizeof(float);
  const std::size_t slot_bytes = image_bytes_ + batch * sizeof(std::int32_t);

  slots_.resize(static_cast<std::size_t>(options.prefetch_depth));
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    slots_[s].pinned = device.allocate_pinned(slot_bytes);
    slots_[s].device = device.allocate(slot_bytes);
    slots_[s].ready = device.create_wait_event();
    slots_[s].consumed = device.create_wait_event();
    free_.push_back(static_cast<int>(s));
  }
  copy_stream_ = device.create_stream();
  copy_stream_->set_tower(tower);  // the tower's copies show in its trace row
  producer_ = std::thread([this] { produce(); });
}

TowerIterator::~TowerIterator() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  free_cv_.notify_all();
  producer_.join();
  // The buffers are freed next, so wait, as cudaFree requires, until nothing uses them:
  // the copies, and the compute of every batch the consumer released. Their errors were
  // or will be reported where they happened (next(), the compute stream).
  try {
    copy_stream_->synchronize();
  } catch (...) {
  }
  for (Slot& slot : slots_) {
    try {
      slot.consumed->synchronize();
    } catch (...) {
    }
  }
}

int TowerIterator::take_free_slot() {
  std::unique_lock<std::mutex> lock(mutex_);
  free_cv_.wait(lock, [&] { return stopping_ || !free_.empty(); });
  if (stopping_) return -1;
  const int s = free_.front();
  free_.pop_front();
  return s;
}

void TowerIterator::produce() {
  try {
    const std::int64_t first = options_.first_step, end = first + options_.steps;
    std::uint64_t order_epoch = static_cast<std::uint64_t>(first) / batches_per_epoch_;
    std::vector<std::size_t> order = epoch_order(data_.size(), options_.seed, order_epoch);
    for (std::int64_t step = first; options_.steps == 0 || step < end; ++step) {
      const int s = take_free_slot();  // blocks while all K slots are full: the prefetch limit
      if (s < 0) return;               // the destructor is waiting
      Slot& slot = slots_[static_cast<std::size_t>(s)];
      const auto in_epoch = static_cast<std::size_t>(step) % batches_per_epoch_;
      const auto epoch = static_cast<std::uint64_t>(step) / batches_per_epoch_;
      if (epoch != order_epoch) {
        order = epoch_order(data_.size(), options_.seed, epoch);
        order_epoch = epoch;
      }
      const auto indices = shard_batch(order, options_.num_towers, tower_, options_.batch_size,
                                       in_epoch);
      slot.indices.assign(indices.begin(), indices.end());
      slot.step = step;
      slot.epoch = epoch;

      // Waits for the previous copy out of the pinned buffer before the host rewrites it.
      slot.ready->synchronize();
      fill(slot, epoch);
      // Waits (on the copy stream, not the host) for the compute that read the device
      // buffer last time; then the copy, then the marker the tower's stream will wait for.
      copy_stream_->wait(*slot.consumed);
      copy_stream_->copy(slot.device.data(), slot.pinned.data(), slot.pinned.bytes(),
                         span::kCopyInput);
      copy_stream_->record(*slot.ready);

      std::lock_guard<std::mutex> lock(mutex_);
      ready_.push_back(s);
      ready_cv_.notify_one();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  producer_done_ = true;
  ready_cv_.notify_one();
}

void TowerIterator::fill(Slot& slot, std::uint64_t epoch) {
  auto* images = slot.pinned.as<float>();
  auto* labels = reinterpret_cast<std::int32_t*>(slot.pinned.as<char>() + image_bytes_);
  const std::size_t batch = slot.indices.size();
  const std::size_t chunks = std::min<std::size_t>(static_cast<std::size_t>(pool_.size()), batch);
  Trace* trace = options_.trace;
  // Images [begin, end) of the batch per task. fill_batch seeds each example from
  // (seed, epoch, index), so the split changes nothing in the result.
  pool_.parallel_for(chunks, [&](std::size_t chunk) {
    const std::size_t begin = chunk * batch / chunks, end = (chunk + 1) * batch / chunks;
    const bool traced = trace != nullptr && trace->enabled();
    const double start_us = traced ? trace->now_us() : 0;
    const std::span<const std::size_t> indices(slot.indices.data() + begin, end - begin);
    fill_batch(data_, indices, options_.mode, options_.seed, epoch, images + begin * kCropValues,
               labels + begin);
    if (options_.transform) {
      for (std::size_t i = begin; i < end; ++i) {
        options_.transform(slot.indices[i], images + i * kCropValues);
      }
    }
    if (traced) {
      trace->add(TraceEvent{-1, -1, tower_, trace->step(),
                            options_.mode == Mode::kTrain ? "distort" : "preprocess", start_us,
                            trace->now_us()});
    }
  });
}

Batch TowerIterator::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (options_.steps != 0 && delivered_ == options_.steps && !error_) {
    throw UsageError("tower " + std::to_string(tower_) + "'s iterator was made for " +
                     std::to_string(options_.steps) + " steps and all have been taken. " +
                     "Raise IteratorOptions::steps, or use 0 for endless.");
  }
  if (held_ == options_.prefetch_depth) {
    throw UsageError("tower " + std::to_string(tower_) + " holds all " +
                     std::to_string(held_) + " prefetched batches, so next() would wait " +
                     "forever. release() each batch once its step is enqueued, or raise " +
                     "the prefetch depth.");
  }
  const auto start = base::Clock::now();
  ready_cv_.wait(lock, [&] { return !ready_.empty() || producer_done_; });
  input_wait_ms_ += base::ms_since(start);
  // Batches finished before a failure come first; then the failure, every time.
  if (ready_.empty()) std::rethrow_exception(error_);

  const int s = ready_.front();
  ready_.pop_front();
  Slot& slot = slots_[static_cast<std::size_t>(s)];
  slot.held = true;
  ++held_;
  ++delivered_;
  epoch_ = slot.epoch;
  Batch batch;
  batch.images = slot.device.as<const float>();
  batch.labels = reinterpret_cast<const std::int32_t*>(slot.device.as<const char>() + image_bytes_);
  batch.ready = slot.ready.get();
  batch.indices = slot.indices;
  batch.step = slot.step;
  batch.epoch = slot.epoch;
  batch.slot = s;
  return batch;
}

void TowerIterator::release(const Batch& batch, Stream& compute_stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto s = static_cast<std::size_t>(batch.slot);
  Slot* slot = batch.slot >= 0 && s < slots_.size() ? &slots_[s] : nullptr;
  if (slot == nullptr || !slot->held || slot->device.as<const float>() != batch.images) {
    throw std::logic_error("release(): tower " + std::to_string(tower_) +
                           "'s iterator did not hand out this batch, or already got it back");
  }
  if (&compute_stream.device() != &device_) {
    throw std::invalid_argument("release(): tower " + std::to_string(tower_) +
                                "'s batch lives on " + device_.name() + ", but the stream is on " +
                                compute_stream.device().name());
  }
  // Recorded before the slot is on the free list, so the producer's later wait on the
  // copy stream always sees this record.
  compute_stream.record(*slot->consumed);
  slot->held = false;
  --held_;
  free_.push_back(batch.slot);
  free_cv_.notify_one();
}

std::uint64_t TowerIterator::epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epoch_;
}

int TowerIterator::ready_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(ready_.size());
}

double TowerIterator::input_wait_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return input_wait_ms_;
}

InputPosition TowerIterator::position() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return position_after(options_.first_step + delivered_, data_.size(), options_.num_towers,
                        options_.batch_size, options_.seed);
}

}  // namespace towers::data
