// SPDX-License-Identifier: MIT
// Checkpoint files: a round trip restores every value; a flipped byte, a truncated file,
// a wrong version or a wrong shape is refused with UsageError naming the file; a failed
// save leaves the previous checkpoint intact; latest_checkpoint picks the highest step.
// Nothing lost: non-finite values and a negative step are neither saved nor loaded; a
// failed rename leaves no temporary file; stale temporaries of dead saves are removed.
// Exact resume: the input position round-trips, version 1 files still load, and a damaged
// size field cannot make the loader allocate more than the file holds.
// Optimizer state (version 3, chapter 8): momentum's velocity and Adam's moments round-trip,
// SGD's files stay version 2 byte for byte, and a cut, damaged, non-finite or mislabelled
// optimizer section is refused.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "../data/temp_dir.hpp"
#include "base/hash.hpp"
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
  const std::uint64_t hash = base::fnv1a64(bytes.data(), bytes.size() - 8);
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

// checkpoint_file_size() is what a checkpoint folder's free-space check asks for: it must
// be the size save_checkpoint() writes, input position included.
TEST(Checkpoint, FileSizeIsTheSizeOfASavedCheckpoint) {
  TempDir dir;
  TrainingState state = make_state(7);
  state.input = data::InputPosition{.seed = 1, .examples = 30, .global_batch = 8, .epoch = 1, .position = 8};
  const fs::path file = save_checkpoint(dir.path(), state);
  EXPECT_EQ(fs::file_size(file), checkpoint_file_size());
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
    EXPECT_THROW(save_checkpoint(dir.path(), make_state(20)), WriteError);
    fs::permissions(dir.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  EXPECT_THROW(save_checkpoint(dir.path() / "missing", make_state(20)), WriteError);
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

// Offset of params[0] in a saved file: the end minus checksum and both float arrays.
std::size_t first_param_offset(const std::string& bytes) {
  return bytes.size() - 8 - 2 * 4 * kNumParameters;
}

TEST(Checkpoint, NonFiniteValuesAndANegativeStepAreRefusedOnLoad) {
  TempDir dir;
  const fs::path file = save_checkpoint(dir.path(), make_state(4));
  const std::string good = read_bytes(file);
  std::string nan = good;
  const std::uint32_t nan_bits = 0x7fc00000;  // a quiet NaN, little-endian
  for (int i = 0; i < 4; ++i) nan[first_param_offset(nan) + 4 * 7 + i] = static_cast<char>(nan_bits >> (8 * i));
  reseal(nan);
  write_bytes(file, nan);
  expect_refused(file, "parameter 7 is not finite");

  std::string inf = good;
  const std::uint32_t inf_bits = 0x7f800000;
  const std::size_t averages = first_param_offset(inf) + 4 * kNumParameters;
  for (int i = 0; i < 4; ++i) inf[averages + i] = static_cast<char>(inf_bits >> (8 * i));
  reseal(inf);
  write_bytes(file, inf);
  expect_refused(file, "moving average 0 is not finite");

  std::string negative = good;
  for (int i = 0; i < 8; ++i) negative[12 + i] = static_cast<char>(0xff);  // global_step = -1
  reseal(negative);
  write_bytes(file, negative);
  expect_refused(file, "global_step -1 is negative");
}

TEST(Checkpoint, ADivergedStateIsNeverSaved) {
  TempDir dir;
  TrainingState state = make_state(8);
  state.params[123] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(save_checkpoint(dir.path(), state), UsageError);
  state = make_state(8);
  state.moving_averages[5] = -std::numeric_limits<float>::infinity();
  EXPECT_THROW(save_checkpoint(dir.path(), state), UsageError);
  state = make_state(8);
  state.global_step = -3;
  EXPECT_THROW(save_checkpoint(dir.path(), state), UsageError);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(Checkpoint, AFailedRenameLeavesNoTemporaryFileAndSaysWhy) {
  TempDir dir;
  const fs::path target = dir.path() / "params.ckpt";
  fs::create_directories(target / "occupied");  // a non-empty folder: rename onto it fails
  try {
    save_checkpoint_file(target, make_state(2));
    ADD_FAILURE() << "saved onto a folder";
  } catch (const WriteError& e) {
    EXPECT_NE(std::string(e.what()).find("renaming"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
  }
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path())) names.insert(entry.path().filename().string());
  EXPECT_EQ(names, std::set<std::string>{"params.ckpt"});
}

TEST(Checkpoint, SaveFileWritesExactlyTheTarget) {
  TempDir dir;
  const fs::path target = dir.path() / "params.ckpt";
  write_bytes(dir.path() / "model.ckpt-2", "someone else's file");
  save_checkpoint_file(target, make_state(2));
  EXPECT_EQ(load_checkpoint(target).global_step, 2);
  EXPECT_EQ(read_bytes(dir.path() / "model.ckpt-2"), "someone else's file");
}

TEST(Checkpoint, StaleTemporaryFilesOfDeadSavesAreRemovedOthersKept) {
  TempDir dir;
  write_bytes(dir.path() / "model.ckpt-5.tmp-999999999", "dead");       // no such process
  const std::string living = "model.ckpt-6.tmp-" + std::to_string(::getppid());
  write_bytes(dir.path() / living, "in progress");                      // a living process
  write_bytes(dir.path() / "notes.tmp-999999999", "not ours");          // not a checkpoint
  const auto removed = remove_stale_temporary_files(dir.path());
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].filename(), "model.ckpt-5.tmp-999999999");
  EXPECT_TRUE(fs::exists(dir.path() / living));
  EXPECT_TRUE(fs::exists(dir.path() / "notes.tmp-999999999"));
}

TEST(Checkpoint, OnlyCanonicalStepNamesAreCheckpoints) {
  TempDir dir;
  save_checkpoint(dir.path(), make_state(7));
  write_bytes(dir.path() / "model.ckpt-0100", "a leading zero: not a name save_checkpoint writes");
  EXPECT_EQ(latest_checkpoint(dir.path()), dir.path() / "model.ckpt-7");
}

// Issue 38: a pattern of at most 18 digits skipped model.ckpt-1000000000000000000, so the
// next --resume took the save before it, redid that step and overwrote the newest file.
TEST(Checkpoint, AStepOfNineteenDigitsIsStillTheNewest) {
  TempDir dir;
  save_checkpoint(dir.path(), make_state(999999999999999999));                  // 18 digits
  const fs::path newest = save_checkpoint(dir.path(), make_state(1000000000000000000));  // 19
  EXPECT_EQ(latest_checkpoint(dir.path()), newest);
  EXPECT_EQ(load_checkpoint(newest).global_step, 1000000000000000000);
  // The largest step a checkpoint records, 2^63 - 1, is a name too; one past it is none.
  const fs::path largest = save_checkpoint(dir.path(), make_state(std::numeric_limits<std::int64_t>::max()));
  write_bytes(dir.path() / "model.ckpt-9223372036854775808", "beyond any step: not a checkpoint");
  EXPECT_EQ(latest_checkpoint(dir.path()), largest);
}

TEST(Checkpoint, AWrongSizedStateIsNotSaved) {
  TempDir dir;
  TrainingState state = make_state(3);
  state.params.pop_back();
  EXPECT_THROW(save_checkpoint(dir.path(), state), UsageError);
}

// Where the version 2 input record starts: just before the floats and the checksum.
std::size_t input_record_offset(const std::string& bytes, bool with_input) {
  return bytes.size() - 8 - 2 * 4 * kNumParameters - (with_input ? 4 + 5 * 8 : 4);
}

TEST(Checkpoint, TheInputPositionRoundTrips) {
  TempDir dir;
  TrainingState saved = make_state(12);
  saved.input = data::InputPosition{3, 50000, 128, 2, 384};
  const TrainingState loaded = load_checkpoint(save_checkpoint(dir.path(), saved));
  ASSERT_TRUE(loaded.input.has_value());
  EXPECT_EQ(*loaded.input, *saved.input);
  saved.input.reset();  // --save-params of chapter 4: no single input position
  EXPECT_FALSE(load_checkpoint(save_checkpoint(dir.path(), saved)).input.has_value());
}

// A --save-params file is a version 2 file without an input position: every save a
// --checkpoint-dir makes records one. A version 1 file has none either, but it is a checkpoint.
TEST(Checkpoint, ASaveParamsFileIsToldFromACheckpoint) {
  TempDir dir;
  TrainingState state = make_state(6);
  EXPECT_TRUE(holds_parameters_only(load_checkpoint(save_checkpoint(dir.path(), state))));
  state.input = data::InputPosition{3, 50000, 128, 2, 384};
  EXPECT_FALSE(holds_parameters_only(load_checkpoint(save_checkpoint(dir.path(), state))));
  EXPECT_FALSE(holds_parameters_only(state)) << "made in memory, read from no file";
}

TEST(Checkpoint, VersionOneFilesStillLoadWithoutAnInputPosition) {
  TempDir dir;
  const TrainingState saved = make_state(4);
  const fs::path file = save_checkpoint(dir.path(), saved);
  std::string bytes = read_bytes(file);
  // Version 1 is version 2 without the u32 has_input word (0 here).
  const std::size_t flag = input_record_offset(bytes, false);
  ASSERT_EQ(bytes.substr(flag, 4), std::string(4, '\0'));
  bytes.erase(flag, 4);
  bytes[8] = 1;
  reseal(bytes);
  write_bytes(file, bytes);
  const TrainingState loaded = load_checkpoint(file);
  EXPECT_EQ(loaded.params, saved.params);
  EXPECT_FALSE(loaded.input.has_value());
  EXPECT_FALSE(holds_parameters_only(loaded)) << "a version 1 checkpoint, not --save-params'";
}

TEST(Checkpoint, AnInputPositionOutsideItsSetIsRefused) {
  TempDir dir;
  TrainingState state = make_state(4);
  state.input = data::InputPosition{1, 100, 10, 0, 50};
  const fs::path file = save_checkpoint(dir.path(), state);
  std::string bytes = read_bytes(file);
  bytes[input_record_offset(bytes, true) + 4 + 4 * 8] = 101;  // position 101 of 100
  reseal(bytes);
  write_bytes(file, bytes);
  expect_refused(file, "input position 101");
}

// A well-summed file whose first variable claims rank 2^32 - 1: four bytes each, 16 GiB.
// gcc says it builds with a sanitizer by __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__,
// clang (CI's ASan build) by __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TOWERS_TEST_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TOWERS_TEST_UNDER_SANITIZER 1
#endif
#endif
#ifndef TOWERS_TEST_UNDER_SANITIZER
#define TOWERS_TEST_UNDER_SANITIZER 0
#endif

// The loader must see that the file holds far less and refuse it without allocating.
// Run in a child limited to 4 GiB of address space, so an allocation of the claimed size
// fails there (bad_alloc, exit 3) instead of swapping the machine. Sanitizers reserve
// terabytes of address space, so their builds run it without the limit.
TEST(Checkpoint, AnAbsurdRankIsRefusedWithoutAllocatingIt) {
  TempDir dir;
  const fs::path file = save_checkpoint(dir.path(), make_state(1));
  std::string bytes = read_bytes(file);
  const std::size_t rank = 8 + 4 + 8 + 8 + 4 + 4 + 13;  // after "conv1/weights"
  ASSERT_EQ(bytes[rank], 4);
  for (int i = 0; i < 4; ++i) bytes[rank + i] = '\xff';
  reseal(bytes);
  write_bytes(file, bytes);
  const pid_t pid = ::fork();
  if (pid == 0) {
#if !TOWERS_TEST_UNDER_SANITIZER
    const rlimit limit{rlim_t{4} << 30, rlim_t{4} << 30};
    ::setrlimit(RLIMIT_AS, &limit);
#endif
    try {
      load_checkpoint(file);
      ::_exit(1);
    } catch (const UsageError& e) {
      ::_exit(std::string(e.what()).find("truncated") != std::string::npos ? 0 : 2);
    } catch (const std::bad_alloc&) {
      ::_exit(3);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: loaded, 2: another message, 3: tried to allocate it";
}

// --- Optimizer state (format version 3) ---------------------------------------------------

// make_state(step) with `optimizer`'s state: distinct, exactly representable values, and
// Adam's second moments (its second half) at or above zero, as means of squares are.
TrainingState make_state_with(Optimizer optimizer, std::int64_t step) {
  TrainingState state = make_state(step);
  state.optimizer = optimizer;
  state.optimizer_state.resize(static_cast<std::size_t>(optimizer_own_floats(optimizer)) * kNumParameters);
  for (std::size_t i = 0; i < state.optimizer_state.size(); ++i) {
    const float value = static_cast<float>(i % 4096) * 0.25f - 3.0f;
    const bool second_moment = optimizer == Optimizer::kAdam && i >= kNumParameters;
    state.optimizer_state[i] = second_moment ? std::abs(value) : value;
  }
  return state;
}

TEST(Checkpoint, OptimizerStateRoundTripsAsVersionThree) {
  TempDir dir;
  for (Optimizer optimizer : {Optimizer::kMomentum, Optimizer::kAdam}) {
    TrainingState saved = make_state_with(optimizer, 5);
    saved.input = data::InputPosition{1, 30, 8, 1, 8};
    const fs::path file = save_checkpoint_file(dir.path() / optimizer_name(optimizer), saved);
    EXPECT_EQ(read_bytes(file)[8], static_cast<char>(kOptimizerFormatVersion));
    EXPECT_EQ(fs::file_size(file), checkpoint_file_size(optimizer)) << optimizer_name(optimizer);
    const TrainingState loaded = load_checkpoint(file);
    EXPECT_EQ(loaded.optimizer, optimizer);
    EXPECT_EQ(loaded.optimizer_state, saved.optimizer_state) << optimizer_name(optimizer);
    EXPECT_EQ(loaded.params, saved.params);
    EXPECT_EQ(loaded.moving_averages, saved.moving_averages);
    EXPECT_EQ(loaded.input, saved.input);
  }
}

// SGD keeps no state, so its files are the version 2 files they always were: the same
// size, the same version byte, and they load as SGD's.
TEST(Checkpoint, SgdFilesStayVersionTwo) {
  TempDir dir;
  const fs::path file = save_checkpoint(dir.path(), make_state(3));
  const std::string bytes = read_bytes(file);
  EXPECT_EQ(bytes[8], static_cast<char>(kCheckpointFormatVersion));
  EXPECT_EQ(bytes.size(), checkpoint_file_size() - 5 * 8);  // no input position here
  const TrainingState loaded = load_checkpoint(file);
  EXPECT_EQ(loaded.optimizer, Optimizer::kSgd);
  EXPECT_TRUE(loaded.optimizer_state.empty());
}

TEST(Checkpoint, ACutOrDamagedOptimizerSectionIsRefused) {
  TempDir dir;
  const fs::path file = save_checkpoint(dir.path(), make_state_with(Optimizer::kAdam, 2));
  const std::string good = read_bytes(file);
  const std::size_t section = good.size() - 8 - 2 * 4 * kNumParameters;  // Adam's m, then v
  std::string cut = good.substr(0, section + 4 * kNumParameters);  // v lost, as a crash might
  write_bytes(file, cut);
  expect_refused(file, "truncated");
  cut += std::string(8, '\0');
  reseal(cut);  // a well-summed file that still lacks v: the length check finds it
  write_bytes(file, cut);
  expect_refused(file, "truncated");
  std::string flipped = good;
  flipped[section + 4 * 1000 + 2] ^= 0x01;  // one bit of m[1000]
  write_bytes(file, flipped);
  expect_refused(file, "checksum");
  std::string longer = good;
  longer.insert(longer.size() - 8, std::string(4, '\0'));
  reseal(longer);
  write_bytes(file, longer);
  expect_refused(file, "unexpected bytes after the optimizer state");
}

TEST(Checkpoint, AnUnknownOrNonFiniteOptimizerStateIsRefusedOnLoad) {
  TempDir dir;
  const fs::path file = save_checkpoint(dir.path(), make_state_with(Optimizer::kMomentum, 2));
  const std::string good = read_bytes(file);
  // The optimizer word is the last of the header, before the two float arrays and the state.
  const std::size_t word = good.size() - 8 - 3 * 4 * kNumParameters - 4;
  ASSERT_EQ(good[word], static_cast<char>(Optimizer::kMomentum));
  for (const char code : {'\0', '\x07'}) {  // SGD has no state to hold; 7 is no optimizer
    std::string bad = good;
    bad[word] = code;
    reseal(bad);
    write_bytes(file, bad);
    expect_refused(file, "optimizer record " + std::to_string(code));
  }
  std::string nan = good;
  const std::size_t velocity = good.size() - 8 - 4 * kNumParameters;
  for (int i = 0; i < 4; ++i) nan[velocity + 4 * 9 + i] = static_cast<char>(0x7fc00000u >> (8 * i));
  reseal(nan);
  write_bytes(file, nan);
  expect_refused(file, "momentum state value 9 is not finite");
}

// Issue 38: a negative Adam second moment loaded, and the run diverged one step later.
TEST(Checkpoint, ANegativeAdamSecondMomentIsRefusedOnLoadAndNeverSaved) {
  TempDir dir;
  const fs::path file = save_checkpoint(dir.path(), make_state_with(Optimizer::kAdam, 2));
  std::string bad = read_bytes(file);
  const std::size_t second_moments = bad.size() - 8 - 4 * kNumParameters;  // v, before the sum
  const float minus_half = -0.5f;
  std::uint32_t bits;
  std::memcpy(&bits, &minus_half, sizeof bits);
  for (int i = 0; i < 4; ++i) bad[second_moments + 4 * 11 + i] = static_cast<char>(bits >> (8 * i));
  reseal(bad);
  write_bytes(file, bad);
  expect_refused(file, "Adam second moment 11 is negative (-0.500000)");  // and the file
  // Momentum's velocity has a sign: the same value there loads.
  TrainingState momentum = make_state_with(Optimizer::kMomentum, 3);
  momentum.optimizer_state[11] = -0.5f;
  EXPECT_EQ(load_checkpoint(save_checkpoint(dir.path(), momentum)).optimizer_state[11], -0.5f);
  // And the writer never makes the file the loader would refuse.
  TrainingState adam = make_state_with(Optimizer::kAdam, 4);
  adam.optimizer_state[kNumParameters + 11] = -0.5f;
  EXPECT_THROW(save_checkpoint(dir.path(), adam), UsageError);
  EXPECT_FALSE(fs::exists(dir.path() / checkpoint_name(4)));
}

TEST(Checkpoint, AWrongSizedOrDivergedOptimizerStateIsNotSaved) {
  TempDir dir;
  TrainingState state = make_state_with(Optimizer::kAdam, 3);
  state.optimizer_state.resize(kNumParameters);  // Adam keeps two floats a parameter
  EXPECT_THROW(save_checkpoint(dir.path(), state), UsageError);
  state = make_state_with(Optimizer::kMomentum, 3);
  state.optimizer_state[17] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(save_checkpoint(dir.path(), state), UsageError);
  state = make_state(3);
  state.optimizer_state.assign(kNumParameters, 0.0f);  // SGD with state: a mistake
  EXPECT_THROW(save_checkpoint(dir.path(), state), UsageError);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace towers::model
