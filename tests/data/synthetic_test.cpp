// SPDX-License-Identifier: MIT
// Tests for shapes.hpp and synthetic.hpp: the set is deterministic, balanced, written in
// the real format, and cached: reused when complete, regenerated when stale.
#include "data/synthetic.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "data/shapes.hpp"
#include "runtime/backend.hpp"
#include "temp_dir.hpp"

namespace towers::data {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(Synthetic, SameSeedSameBytesDifferentSeedDifferentBytes) {
  const Dataset a = generate_synthetic(7, Split::kTrain, 0, 200);
  const Dataset b = generate_synthetic(7, Split::kTrain, 0, 200);
  const Dataset c = generate_synthetic(8, Split::kTrain, 0, 200);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.images, b.images);
  EXPECT_NE(a.images, c.images);
  EXPECT_NE(a.images, generate_synthetic(7, Split::kTest, 0, 200).images);
}

TEST(Synthetic, AnyRangeEqualsTheSameSliceOfTheWholeSplit) {
  const Dataset whole = generate_synthetic(3, Split::kTest, 0, 150);
  const Dataset part = generate_synthetic(3, Split::kTest, 100, 50);
  EXPECT_TRUE(std::equal(part.labels.begin(), part.labels.end(), whole.labels.begin() + 100));
  EXPECT_TRUE(std::equal(part.images.begin(), part.images.end(), whole.image(100)));
}

TEST(Synthetic, ClassesAreExactlyBalancedAndShuffled) {
  for (Split split : {Split::kTrain, Split::kTest}) {
    const std::vector<uint8_t> labels = synthetic_labels(11, split);
    ASSERT_EQ(labels.size(), split_size(split));
    std::vector<size_t> counts(kNumClasses);
    size_t in_place = 0;
    for (size_t i = 0; i < labels.size(); ++i) {
      ++counts[labels[i]];
      in_place += labels[i] == i % kNumClasses;
    }
    for (size_t count : counts) EXPECT_EQ(count, labels.size() / kNumClasses);
    EXPECT_LT(in_place, labels.size() / 5) << "labels look unshuffled";
  }
}

TEST(Synthetic, EveryClassHasANameAndVisibleContent) {
  std::set<std::string_view> names;
  for (int label = 0; label < kNumClasses; ++label) names.insert(synthetic_class_name(label));
  EXPECT_EQ(names.size(), 10u);
  EXPECT_EQ(synthetic_class_name(10), "?");
  const Dataset data = generate_synthetic(5, Split::kTest, 0, 100);
  for (size_t i = 0; i < data.size(); ++i) {
    double sum = 0, squares = 0;
    for (size_t k = 0; k < kImageBytes; ++k) sum += data.image(i)[k];
    const double mean = sum / kImageBytes;
    for (size_t k = 0; k < kImageBytes; ++k) squares += std::pow(data.image(i)[k] - mean, 2);
    EXPECT_GT(std::sqrt(squares / kImageBytes), 10.0) << "image " << i << " is nearly flat";
  }
}

TEST(SyntheticCache, WritesRealFormatFilesTheReaderLoads) {
  TempDir tmp;
  const fs::path dir = ensure_synthetic_cifar10(4, tmp.path());
  EXPECT_EQ(dir, synthetic_dir(4, tmp.path()));
  EXPECT_EQ(dir.filename().string(),
            "synthetic-cifar10-seed4-v" + std::to_string(kSyntheticVersion));
  const Dataset train = load_train(dir);
  const Dataset test = load_test(dir);
  EXPECT_EQ(train.size(), kTrainExamples);
  EXPECT_EQ(test.size(), kTestExamples);
  EXPECT_EQ(train.labels, synthetic_labels(4, Split::kTrain));
  const Dataset last = generate_synthetic(4, Split::kTrain, kTrainExamples - 1, 1);
  EXPECT_TRUE(std::equal(last.images.begin(), last.images.end(), train.image(kTrainExamples - 1)));
  // Only the finished folder is left: no temporary folder from the rename.
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()), 1);
}

TEST(SyntheticCache, SecondCallReusesFilesAndStaleStampRegenerates) {
  TempDir tmp;
  const fs::path dir = ensure_synthetic_cifar10(5, tmp.path());
  const fs::path file = dir / "data_batch_3.bin";
  // Back-date a file: a rewrite would give it a fresh time.
  const fs::file_time_type old_time = fs::last_write_time(file) - std::chrono::hours(24);
  fs::last_write_time(file, old_time);
  EXPECT_EQ(ensure_synthetic_cifar10(5, tmp.path()), dir);
  EXPECT_EQ(fs::last_write_time(file), old_time) << "a complete cache was rewritten";

  std::ofstream(dir / "STAMP") << "towers synthetic CIFAR-10\nversion 0\nseed 5\n";
  EXPECT_EQ(ensure_synthetic_cifar10(5, tmp.path()), dir);
  EXPECT_GT(fs::last_write_time(file), old_time) << "a stale cache was reused";
  EXPECT_EQ(load_test(dir).size(), kTestExamples);
}

// A build interrupted before its rename left DIR.tmp-PID (60 MB) forever. The next start
// removes those of processes that are gone, and keeps a running process's.
TEST(SyntheticCache, AnInterruptedBuildsFolderIsRemovedAtTheNextStart) {
  TempDir tmp;
  const fs::path dir = synthetic_dir(5, tmp.path());
  const pid_t gone = ::fork();  // a pid that is gone: a child that exited and was reaped
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  const fs::path abandoned = dir.string() + ".tmp-" + std::to_string(gone);
  const fs::path running = dir.string() + ".tmp-1";  // pid 1 always runs
  for (const fs::path& folder : {abandoned, running}) {
    fs::create_directories(folder);
    std::ofstream(folder / "data_batch_1.bin") << "half written";
  }
  ensure_synthetic_cifar10(5, tmp.path());
  EXPECT_FALSE(fs::exists(abandoned));
  EXPECT_TRUE(fs::exists(running)) << "a running build's folder was removed";
}

TEST(SyntheticCache, UnwritableRootIsAUsageErrorWithAHint) {
  TempDir tmp;
  std::ofstream(tmp.path() / "a-file").put('x');  // a file where a folder should be
  try {
    ensure_synthetic_cifar10(6, tmp.path() / "a-file" / "cache");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("TOWERS_CACHE_DIR"), std::string::npos) << e.what();
  }
}

TEST(SyntheticCache, DefaultRootFollowsTheEnvironment) {
  const char* saved = std::getenv("TOWERS_CACHE_DIR");
  const std::string saved_value = saved ? saved : "";
  ::setenv("TOWERS_CACHE_DIR", "/some/cache", 1);
  EXPECT_EQ(default_cache_root(), fs::path("/some/cache"));
  ::unsetenv("TOWERS_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(default_cache_root(), fs::path("/xdg/towers"));
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/learner", 1);
  EXPECT_EQ(default_cache_root(), fs::path("/home/learner/.cache/towers"));
  if (saved) ::setenv("TOWERS_CACHE_DIR", saved_value.c_str(), 1);
}

}  // namespace
}  // namespace towers::data
