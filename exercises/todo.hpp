// SPDX-License-Identifier: MIT
// todo(): what a stub calls where the student's code goes.
//
// A stub must compile and must never hang a grader, so every unfinished piece throws
// NotImplemented with a sentence saying what to write. The grader prints that sentence as
// the reason the test failed. Delete the call when you write the code.
#pragma once

#include <stdexcept>
#include <string>

namespace towers::exercises {

/// Thrown by todo(): this piece of the exercise is still a stub.
class NotImplemented : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Throws NotImplemented("TODO: " + what).
[[noreturn]] inline void todo(const std::string& what) { throw NotImplemented("TODO: " + what); }

}  // namespace towers::exercises
