// SPDX-License-Identifier: MIT
// Prints the ring all-reduce's real schedule, for the docs' step-by-step diagram.
//
//   docs_ring_schedule N   ->  one JSON object per line, on stdout
//
// Runs towers' own ring (make_ring_allreduce) on N simulated devices, but hands it
// streams that run each op the moment it is enqueued and note what it did: which tower's
// stream, the op's name, for a copy which tower's chunk it read, and every buffer after
// it. Running the ops in enqueue order is one of the orders the ring's events allow
// (every record of a step is enqueued before any wait of the next), so the buffers show
// exactly what the ring computes, step by step. Tower r starts with 2^r in every element,
// so each element's value names, in binary, the towers whose gradients it holds so far.
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "parallel/allreduce.hpp"
#include "runtime/runtime.hpp"

namespace {

using towers::Event;

// Every buffer the ring works on, to describe the pointers of a copy.
struct Buffers {
  std::vector<float*> tower;  // tower r's gradient buffer, `count` floats
  std::size_t count = 0;

  // "tower R chunk C" for a pointer into tower R's buffer; "receive buffer" otherwise.
  std::string describe(const void* p) const {
    for (std::size_t r = 0; r < tower.size(); ++r) {
      const float* begin = tower[r];
      if (p >= begin && p < begin + count) {
        return "\"tower\":" + std::to_string(r) +
               ",\"element\":" + std::to_string(static_cast<const float*>(p) - begin);
      }
    }
    return "\"tower\":-1";
  }

  std::string json() const {
    std::string out = "[";
    for (std::size_t r = 0; r < tower.size(); ++r) {
      out += r ? ",[" : "[";
      for (std::size_t i = 0; i < count; ++i) {
        char value[32];
        std::snprintf(value, sizeof value, "%s%g", i ? "," : "", tower[r][i]);
        out += value;
      }
      out += "]";
    }
    return out + "]";
  }
};

// A stream that runs each op at once and prints it.
class RecordingStream final : public towers::Stream {
 public:
  RecordingStream(towers::Device& device, int tower, const Buffers& buffers,
                  std::map<const Event*, int>& recorded_by)
      : device_(device), tower_index_(tower), buffers_(buffers), recorded_by_(recorded_by) {}

  towers::Device& device() override { return device_; }
  int index() const override { return 0; }
  void launch(std::string_view name, towers::HostWork host, towers::CudaWork) override {
    host();
    print(name, "launch", "");
  }
  void copy(void* dst, const void* src, std::size_t bytes, std::string_view name) override {
    std::memcpy(dst, src, bytes);
    print(name, "copy", ",\"from\":{" + buffers_.describe(src) + "},\"to\":{" +
                            buffers_.describe(dst) + "},\"elements\":" +
                            std::to_string(bytes / sizeof(float)));
  }
  void fill_zero(void* dst, std::size_t bytes, std::string_view name) override {
    std::memset(dst, 0, bytes);
    print(name, "fill", "");
  }
  void record(Event& event) override { recorded_by_[&event] = tower_index_; }
  void wait(Event& event) override {
    auto it = recorded_by_.find(&event);
    print("wait", "wait", ",\"for_tower\":" + std::to_string(it == recorded_by_.end() ? -1 : it->second));
  }
  void synchronize() override {}

 private:
  void print(std::string_view name, const char* kind, const std::string& extra) {
    std::printf("{\"tower\":%d,\"op\":\"%.*s\",\"kind\":\"%s\"%s,\"buffers\":%s}\n", tower_index_,
                static_cast<int>(name.size()), name.data(), kind, extra.c_str(),
                buffers_.json().c_str());
  }

  towers::Device& device_;
  int tower_index_;
  const Buffers& buffers_;
  std::map<const Event*, int>& recorded_by_;
};

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 4;
  if (n < 2 || n > 8) {
    std::fprintf(stderr, "usage: docs_ring_schedule N (2 <= N <= 8 towers)\n");
    return 2;
  }
  auto runtime = towers::Runtime::create({towers::BackendChoice::kHost, n});
  std::vector<int> device_of_tower;
  for (int r = 0; r < n; ++r) device_of_tower.push_back(r);
  const std::size_t count = static_cast<std::size_t>(n);  // one element per chunk
  auto ring = towers::make_ring_allreduce(*runtime, device_of_tower, count);

  Buffers buffers;
  buffers.count = count;
  std::vector<towers::Buffer> storage;
  std::map<const Event*, int> recorded_by;
  std::vector<std::unique_ptr<RecordingStream>> streams;
  std::vector<towers::Stream*> stream_ptrs;
  for (int r = 0; r < n; ++r) {
    storage.push_back(runtime->device(r).allocate(count * sizeof(float)));
    float* data = storage.back().as<float>();
    for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>(1 << r);
    buffers.tower.push_back(data);
  }
  for (int r = 0; r < n; ++r) {
    streams.push_back(std::make_unique<RecordingStream>(runtime->device(r), r, buffers, recorded_by));
    stream_ptrs.push_back(streams.back().get());
  }
  std::printf("{\"towers\":%d,\"buffers\":%s}\n", n, buffers.json().c_str());
  ring->average(buffers.tower, count, stream_ptrs);
  return 0;
}
