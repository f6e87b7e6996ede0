// SPDX-License-Identifier: MIT
// flag_error(): what CLI11 says when one flag's check (cli/options.hpp) refuses a value,
// for the tests of the checks themselves, without running a program.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace towers::testing {

/// Parses `name <text>` into a T checked by `check`; returns CLI11's message ("" if
/// accepted).
template <typename T>
std::string flag_error(const CLI::Validator& check, const std::string& name,
                       const std::string& text) {
  CLI::App app;
  T value{};
  app.add_option(name, value)->check(check);
  std::vector<std::string> args{text, name};  // CLI11 reads a vector from the back
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

}  // namespace towers::testing
