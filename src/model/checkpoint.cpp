// SPDX-License-Identifier: MIT
// Checkpoint files: write them atomically, read them back only when every check passes.
//
// Layout (all integers little-endian):
//   "TOWERSCK"                     8 bytes magic
//   u32 version                    2 (kCheckpointFormatVersion) without optimizer state,
//                                  3 (kOptimizerFormatVersion) with it; 1 is still read
//   i64 global_step
//   u64 parameter count            kNumParameters
//   u32 variables, then per variable: u32 name length, name bytes, u32 rank, rank x u32 dims
//   version 2 and 3: u32 has_input (0 or 1), then when 1 the InputPosition as five u64:
//     seed, examples, global_batch, epoch, position
//   version 3 only: u32 optimizer (1 momentum, 2 adam: model/optimizer_kind.hpp)
//   params            [count] float32
//   moving averages   [count] float32
//   version 3 only: optimizer state [k * count] float32, k = optimizer_own_floats:
//     momentum's velocity; Adam's first moments, then its second moments
//   u64 FNV-1a 64 of every byte above
// The optimizer's state sits behind the checksum like everything else, so a file cut
// short or damaged there is refused as any other would be.
#include "model/checkpoint.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unistd.h>

#include "base/hash.hpp"
#include "model/parameters.hpp"
#include "runtime/backend.hpp"

namespace towers::model {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'T', 'O', 'W', 'E', 'R', 'S', 'C', 'K'};
constexpr std::uint32_t kFirstFormatVersion = 1;  // no input position

using base::fnv1a64;

// Appends `value` as `bytes` little-endian bytes, whatever the machine's byte order.
void put(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void put_floats(std::string& out, const std::vector<float>& values) {
  for (float f : values) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    put(out, bits, 4);
  }
}

// Reads the file front to back; every read past the end is a "truncated" error.
class Reader {
 public:
  Reader(const std::string& bytes, const fs::path& file) : bytes_(bytes), file_(file) {}

  std::uint64_t get(int bytes) {
    need(bytes);
    std::uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) {
      value |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    }
    pos_ += bytes;
    return value;
  }
  std::string get_string(std::size_t length) {
    need(length);
    std::string s = bytes_.substr(pos_, length);
    pos_ += length;
    return s;
  }
  std::vector<float> get_floats(std::size_t count) {
    need_items(count, 4);
    std::vector<float> values(count);
    for (float& f : values) {
      const auto bits = static_cast<std::uint32_t>(get(4));
      std::memcpy(&f, &bits, sizeof f);
    }
    return values;
  }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  // Fails unless `count` items of `item_bytes` each are left: call it before allocating
  // `count` of anything, so a damaged size field cannot ask for more than the file holds.
  void need_items(std::uint64_t count, std::size_t item_bytes) const {
    if (count > remaining() / item_bytes) fail("file is truncated");
  }
  [[noreturn]] void fail(const std::string& reason) const {
    throw UsageError("cannot load checkpoint " + file_.string() + ": " + reason);
  }

 private:
  void need(std::size_t bytes) const {
    if (bytes > bytes_.size() - pos_) fail("file is truncated");
  }
  const std::string& bytes_;
  const fs::path& file_;
  std::size_t pos_ = 0;
};

std::optional<std::size_t> first_non_finite(const std::vector<float>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) return i;
  }
  return std::nullopt;
}

// Adam's second moments (the optimizer state's second half) are running means of squared
// gradients, never below zero: the first one that is, if any. A negative one (a damaged or
// crafted file behind a correct checksum) would make the next update take the square root
// of a negative number, and the run diverge a step later.
std::optional<std::size_t> first_negative_second_moment(const TrainingState& state) {
  if (state.optimizer != Optimizer::kAdam) return std::nullopt;
  for (std::size_t i = kNumParameters; i < state.optimizer_state.size(); ++i) {
    if (state.optimizer_state[i] < 0) return i - kNumParameters;
  }
  return std::nullopt;
}

[[noreturn]] void save_failed(const fs::path& file, const std::string& step, int error) {
  throw WriteError("cannot save " + file.string() + ": " + step + " failed (" +
                   std::strerror(error) + "); check that the folder exists, is writable and " +
                   "has space. Nothing else was changed.");
}

// Writes `bytes` to `fd` whole, retrying short writes.
bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// The version 2 input record: a presence flag, then the position, checked for sense.
std::optional<data::InputPosition> read_input_position(Reader& r) {
  const std::uint64_t present = r.get(4);
  if (present > 1) r.fail("input record flag " + std::to_string(present) + " is neither 0 nor 1");
  if (present == 0) return std::nullopt;
  data::InputPosition in;
  for (std::uint64_t* v : {&in.seed, &in.examples, &in.global_batch, &in.epoch, &in.position}) {
    *v = r.get(8);
  }
  if (in.examples == 0 || in.global_batch == 0 || in.global_batch > in.examples ||
      in.position > in.examples) {
    r.fail("input position " + std::to_string(in.position) + " with a batch of " +
           std::to_string(in.global_batch) + " does not fit a training set of " +
           std::to_string(in.examples));
  }
  return in;
}

std::string shape_text(const std::vector<int>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// SGD's states keep version 2, so its files stay the bytes they always were (and older
// programs still read them); only a state with optimizer state needs version 3.
std::uint32_t version_of(Optimizer optimizer) {
  return optimizer_own_floats(optimizer) == 0 ? kCheckpointFormatVersion : kOptimizerFormatVersion;
}

// The optimizer record of a version 3 file: momentum or Adam, nothing else.
Optimizer read_optimizer(Reader& r) {
  const std::uint64_t code = r.get(4);
  for (Optimizer o : {Optimizer::kMomentum, Optimizer::kAdam}) {
    if (code == static_cast<std::uint64_t>(o)) return o;
  }
  r.fail("optimizer record " + std::to_string(code) + " is neither momentum (1) nor adam (2)");
}

// Everything of a checkpoint file before its floats: magic, version, step, layout, input,
// and from version 3 the optimizer.
std::string checkpoint_header(const TrainingState& state) {
  const std::uint32_t version = version_of(state.optimizer);
  std::string bytes(kMagic, sizeof kMagic);
  put(bytes, version, 4);
  put(bytes, static_cast<std::uint64_t>(state.global_step), 8);
  put(bytes, kNumParameters, 8);
  put(bytes, parameter_layout().size(), 4);
  for (const ParameterView& view : parameter_layout()) {
    put(bytes, view.name.size(), 4);
    bytes += view.name;
    put(bytes, view.shape.size(), 4);
    for (int d : view.shape) put(bytes, static_cast<std::uint32_t>(d), 4);
  }
  put(bytes, state.input ? 1 : 0, 4);
  if (const auto& in = state.input) {
    for (std::uint64_t v : {in->seed, in->examples, in->global_batch, in->epoch, in->position}) {
      put(bytes, v, 8);
    }
  }
  if (version >= kOptimizerFormatVersion) put(bytes, static_cast<std::uint32_t>(state.optimizer), 4);
  return bytes;
}

}  // namespace

fs::path save_checkpoint(const fs::path& dir, const TrainingState& state) {
  return save_checkpoint_file(dir / checkpoint_name(state.global_step), state);
}

fs::path save_checkpoint_file(const fs::path& file, const TrainingState& state) {
  if (state.params.size() != kNumParameters || state.moving_averages.size() != kNumParameters) {
    throw UsageError("cannot save checkpoint " + file.string() + ": expected " +
                     std::to_string(kNumParameters) + " parameters and moving averages, got " +
                     std::to_string(state.params.size()) + " and " +
                     std::to_string(state.moving_averages.size()));
  }
  if (state.global_step < 0) {
    throw UsageError("cannot save checkpoint " + file.string() + ": global_step " +
                     std::to_string(state.global_step) + " is negative");
  }
  const std::size_t state_floats =
      static_cast<std::size_t>(optimizer_own_floats(state.optimizer)) * kNumParameters;
  if (state.optimizer_state.size() != state_floats) {
    throw UsageError("cannot save checkpoint " + file.string() + ": --optimizer " +
                     optimizer_name(state.optimizer) + " keeps " + std::to_string(state_floats) +
                     " floats of state, got " + std::to_string(state.optimizer_state.size()));
  }
  for (const std::vector<float>* values :
       {&state.params, &state.moving_averages, &state.optimizer_state}) {
    if (const auto bad = first_non_finite(*values)) {
      throw UsageError("cannot save checkpoint " + file.string() + ": " +
                       (values == &state.params            ? "parameter "
                        : values == &state.moving_averages ? "moving average "
                                                           : "optimizer state value ") +
                       std::to_string(*bad) + " is " + std::to_string((*values)[*bad]) +
                       "; a diverged model is never saved");
    }
  }
  if (const auto bad = first_negative_second_moment(state)) {  // the loader would refuse it
    throw UsageError("cannot save checkpoint " + file.string() + ": Adam second moment " +
                     std::to_string(*bad) + " is negative (" +
                     std::to_string(state.optimizer_state[kNumParameters + *bad]) + ")");
  }
  std::string bytes = checkpoint_header(state);
  put_floats(bytes, state.params);
  put_floats(bytes, state.moving_averages);
  put_floats(bytes, state.optimizer_state);
  put(bytes, checkpoint_checksum(bytes), 8);

  write_file_atomically(file, bytes);
  return file;
}

std::uintmax_t checkpoint_file_size(Optimizer optimizer) {
  TrainingState with_input;
  with_input.input = data::InputPosition{};
  with_input.optimizer = optimizer;
  const std::size_t floats = static_cast<std::size_t>(2 + optimizer_own_floats(optimizer)) * kNumParameters;
  return checkpoint_header(with_input).size() + sizeof(float) * floats +
         sizeof(std::uint64_t) /* checksum */;
}

std::string checkpoint_name(std::int64_t global_step) {
  return "model.ckpt-" + std::to_string(global_step);
}

void write_file_atomically(const fs::path& file, const std::string& bytes) {
  // A temporary file next to the target (same folder, so same file system), made durable
  // with fsync, then renamed over the target: rename within a folder is atomic, so a
  // reader sees the old file or the whole new one. The folder is synced last so the
  // rename itself survives a power cut. Nothing but the target and our own temporary
  // file is ever touched.
  // A device or a pipe the user named (/dev/null, /dev/full, /dev/stdout, a FIFO) is
  // written in place, as check_output_file promises: a rename would replace the device
  // node itself with a regular file (run as root, /dev/null gone for every program).
  struct stat target {};
  if (::stat(file.c_str(), &target) == 0 && !S_ISREG(target.st_mode) && !S_ISDIR(target.st_mode)) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) save_failed(file, "opening it", errno);
    const bool written = write_all(fd, bytes);
    const int error = errno;
    ::close(fd);
    if (!written) save_failed(file, "writing it", error);
    return;
  }
  const fs::path folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  const fs::path tmp = folder / (file.filename().string() + ".tmp-" + std::to_string(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) save_failed(file, "creating " + tmp.string(), errno);
  const bool written = write_all(fd, bytes) && ::fsync(fd) == 0;
  const int write_error = errno;
  if (::close(fd) != 0 || !written) {
    const int error = written ? errno : write_error;
    ::unlink(tmp.c_str());
    save_failed(file, "writing " + tmp.string(), error);
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    save_failed(file, "renaming " + tmp.string() + " onto it", error);
  }
  const int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {  // a folder we could rename in but not open is still saved, if less durably
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

std::uint64_t checkpoint_checksum(std::string_view body) {
  return fnv1a64(body);  // FNV-1a 64, as the parameter checks' (base/hash.hpp)
}

TrainingState load_checkpoint(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw UsageError("cannot load checkpoint " + file.string() + ": cannot open it (" +
                     std::strerror(errno) + ")");
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_checkpoint(bytes, file);
}

TrainingState parse_checkpoint(const std::string& bytes, const fs::path& file) {
  Reader r(bytes, file);
  if (r.get_string(sizeof kMagic) != std::string(kMagic, sizeof kMagic)) {
    r.fail("not a towers checkpoint (wrong magic)");
  }
  const auto version = static_cast<std::uint32_t>(r.get(4));
  if (version < kFirstFormatVersion || version > kOptimizerFormatVersion) {
    r.fail("format version " + std::to_string(version) + ", this program reads versions " +
           std::to_string(kFirstFormatVersion) + " to " + std::to_string(kOptimizerFormatVersion));
  }
  // Check the sum before trusting any size in the header.
  if (bytes.size() < sizeof kMagic + 4 + 8) r.fail("file is truncated");
  const std::string_view body(bytes.data(), bytes.size() - 8);
  const std::string sum = bytes.substr(bytes.size() - 8);
  if (Reader(sum, file).get(8) != checkpoint_checksum(body)) {
    r.fail("checksum mismatch: the file is corrupt or truncated");
  }

  TrainingState state;
  state.format_version = version;
  state.global_step = static_cast<std::int64_t>(r.get(8));
  const std::uint64_t count = r.get(8);
  if (count != kNumParameters) {
    r.fail("it holds " + std::to_string(count) + " parameters, this model has " +
           std::to_string(kNumParameters));
  }
  const std::vector<ParameterView>& layout = parameter_layout();
  const auto variables = r.get(4);
  if (variables != layout.size()) {
    r.fail("it holds " + std::to_string(variables) + " variables, this model has " +
           std::to_string(layout.size()));
  }
  for (const ParameterView& view : layout) {
    const std::string name = r.get_string(r.get(4));
    const std::uint64_t rank = r.get(4);
    r.need_items(rank, 4);  // before the allocation: a damaged rank cannot ask for gigabytes
    std::vector<int> shape(rank);
    for (int& d : shape) d = static_cast<int>(r.get(4));
    if (name != view.name || shape != view.shape) {
      r.fail("variable " + name + " " + shape_text(shape) + " does not match this model's " +
             view.name + " " + shape_text(view.shape));
    }
  }
  if (version >= 2) state.input = read_input_position(r);
  if (version >= kOptimizerFormatVersion) state.optimizer = read_optimizer(r);
  state.params = r.get_floats(kNumParameters);
  state.moving_averages = r.get_floats(kNumParameters);
  state.optimizer_state =
      r.get_floats(static_cast<std::size_t>(optimizer_own_floats(state.optimizer)) * kNumParameters);
  if (r.remaining() != 8) {
    r.fail(std::string("unexpected bytes after the ") +
           (state.optimizer_state.empty() ? "moving averages" : "optimizer state"));
  }
  if (state.global_step < 0) r.fail("global_step " + std::to_string(state.global_step) + " is negative");
  if (const auto bad = first_non_finite(state.params)) {
    r.fail("parameter " + std::to_string(*bad) + " is not finite (" +
           std::to_string(state.params[*bad]) + "): the model had diverged");
  }
  if (const auto bad = first_non_finite(state.moving_averages)) {
    r.fail("moving average " + std::to_string(*bad) + " is not finite (" +
           std::to_string(state.moving_averages[*bad]) + "): the model had diverged");
  }
  if (const auto bad = first_non_finite(state.optimizer_state)) {
    r.fail(std::string(optimizer_name(state.optimizer)) + " state value " + std::to_string(*bad) +
           " is not finite (" + std::to_string(state.optimizer_state[*bad]) +
           "): the model had diverged");
  }
  if (const auto bad = first_negative_second_moment(state)) {
    r.fail("Adam second moment " + std::to_string(*bad) + " is negative (" +
           std::to_string(state.optimizer_state[kNumParameters + *bad]) + "), but it is a mean "
           "of squared gradients: the file is damaged. Resume from another checkpoint, or "
           "start afresh");
  }
  return state;
}

bool holds_parameters_only(const TrainingState& state) {
  return state.format_version >= 2 && !state.input;
}

std::optional<fs::path> latest_checkpoint(const fs::path& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) return std::nullopt;
  // Canonical numbers only (no leading zeros), so one step has one name. Every step a
  // checkpoint can record has a name here, 19 digits included (2^63 - 1 has 19): a
  // pattern of at most 18 once skipped the newest save, and the next run redid its step.
  static const std::regex pattern("model\\.ckpt-(0|[1-9][0-9]{0,18})");
  std::optional<fs::path> best;
  std::int64_t best_step = -1;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || !std::regex_match(name, match, pattern)) continue;
    const std::string digits = match[1].str();
    std::int64_t step = 0;
    const auto [end, parse_error] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (parse_error != std::errc()) continue;  // beyond 2^63 - 1: no step save_checkpoint writes
    if (step > best_step) best_step = step, best = entry.path();
  }
  return best;
}

std::vector<fs::path> remove_stale_temporary_files(const fs::path& dir) {
  // "<name>.tmp-<pid>" is written by write_file_atomically(); its process either renamed
  // it or died. A file of a process that is gone (or of our own pid, which at start can
  // only be a pid reused after a crash) is garbage; one of a living process may be a save
  // in progress, so it stays.
  static const std::regex pattern("model\\.ckpt-[0-9]+\\.tmp-([0-9]{1,9})");
  std::vector<fs::path> removed;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return removed;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, pattern)) continue;
    const auto pid = static_cast<pid_t>(std::stol(match[1].str()));
    const bool owner_gone = pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH);
    if (owner_gone && fs::remove(entry.path(), error)) removed.push_back(entry.path());
  }
  return removed;
}

}  // namespace towers::model
