// SPDX-License-Identifier: MIT
// Tests for cifar10.hpp: the binary format round-trips, and every broken file is
// reported with its name, the byte offset and where to get the real dataset.
#include "data/cifar10.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "data/rng.hpp"
#include "runtime/backend.hpp"
#include "temp_dir.hpp"

namespace towers::data {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

Dataset random_dataset(size_t n, uint64_t seed) {
  Rng rng(seed);
  Dataset data;
  for (size_t i = 0; i < n; ++i) data.labels.push_back(static_cast<uint8_t>(rng.below(10)));
  data.images.resize(n * kImageBytes);
  for (uint8_t& byte : data.images) byte = static_cast<uint8_t>(rng.below(256));
  return data;
}

// The UsageError message of `f`, or "" when it does not throw one.
template <typename F>
std::string usage_error_of(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Cifar10Reader, RoundTripPreservesLabelsAndPixels) {
  TempDir tmp;
  const Dataset written = random_dataset(25, 1);
  write_records(tmp.path() / "batch.bin", written);
  EXPECT_EQ(fs::file_size(tmp.path() / "batch.bin"), 25 * kRecordBytes);
  const Dataset read = read_records(tmp.path() / "batch.bin");
  EXPECT_EQ(read.labels, written.labels);
  EXPECT_EQ(read.images, written.images);
}

TEST(Cifar10Reader, PlanesBecomeHwc) {
  // Planes R, G, B; pixel (y, x) of plane c sits at c * 1024 + y * 32 + x.
  std::vector<uint8_t> planes(kImageBytes), hwc(kImageBytes), back(kImageBytes);
  for (size_t i = 0; i < kImageBytes; ++i) planes[i] = static_cast<uint8_t>(i * 7 + i / 1024);
  planes_to_hwc(planes.data(), hwc.data());
  for (int y : {0, 5, 31})
    for (int x : {0, 17, 31})
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(hwc[(y * 32 + x) * 3 + c], planes[c * 1024 + y * 32 + x]) << y << "," << x;
  hwc_to_planes(hwc.data(), back.data());
  EXPECT_EQ(back, planes);
}

TEST(Cifar10Reader, TruncatedFileNamesFileAndOffset) {
  TempDir tmp;
  const fs::path file = tmp.path() / "data_batch_2.bin";
  write_records(file, random_dataset(3, 2));
  fs::resize_file(file, 3 * kRecordBytes - 100);  // the third record loses its tail
  const std::string message = usage_error_of([&] { read_records(file); });
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_NE(message.find("9119 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("byte offset 6146"), std::string::npos) << message;
  EXPECT_NE(message.find("cifar-10-binary.tar.gz"), std::string::npos) << message;
}

TEST(Cifar10Reader, CorruptLabelNamesFileAndOffset) {
  TempDir tmp;
  const fs::path file = tmp.path() / "test_batch.bin";
  write_records(file, random_dataset(3, 3));
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(kRecordBytes));  // label byte of record 1
    f.put(static_cast<char>(12));
  }
  const std::string message = usage_error_of([&] { read_records(file); });
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_NE(message.find("label 12 at byte offset 3073"), std::string::npos) << message;
}

TEST(Cifar10Reader, MissingFileSaysWhereToGetTheDataset) {
  TempDir tmp;
  const std::string message = usage_error_of([&] { load_train(tmp.path()); });
  EXPECT_NE(message.find("not found"), std::string::npos) << message;
  EXPECT_NE(message.find((tmp.path() / "data_batch_1.bin").string()), std::string::npos);
  EXPECT_NE(message.find("https://www.cs.toronto.edu/~kriz/cifar.html"), std::string::npos);
  EXPECT_NE(message.find("--data-dir"), std::string::npos) << message;
}

TEST(Cifar10Reader, EmptyFileIsAnError) {
  TempDir tmp;
  std::ofstream(tmp.path() / "test_batch.bin").close();
  const std::string message = usage_error_of([&] { load_test(tmp.path()); });
  EXPECT_NE(message.find("is empty"), std::string::npos) << message;
}

TEST(Cifar10Reader, LoadTrainConcatenatesFiveFilesInOrder) {
  TempDir tmp;
  Dataset expected;
  const std::vector<fs::path> files = train_files(tmp.path());
  ASSERT_EQ(files.size(), 5u);
  EXPECT_EQ(files[4].filename(), "data_batch_5.bin");
  for (size_t f = 0; f < files.size(); ++f) {
    const Dataset part = random_dataset(2 + f, 10 + f);  // sizes differ, so order shows
    write_records(files[f], part);
    expected.append(part);
  }
  write_records(test_file(tmp.path()), random_dataset(4, 20));
  const Dataset train = load_train(tmp.path());
  EXPECT_EQ(train.labels, expected.labels);
  EXPECT_EQ(train.images, expected.images);
  EXPECT_EQ(load_test(tmp.path()).size(), 4u);
}

TEST(Cifar10Writer, RangeWritesOnlyThoseExamples) {
  TempDir tmp;
  const Dataset data = random_dataset(10, 4);
  write_records(tmp.path() / "part.bin", data, 3, 4);
  const Dataset part = read_records(tmp.path() / "part.bin");
  ASSERT_EQ(part.size(), 4u);
  EXPECT_EQ(part.labels[0], data.labels[3]);
  EXPECT_TRUE(std::equal(part.images.begin(), part.images.end(), data.image(3)));
  EXPECT_THROW(write_records(tmp.path() / "bad.bin", data, 8, 4), UsageError);
}

}  // namespace
}  // namespace towers::data
