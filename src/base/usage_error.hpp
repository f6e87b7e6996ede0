// SPDX-License-Identifier: MIT
// UsageError: the one exception type for mistakes the user can fix (and WriteError, for
// an output that failed to be written after the checks passed). It lives in the base
// layer so that every library (data, trace, cli, ...) can throw it without depending on
// the runtime.
#pragma once

#include <stdexcept>

namespace towers {

/// A mistake the user can fix (bad flag value, too many devices, missing file).
/// Programs print what() and exit with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An output that could not be written during or after the run (a full disk, a quota, a
/// folder removed meanwhile): every path was checked before the first step, so this is no
/// mistake in the command line, and programs exit with status 1, not 2.
class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace towers
