// SPDX-License-Identifier: MIT
// Fuzz target: the checkpoint parser (model::parse_checkpoint), the code --resume runs on a
// file that may be damaged. Every input must end in a loaded state or a UsageError; a
// crash, a sanitizer report, an out-of-memory (a size field trusted before it was checked)
// or a loaded state that breaks the format's promises is a bug.
//
// A random input almost never carries the right checksum, which the parser checks before
// it reads any size, so each input is parsed twice: as it is, and with a correct checksum
// appended, which lets the fuzzer reach the header, shape and input-record parsing.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/checkpoint.hpp"
#include "model/parameters.hpp"
#include "runtime/backend.hpp"  // towers::UsageError

namespace {

void parse(const std::string& bytes) {
  using namespace towers::model;
  try {
    const TrainingState state = parse_checkpoint(bytes, "fuzz-input");
    // What the loader promises of every state it returns.
    if (state.global_step < 0 || state.params.size() != kNumParameters ||
        state.moving_averages.size() != kNumParameters ||
        state.optimizer_state.size() !=
            static_cast<std::size_t>(optimizer_own_floats(state.optimizer)) * kNumParameters) {
      std::abort();
    }
    for (float v : state.params) {
      if (!std::isfinite(v)) std::abort();
    }
    if (state.input && state.input->position > state.input->examples) std::abort();
    if (state.optimizer == Optimizer::kAdam) {  // second moments: means of squares
      for (std::size_t i = kNumParameters; i < state.optimizer_state.size(); ++i) {
        if (state.optimizer_state[i] < 0) std::abort();
      }
    }
  } catch (const towers::UsageError&) {
    // A refused file: the expected outcome for almost every input.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  parse(bytes);
  const std::uint64_t sum = towers::model::checkpoint_checksum(bytes);
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((sum >> (8 * i)) & 0xff));
  parse(bytes);
  return 0;
}
