// SPDX-License-Identifier: MIT
// CIFAR-10 binary files: reading, validating and writing them.
//
// The format (cifar-10-binary.tar.gz, folder cifar-10-batches-bin/) has no header: a file
// is a run of 3,073-byte records, each 1 label byte (0-9) and 3,072 image bytes: 1,024
// red, then 1,024 green, then 1,024 blue, every plane 32x32 row-major. Training data is
// data_batch_1.bin ... data_batch_5.bin (10,000 records each), evaluation data is
// test_batch.bin (10,000 records).
//
// A Dataset holds images already transposed to HWC ([n, 32, 32, 3]), the layout the
// tutorial's input pipeline produces and the one the distortions read. Readers check
// everything a broken download can get wrong and throw towers::UsageError naming the
// file, the byte offset and where to get the real files. All functions are reentrant;
// a Dataset is safe to read from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace towers::data {

inline constexpr int kImageSize = 32;  ///< stored images are kImageSize x kImageSize
inline constexpr int kChannels = 3;    ///< red, green, blue
inline constexpr int kNumClasses = 10;  ///< labels are 0 .. kNumClasses - 1
/// Image bytes per record: three 32x32 planes.
inline constexpr size_t kImageBytes = size_t{kImageSize} * kImageSize * kChannels;
/// Bytes per record: one label byte, then the image.
inline constexpr size_t kRecordBytes = 1 + kImageBytes;
inline constexpr int kTrainFileCount = 5;  ///< data_batch_1.bin .. data_batch_5.bin
inline constexpr size_t kRecordsPerFile = 10000;  ///< records in each file of the real set
inline constexpr size_t kTrainExamples = 50000;   ///< NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN
inline constexpr size_t kTestExamples = 10000;    ///< NUM_EXAMPLES_PER_EPOCH_FOR_EVAL

/// Labelled images in memory, images in HWC order.
struct Dataset {
  std::vector<uint8_t> labels;  ///< [size()], each in 0 .. kNumClasses - 1
  std::vector<uint8_t> images;  ///< [size(), 32, 32, 3] HWC, kImageBytes per image

  /// Number of examples.
  size_t size() const { return labels.size(); }
  /// First byte of image i (HWC), i < size().
  const uint8_t* image(size_t i) const { return images.data() + i * kImageBytes; }
  /// First byte of image i (HWC), i < size(), for writing.
  uint8_t* image(size_t i) { return images.data() + i * kImageBytes; }
  /// Appends every example of `other` after the current ones.
  void append(const Dataset& other);
};

/// Transposes one image from the file's planes (R, G, B; each 32x32) to HWC.
void planes_to_hwc(const uint8_t* planes, uint8_t* hwc);

/// Transposes one HWC image back to the file's planar order; inverse of planes_to_hwc.
void hwc_to_planes(const uint8_t* hwc, uint8_t* planes);

/// Decodes and validates records held in memory. `source` names them in errors (a path).
/// Throws UsageError when the size is not a positive multiple of kRecordBytes or a
/// label is above 9; messages give the byte offset of the bad record or label byte.
Dataset parse_records(std::span<const uint8_t> bytes, const std::string& source);

/// Reads and validates one CIFAR-10 binary file. Throws UsageError when it is missing,
/// unreadable, truncated or holds a bad label, with a hint where to get the dataset.
Dataset read_records(const std::filesystem::path& path);

/// Writes examples [begin, begin + count) of `data` as CIFAR-10 records, replacing the
/// file. Throws UsageError when the file cannot be written.
void write_records(const std::filesystem::path& path, const Dataset& data, size_t begin,
                   size_t count);

/// Writes every example of `data` as CIFAR-10 records, replacing the file.
void write_records(const std::filesystem::path& path, const Dataset& data);

/// The five training files of a data directory, in order.
std::vector<std::filesystem::path> train_files(const std::filesystem::path& dir);

/// The evaluation file of a data directory (test_batch.bin).
std::filesystem::path test_file(const std::filesystem::path& dir);

/// Reads data_batch_1.bin .. data_batch_5.bin from `dir`, in file order.
Dataset load_train(const std::filesystem::path& dir);

/// Reads test_batch.bin from `dir`.
Dataset load_test(const std::filesystem::path& dir);

/// The sentence appended to every data error: where to get the real files.
std::string dataset_hint();

}  // namespace towers::data
