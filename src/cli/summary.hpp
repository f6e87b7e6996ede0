// SPDX-License-Identifier: MIT
// The `summary:` line every program ends with.
//
//   summary: mode=enqueue max_concurrent_towers=4 step_ms=50.3
//
// One line, "summary:" then space-separated key=value pairs, keys in the order added.
// Tests, benchmarks and the docs parse these lines, so keys are stable and documented in
// the chapter READMEs. Values contain no spaces.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace towers {

/// Builds one summary line. Introduced in chapter 0.
class Summary {
 public:
  /// Adds key=value; text values must not contain spaces.
  Summary& add(const std::string& key, const std::string& value);
  /// Adds key=value with `value` printed with `decimals` digits after the point.
  Summary& add(const std::string& key, double value, int decimals = 3);
  /// Adds key=value for an integer.
  Summary& add(const std::string& key, long long value);
  /// Adds key=value for an int (so that `add("k", 4)` is not ambiguous).
  Summary& add(const std::string& key, int value) { return add(key, static_cast<long long>(value)); }
  /// Adds every pair of `other`, after the current ones.
  Summary& append(const Summary& other);
  /// "summary: k=v k=v".
  std::string line() const;
  /// Prints line() and a newline to stdout, flushing so it is never lost.
  void print() const;

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

/// Parses every `summary:` line in `text` into key -> value maps, in order.
std::vector<std::map<std::string, std::string>> parse_summaries(const std::string& text);

}  // namespace towers
