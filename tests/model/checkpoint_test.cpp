// SPDX-License-Identifier: MIT
// Checkpoint files: a round trip restores every value; a flipped byte, a truncated file,
// a wrong version or a wrong shape is refused with UsageError naming the file; a failed
// save leaves the previous checkpoint intact; latest_checkpoint picks the highest step.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../data/temp_dir.hpp"
#include "model/checkpoint.hpp"
#include "model/parameters.hpp"
#include "runtime/backend.hpp"

namespace towers::model {
namespace {

namespace fs = std::filesystem;
using data::testing::TempDir;

TrainingState make_state(std::int64_t step) {
  TrainingState state;
  state.global_step = step;
  state.params.resize(kNumParameters);
  state.moving_averages.resize(kNumParameters);
  initialize_parameters(static_cast<std::uint64_t>(step), state.params.data());
  for (std::size_t i = 0; i < kNumParameters; ++i) {
    state.moving_averages[i] = 0.5f * state.params[i] + 1e-3f;
  }
  return state;
}

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

// The FNV-1a 64 checksum the format ends with, so a test can forge a well-summed file.
void reseal(std::string& bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i + 8 < bytes.size(); ++i) {
    hash = (hash ^ static_cast<unsigned char>(bytes[i])) * 0x100000001b3ULL;
  }
  for (int i = 0; i < 8; ++i) bytes[bytes.size() - 8 + i] = static_cast<char>(hash >> (8 * i));
}

// Expects load_checkpoint(file) to throw UsageError whose message names the file and
// contains `reason`.
void expect_refused(const fs::path& file, const std::string& reason) {
  try {
    load_checkpoint(file);
    ADD_FAILURE() << "loaded " << file << " although " << reason;
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(file.string()), std::string::npos) << message;
    EXPECT_NE(message.find(reason), std::string::npos) << message;
  }
}

TEST(Checkpoint, RoundTripRestoresEveryValue) {
  TempDir dir;
  const TrainingState saved = make_state(1000);
  const fs::path file = save_checkpoint(dir.path(), saved);
  EXPECT_EQ(file, dir.path() / "model.ckpt-1000");
  const TrainingState loaded = load_checkpoint(file);
  EXPECT_EQ(loaded.global_step, 1000);
  EXPECT_EQ(loaded.params, saved.params);
  EXPECT_EQ(loaded.moving_averages, saved.moving_averages);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1)
      << "the temporary file is left behind";
}

TEST(Checkpoint, AFlippedByteIsDetected) {
  TempDir dir;
  const fs::path file = save_checkpoint(dir.path(), make_state(1));
  std::string bytes = read_bytes(file);
  bytes[bytes.size() / 2] ^= 0x10;  // one bit inside the parameters
  write_bytes(file, bytes);
  expect_refused(file, "checksum");
}

TEST(Checkpoint, ATruncatedFileIsDetected) {
  TempDir dir;
  const fs::path file = save_checkpoint(dir.path(), make_state(1));
  const std::string bytes = read_bytes(file);
  write_bytes(file, bytes.substr(0, bytes.size() - 100));
  expect_refused(file, "truncated");
  write_bytes(file, bytes.substr(0, 10));
  expect_refused(file, "truncated");
}

TEST(Checkpoint, AnotherVersionIsRefused) {
  TempDir dir;
  const fs::path file = save_checkpoint(dir.path(), make_state(1));
  std::string bytes = read_bytes(file);
  bytes[8] = 9;  // the u32 version follows the 8-byte magic
  write_bytes(file, bytes);
  expect_refused(file, "format version 9");
  write_bytes(file, "not a checkpoint at all, but long enough");
  expect_refused(file, "magic");
}

TEST(Checkpoint, AnotherShapeIsRefused) {
  TempDir dir;
  const fs::path file = save_checkpoint(dir.path(), make_state(1));
  std::string bytes = read_bytes(file);
  // Header: magic 8, version 4, step 8, count 8, variables 4, then "conv1/weights":
  // length 4, 13 name bytes, rank 4, dims 4 each. Make conv1's kernel 7 wide.
  const std::size_t first_dim = 8 + 4 + 8 + 8 + 4 + 4 + 13 + 4;
  ASSERT_EQ(bytes[first_dim], 5);
  bytes[first_dim] = 7;
  reseal(bytes);  // a well-formed file of another model, not a corrupt one
  write_bytes(file, bytes);
  expect_refused(file, "conv1/weights [7, 5, 3, 64] does not match");
}

TEST(Checkpoint, AFailedSaveLeavesThePreviousCheckpointIntact) {
  TempDir dir;
  const TrainingState first = make_state(10);
  const fs::path file = save_checkpoint(dir.path(), first);
  if (::geteuid() != 0) {  // root writes anywhere: only a missing folder fails for it
    fs::permissions(dir.path(), fs::perms::owner_write, fs::perm_options::remove);
    EXPECT_THROW(save_checkpoint(dir.path(), make_state(20)), UsageError);
    fs::permissions(dir.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  EXPECT_THROW(save_checkpoint(dir.path() / "missing", make_state(20)), UsageError);
  EXPECT_EQ(latest_checkpoint(dir.path()), file);
  EXPECT_EQ(load_checkpoint(file).params, first.params);
}

TEST(Checkpoint, LatestIsTheHighestStepNotTheNewestFile) {
  TempDir dir;
  EXPECT_EQ(latest_checkpoint(dir.path()), std::nullopt);
  EXPECT_EQ(latest_checkpoint(dir.path() / "missing"), std::nullopt);
  save_checkpoint(dir.path(), make_state(900));
  save_checkpoint(dir.path(), make_state(10000));
  save_checkpoint(dir.path(), make_state(2000));
  write_bytes(dir.path() / "model.ckpt-99999.tmp-1", "x");  // a crashed save: ignored
  EXPECT_EQ(latest_checkpoint(dir.path()), dir.path() / "model.ckpt-10000");
}

TEST(Checkpoint, AWrongSizedStateIsNotSaved) {
  TempDir dir;
  TrainingState state = make_state(3);
  state.params.pop_back();
  EXPECT_THROW(save_checkpoint(dir.path(), state), UsageError);
}

}  // namespace
}  // namespace towers::model
