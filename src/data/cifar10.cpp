// SPDX-License-Identifier: MIT
#include "data/cifar10.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include "base/usage_error.hpp"

namespace towers::data {
namespace fs = std::filesystem;

namespace {

constexpr size_t kPlaneBytes = size_t{kImageSize} * kImageSize;

[[noreturn]] void fail(const std::string& what) {
  throw UsageError("towers: " + what + "\n  HINT: " + dataset_hint());
}

}  // namespace

std::string dataset_hint() {
  return "download cifar-10-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html, "
         "unpack it, and pass --data-dir .../cifar-10-batches-bin";
}

void Dataset::append(const Dataset& other) {
  labels.insert(labels.end(), other.labels.begin(), other.labels.end());
  images.insert(images.end(), other.images.begin(), other.images.end());
}

void planes_to_hwc(const uint8_t* planes, uint8_t* hwc) {
  // planes: [3, 32, 32]  ->  hwc: [32, 32, 3]
  for (size_t p = 0; p < kPlaneBytes; ++p)
    for (size_t c = 0; c < kChannels; ++c) hwc[p * kChannels + c] = planes[c * kPlaneBytes + p];
}

void hwc_to_planes(const uint8_t* hwc, uint8_t* planes) {
  for (size_t p = 0; p < kPlaneBytes; ++p)
    for (size_t c = 0; c < kChannels; ++c) planes[c * kPlaneBytes + p] = hwc[p * kChannels + c];
}

Dataset parse_records(std::span<const uint8_t> bytes, const std::string& source) {
  if (bytes.empty()) fail(source + " is empty; a CIFAR-10 batch holds 3073-byte records.");
  if (bytes.size() % kRecordBytes != 0) {
    const size_t truncated_at = bytes.size() / kRecordBytes * kRecordBytes;
    fail(source + " has " + std::to_string(bytes.size()) +
         " bytes, not a multiple of the 3073-byte record: the record starting at byte offset " +
         std::to_string(truncated_at) + " is truncated (the download or copy was cut short).");
  }
  const size_t n = bytes.size() / kRecordBytes;
  Dataset data;
  data.labels.resize(n);
  data.images.resize(n * kImageBytes);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* record = bytes.data() + i * kRecordBytes;
    if (record[0] >= kNumClasses) {
      fail(source + ": label " + std::to_string(record[0]) + " at byte offset " +
           std::to_string(i * kRecordBytes) + " (record " + std::to_string(i) +
           ") is not a class 0-9; the file is corrupt or not a CIFAR-10 binary batch "
           "(CIFAR-100 files have two label bytes and are not supported).");
    }
    data.labels[i] = record[0];
    planes_to_hwc(record + 1, data.image(i));
  }
  return data;
}

Dataset read_records(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    fail("cannot read " + path.string() + ": " + ec.message() + ".");  // e.g. a folder we may not enter
  }
  if (!fs::exists(status)) fail("CIFAR-10 file not found: " + path.string() + ".");
  if (fs::is_directory(status)) {
    fail(path.string() + " is a folder, not a CIFAR-10 file: --data-dir must be the folder "
         "that holds data_batch_1.bin ... test_batch.bin.");
  }
  // A named pipe would block the read until someone writes to it (forever, before the
  // first step); a device or socket has no size to check. A data file is read whole.
  if (!fs::is_regular_file(status)) {
    fail(path.string() + " is not a regular file (a named pipe, a device or a socket): a "
         "CIFAR-10 file is read whole. Put the file itself in --data-dir.");
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read " + path.string() + ": " + std::strerror(errno) + ".");
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) fail("cannot read " + path.string() + ": " + ec.message() + ".");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<size_t>(in.gcount()) != bytes.size())
    fail("cannot read all " + std::to_string(size) + " bytes of " + path.string() + ".");
  return parse_records(bytes, path.string());
}

void write_records(const fs::path& path, const Dataset& data, size_t begin, size_t count) {
  if (begin + count > data.size()) {
    throw UsageError("towers: write_records asked for examples [" + std::to_string(begin) +
                     ", " + std::to_string(begin + count) + ") of a set of " +
                     std::to_string(data.size()) + ".");
  }
  std::vector<uint8_t> bytes(count * kRecordBytes);
  for (size_t i = 0; i < count; ++i) {
    uint8_t* record = bytes.data() + i * kRecordBytes;
    record[0] = data.labels[begin + i];
    hwc_to_planes(data.image(begin + i), record + 1);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    throw UsageError("towers: cannot write " + path.string() +
                     "\n  HINT: check that its folder exists, is writable and has " +
                     std::to_string(bytes.size()) + " bytes free.");
  }
}

void write_records(const fs::path& path, const Dataset& data) {
  write_records(path, data, 0, data.size());
}

std::vector<fs::path> train_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (int i = 1; i <= kTrainFileCount; ++i)
    files.push_back(dir / ("data_batch_" + std::to_string(i) + ".bin"));
  return files;
}

fs::path test_file(const fs::path& dir) { return dir / "test_batch.bin"; }

Dataset load_train(const fs::path& dir) {
  Dataset data;
  for (const fs::path& file : train_files(dir)) data.append(read_records(file));
  return data;
}

Dataset load_test(const fs::path& dir) { return read_records(test_file(dir)); }

}  // namespace towers::data
