// SPDX-License-Identifier: MIT
// OpenBLAS's chosen kernels against the CPU's instruction sets (openblas_core.hpp).
#include "kernels/host/openblas_core.hpp"

#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>

namespace towers::host {
namespace {

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// OpenBLAS's x86-64 cores (the names openblas_get_corename returns and OPENBLAS_CORETYPE
// takes) by the instruction set their kernels need. Pairs on one level run kernels of the
// same width (Zen's are Haswell's tuned for AMD; Cooperlake's are SkylakeX's plus
// bfloat16 ones), so picking either is no mistake. "Unknown" is what the library says
// when it recognised nothing: the level of plain x86-64.
struct CoreLevel {
  const char* core;
  int level;
};
constexpr CoreLevel kCoreLevels[] = {
    {"Unknown", 1},     {"Katmai", 1},      {"Coppermine", 1},     {"Northwood", 1},
    {"Banias", 1},      {"Athlon", 1},      {"Opteron", 1},        {"Prescott", 2},
    {"Opteron_SSE3", 2}, {"Barcelona", 2},  {"Bobcat", 3},         {"Core2", 3},
    {"Penryn", 3},      {"Dunnington", 3},  {"Atom", 3},           {"Nano", 3},
    {"Nehalem", 4},     {"Sandybridge", 5}, {"Bulldozer", 5},      {"Piledriver", 5},
    {"Steamroller", 5}, {"Excavator", 5},   {"Haswell", 6},        {"Zen", 6},
    {"SkylakeX", 7},    {"Cooperlake", 7},  {"SapphireRapids", 7},
};

// What each level is called in the advice.
const char* level_name(int level) {
  static const char* const kNames[] = {"?", "SSE2", "SSE3", "SSSE3", "SSE4.2", "AVX", "AVX2",
                                       "AVX-512"};
  return level >= 1 && level <= 7 ? kNames[level] : "?";
}

// "OpenBLAS 0.3.21" from the start of openblas_get_config(), or "OpenBLAS" alone.
std::string library_name(const std::string& config) {
  std::istringstream words(config);
  std::string name, version;
  words >> name >> version;
  return name == "OpenBLAS" && !version.empty() ? name + " " + version : "OpenBLAS";
}

// Whether the library carries every core and picks one when it loads (a build with
// DYNAMIC_ARCH); a build for one CPU says its target instead, and ignores
// OPENBLAS_CORETYPE.
bool picks_at_load(const std::string& config) {
  return config.find("DYNAMIC_ARCH") != std::string::npos;
}

}  // namespace

bool CpuInfo::has(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

CpuInfo parse_cpuinfo(std::string_view cpuinfo) {
  CpuInfo info;
  bool vendor_read = false, flags_read = false;
  std::istringstream lines{std::string(cpuinfo)};
  std::string line;
  // "key<tabs>: value"; the first processor's lines come first, and it is the one read.
  while (std::getline(lines, line) && !(vendor_read && flags_read)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    std::istringstream value(line.substr(colon + 1));
    if (key == "vendor_id" && !vendor_read) {
      value >> info.vendor;
      vendor_read = true;
    } else if (key == "flags" && !flags_read) {
      info.flags.assign(std::istream_iterator<std::string>(value), {});
      flags_read = true;
    }
  }
  return info;
}

CpuInfo read_cpuinfo() {
  std::ifstream file("/proc/cpuinfo");
  if (!file) return {};
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return parse_cpuinfo(text);
}

std::string best_openblas_core(const CpuInfo& cpu) {
  const auto all = [&](std::initializer_list<const char*> flags) {
    return std::all_of(flags.begin(), flags.end(), [&](const char* f) { return cpu.has(f); });
  };
  // OpenBLAS's AVX-512 kernels use F, CD, BW, DQ and VL (every AVX-512 CPU since Skylake
  // server has them); Cooperlake's add bfloat16.
  if (all({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"})) {
    return cpu.has("avx512_bf16") ? "Cooperlake" : "SkylakeX";
  }
  if (all({"avx2", "fma"})) {
    const bool amd = cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine";
    return amd ? "Zen" : "Haswell";
  }
  if (cpu.has("avx")) return "Sandybridge";
  if (cpu.has("sse4_2")) return "Nehalem";
  if (cpu.has("ssse3")) return "Core2";
  if (cpu.has("pni")) return "Prescott";  // /proc/cpuinfo calls SSE3 "pni"
  return "";
}

int openblas_core_level(std::string_view core) {
  for (const CoreLevel& c : kCoreLevels) {
    if (same_name(core, c.core)) return c.level;
  }
  return 0;
}

std::string openblas_core_advice(const CpuInfo& cpu, const OpenblasBuild& build,
                                 std::string_view coretype) {
  const std::string best = best_openblas_core(cpu);
  const int chosen_level = openblas_core_level(build.core);
  const int best_level = openblas_core_level(best);
  if (best.empty() || chosen_level == 0 || chosen_level >= best_level) return "";
  if (!coretype.empty() && same_name(coretype, build.core)) return "";  // chosen on purpose

  const std::string library = library_name(build.config);
  std::string line = "towers: warning: " + library + " runs its " + build.core + " kernels (" +
                     level_name(chosen_level) + ") on a CPU with " + level_name(best_level) +
                     " (" + best + "'s kernels), so the host's matrix products are slower than "
                     "this CPU allows: ";
  if (!picks_at_load(build.config)) {
    return line + "this library was built for " + build.core + " only (no DYNAMIC_ARCH), and "
                  "OPENBLAS_CORETYPE cannot change that; install one built for every CPU "
                  "(Debian's libopenblas0-pthread) or for this one";
  }
  if (!coretype.empty()) {
    return line + "OPENBLAS_CORETYPE=" + std::string(coretype) + " names no kernels of "
                  "this library; set OPENBLAS_CORETYPE=" + best + " instead";
  }
  return line + "most likely this library is older than the CPU and does not know its "
                "model; set OPENBLAS_CORETYPE=" + best + " in the environment (scripts/env.sh "
                "does it)";
}

OpenblasBuild loaded_openblas() {
  const char* core = openblas_get_corename();
  const char* config = openblas_get_config();
  return {core != nullptr ? core : "", config != nullptr ? config : ""};
}

const std::string& openblas_core_advice_here() {
  static const std::string advice = [] {
    const char* coretype = std::getenv("OPENBLAS_CORETYPE");
    return openblas_core_advice(read_cpuinfo(), loaded_openblas(),
                                coretype != nullptr ? coretype : "");
  }();
  return advice;
}

void warn_once_if_openblas_core_is_below_the_cpu() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string& advice = openblas_core_advice_here();
    if (!advice.empty()) std::fprintf(stderr, "%s\n", advice.c_str());
  });
}

}  // namespace towers::host
