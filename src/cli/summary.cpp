// SPDX-License-Identifier: MIT
#include "cli/summary.hpp"

#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace towers {

Summary& Summary::add(const std::string& key, const std::string& value) {
  if (value.find(' ') != std::string::npos) {
    throw std::invalid_argument("summary value for '" + key + "' contains a space");
  }
  pairs_.emplace_back(key, value);
  return *this;
}

Summary& Summary::add(const std::string& key, double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return add(key, std::string(text));
}

Summary& Summary::add(const std::string& key, long long value) {
  return add(key, std::to_string(value));
}

Summary& Summary::append(const Summary& other) {
  pairs_.insert(pairs_.end(), other.pairs_.begin(), other.pairs_.end());
  return *this;
}

std::string Summary::line() const {
  std::string out = "summary:";
  for (const auto& [key, value] : pairs_) out += " " + key + "=" + value;
  return out;
}

void Summary::print() const {
  std::printf("%s\n", line().c_str());
  std::fflush(stdout);
}

std::vector<std::map<std::string, std::string>> parse_summaries(const std::string& text) {
  std::vector<std::map<std::string, std::string>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("summary:", 0) != 0) continue;
    std::istringstream words(line.substr(8));
    std::map<std::string, std::string> pairs;
    std::string word;
    while (words >> word) {
      auto eq = word.find('=');
      if (eq != std::string::npos) pairs[word.substr(0, eq)] = word.substr(eq + 1);
    }
    out.push_back(std::move(pairs));
  }
  return out;
}

}  // namespace towers
