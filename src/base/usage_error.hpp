// SPDX-License-Identifier: MIT
// UsageError: the one exception type for mistakes the user can fix. It lives in the base
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

}  // namespace towers
