// SPDX-License-Identifier: MIT
// ParameterCheck: do the towers still hold the same model?
//
// In chapter 4 every tower keeps its own copy of the parameters and applies the averaged
// gradients to it itself; nothing is broadcast. That is correct only while the copies stay
// bit-identical: same start, same mean gradients (the all-reduce leaves the same bits on
// every tower), same update. ParameterCheck verifies it every --check-every steps and at
// the last step: it copies each tower's parameters to the host, hashes the bytes
// (64-bit FNV-1a, so any flipped bit changes the checksum) and stops training with an
// error naming the towers that differ.
//
// --inject-divergence STEP is a test hook: after step STEP it nudges one parameter of the
// last tower by one ulp, so the tests can prove that the check catches a divergence.
//
// Used from the training thread, after the step's synchronize. Introduced in chapter 4.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "parallel/tower.hpp"

namespace towers {

/// Flags of the check.
struct CheckFlags {
  int check_every = 50;        ///< --check-every K: compare after every K-th step and the last
  int inject_divergence = -1;  ///< --inject-divergence STEP (tests): perturb the last tower
};

/// Adds --check-every and --inject-divergence to `app`.
void add_check_flags(CLI::App& app, CheckFlags& flags);

/// What to say when copies of the parameters differ after step `step`: sums[i] is the
/// checksum of copy i, and `who` names a copy ("tower", chapter 4; "rank", chapter 5).
/// Names each group of equal copies with its checksum, the group of copy 0 first, so
/// every process of a job builds the same text. Empty when all sums are equal.
std::string divergence_message(std::span<const std::uint64_t> sums, int step,
                               const std::string& who);

/// Compares the towers' parameter copies by checksum.
class ParameterCheck {
 public:
  /// Checks `count` floats per tower of `towers` (which must outlive this object) in a
  /// run of `steps` steps. Throws UsageError for --inject-divergence with fewer than two
  /// towers (there would be nothing to differ from).
  ParameterCheck(const std::vector<std::unique_ptr<Tower>>& towers, std::size_t count,
                 const CheckFlags& flags, int steps);

  /// Call after step `step` has finished on every tower; params[i] is tower i's copy (on
  /// its device). Perturbs first when --inject-divergence names this step; then, when a
  /// check is due, compares. Throws std::runtime_error naming each group of towers with
  /// equal parameters and its checksum when the towers disagree.
  void after_step(int step, std::span<float* const> params);

  /// Checks done so far, all passed.
  int checks() const { return checks_; }

 private:
  void perturb(Tower& tower, float* params);
  void compare(int step, std::span<float* const> params);

  const std::vector<std::unique_ptr<Tower>>& towers_;
  std::size_t count_;
  CheckFlags flags_;
  int steps_;
  int checks_ = 0;
  Buffer staging_;  // [count] pinned host floats: one tower's parameters at a time
};

}  // namespace towers
