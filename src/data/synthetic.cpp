// SPDX-License-Identifier: MIT
#include "data/synthetic.hpp"

#include <signal.h>  // kill(pid, 0): is a temporary folder's process still running?
#include <unistd.h>  // getpid: a per-process temporary folder name

#include <cerrno>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>

#include "data/rng.hpp"
#include "data/shapes.hpp"
#include "base/usage_error.hpp"

namespace towers::data {
namespace fs = std::filesystem;

namespace {

constexpr char kStampName[] = "STAMP";
// Stream ids inside mix_seed; the shuffle gets its own so labels and pixels never share.
constexpr uint64_t kShuffleStream = ~uint64_t{0};

uint64_t split_id(Split split) { return split == Split::kTrain ? 0 : 1; }

std::string stamp_text(uint64_t seed) {
  std::ostringstream s;
  s << "towers synthetic CIFAR-10\nversion " << kSyntheticVersion << "\nseed " << seed
    << "\ntrain " << kTrainExamples << "\ntest " << kTestExamples << "\n";
  return s.str();
}

std::vector<fs::path> all_files(const fs::path& dir) {
  std::vector<fs::path> files = train_files(dir);
  files.push_back(test_file(dir));
  return files;
}

// True when `dir` holds every file at its full size and a STAMP for this seed/version.
bool cache_is_complete(const fs::path& dir, uint64_t seed) {
  std::ifstream in(dir / kStampName);
  std::stringstream stamp;
  stamp << in.rdbuf();
  if (!in || stamp.str() != stamp_text(seed)) return false;
  for (const fs::path& file : all_files(dir)) {
    std::error_code ec;
    if (fs::file_size(file, ec) != kRecordsPerFile * kRecordBytes || ec) return false;
  }
  return true;
}

[[noreturn]] void cache_error(const fs::path& where, const std::error_code& ec) {
  throw UsageError("towers: cannot write the synthetic CIFAR-10 cache at " + where.string() +
                   ": " + ec.message() +
                   "\n  HINT: set TOWERS_CACHE_DIR to a writable folder with 200 MB free.");
}

void write_stamp(const fs::path& dir, uint64_t seed) {
  std::ofstream out(dir / kStampName, std::ios::trunc);
  out << stamp_text(seed);
  out.close();
  if (!out) cache_error(dir / kStampName, std::make_error_code(std::errc::io_error));
}

// Removes DIR.tmp-PID folders whose process is gone: builds interrupted (Ctrl-C, kill -9)
// before their rename, which nothing else would ever delete (60 MB each). A folder of a
// running process is its build in progress and stays; our own pid's can only be a pid
// reused after a crash.
void remove_abandoned_builds(const fs::path& dir) {
  const std::string prefix = dir.filename().string() + ".tmp-";
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    const std::string digits = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : "";
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const auto pid = static_cast<pid_t>(std::stol(digits));
    if (pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH)) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

}  // namespace

size_t split_size(Split split) { return split == Split::kTrain ? kTrainExamples : kTestExamples; }

std::vector<uint8_t> synthetic_labels(uint64_t seed, Split split) {
  const size_t n = split_size(split);
  std::vector<uint8_t> labels(n);
  for (size_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>(i % kNumClasses);
  Rng rng(mix_seed(seed, split_id(split), kShuffleStream));
  for (size_t i = n - 1; i > 0; --i)  // Fisher-Yates
    std::swap(labels[i], labels[rng.below(static_cast<uint32_t>(i + 1))]);
  return labels;
}

Dataset generate_synthetic(uint64_t seed, Split split, size_t begin, size_t count) {
  const std::vector<uint8_t> all_labels = synthetic_labels(seed, split);
  Dataset data;
  data.labels.assign(all_labels.begin() + begin, all_labels.begin() + begin + count);
  data.images.resize(count * kImageBytes);
  for (size_t i = 0; i < count; ++i) {
    Rng rng(mix_seed(seed, split_id(split), begin + i));
    render_synthetic_image(data.labels[i], rng, data.image(i));
  }
  return data;
}

fs::path default_cache_root() {
  if (const char* dir = std::getenv("TOWERS_CACHE_DIR"); dir && *dir) return dir;
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir && *dir)
    return fs::path(dir) / "towers";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "towers";
  return fs::temp_directory_path() / "towers-cache";
}

fs::path synthetic_dir(uint64_t seed, const fs::path& cache_root) {
  return cache_root / ("synthetic-cifar10-seed" + std::to_string(seed) + "-v" +
                       std::to_string(kSyntheticVersion));
}

fs::path ensure_synthetic_cifar10(uint64_t seed, const fs::path& cache_root) {
  const fs::path dir = synthetic_dir(seed, cache_root);
  remove_abandoned_builds(dir);
  if (cache_is_complete(dir, seed)) return dir;

  // Write everything into a folder of our own, then rename it into place.
  const fs::path tmp = dir.string() + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (fs::create_directories(tmp, ec); ec) cache_error(tmp, ec);
  const std::vector<fs::path> files = train_files(tmp);
  for (size_t f = 0; f < files.size(); ++f) {
    const size_t begin = f * kRecordsPerFile;
    write_records(files[f], generate_synthetic(seed, Split::kTrain, begin, kRecordsPerFile));
  }
  write_records(test_file(tmp), generate_synthetic(seed, Split::kTest, 0, kTestExamples));
  write_stamp(tmp, seed);  // last: a folder with a STAMP is complete

  if (cache_is_complete(dir, seed)) {  // another process finished first
    fs::remove_all(tmp, ec);
    return dir;
  }
  fs::remove_all(dir, ec);  // a stale or half-deleted folder from an older run
  fs::rename(tmp, dir, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    if (cache_is_complete(dir, seed)) return dir;  // lost the race to an equal copy
    cache_error(dir, ec);
  }
  return dir;
}

}  // namespace towers::data
