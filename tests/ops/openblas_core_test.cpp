// SPDX-License-Identifier: MIT
// OpenBLAS's kernels checked against the CPU (kernels/host/openblas_core.hpp): the best
// core for each CPU of openblas_cores.tsv (the table scripts/env.sh is tested against
// too), the levels that make a choice "below", and the advice in every case: silent when
// the choice is right or made on purpose, one line with the fix when it is below.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/host/openblas_core.hpp"

namespace towers {
namespace {

using host::CpuInfo;
using host::OpenblasBuild;

// A CpuInfo with `vendor` and space-separated `flags`.
CpuInfo cpu(const std::string& vendor, const std::string& flags) {
  return host::parse_cpuinfo("vendor_id\t: " + vendor + "\nflags\t\t: " + flags + "\n");
}

struct CoreCase {
  std::string vendor, flags, expected, what;
};

// The rows of openblas_cores.tsv: vendor, flags, expected core, the CPU they stand for.
std::vector<CoreCase> core_cases() {
  std::ifstream file(TOWERS_OPENBLAS_CORES_TSV);
  std::vector<CoreCase> cases;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::istringstream in(line);
    for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
    fields.resize(4);
    cases.push_back({fields[0], fields[1], fields[2], fields[3]});
  }
  return cases;
}

TEST(OpenblasCore, ParsesTheFirstProcessorsVendorAndFlags) {
  const CpuInfo info = host::parse_cpuinfo(
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n"
      "flags\t\t: fpu sse2 avx2 avx512f\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\n"
      "flags\t\t: fpu\n");
  EXPECT_EQ(info.vendor, "AuthenticAMD");
  EXPECT_EQ(info.flags, (std::vector<std::string>{"fpu", "sse2", "avx2", "avx512f"}));
  EXPECT_TRUE(info.has("avx512f"));
  EXPECT_FALSE(info.has("avx512"));  // whole flags only
  const CpuInfo none = host::parse_cpuinfo("");
  EXPECT_TRUE(none.vendor.empty());
  EXPECT_TRUE(none.flags.empty());
}

TEST(OpenblasCore, EachCpuOfTheTableGetsItsBestCore) {
  const std::vector<CoreCase> cases = core_cases();
  ASSERT_GE(cases.size(), 10u) << "read too few cases from " << TOWERS_OPENBLAS_CORES_TSV;
  for (const CoreCase& c : cases) {
    EXPECT_EQ(host::best_openblas_core(cpu(c.vendor, c.flags)), c.expected) << c.what;
  }
}

TEST(OpenblasCore, LevelsOrderTheInstructionSetsAndPairTheTwins) {
  EXPECT_LT(host::openblas_core_level("Prescott"), host::openblas_core_level("Nehalem"));
  EXPECT_LT(host::openblas_core_level("Nehalem"), host::openblas_core_level("Sandybridge"));
  EXPECT_LT(host::openblas_core_level("Sandybridge"), host::openblas_core_level("Haswell"));
  EXPECT_LT(host::openblas_core_level("Haswell"), host::openblas_core_level("SkylakeX"));
  EXPECT_EQ(host::openblas_core_level("Haswell"), host::openblas_core_level("Zen"));
  EXPECT_EQ(host::openblas_core_level("SkylakeX"), host::openblas_core_level("Cooperlake"));
  EXPECT_EQ(host::openblas_core_level("cooperlake"), host::openblas_core_level("Cooperlake"));
  EXPECT_EQ(host::openblas_core_level("Neoversen1"), 0);  // not x86-64: never judged
  // Every core the table expects has a level, or it could never be compared.
  for (const CoreCase& c : core_cases()) {
    if (!c.expected.empty()) {
      EXPECT_GT(host::openblas_core_level(c.expected), 0) << c.expected;
    }
  }
}

constexpr const char* kDynamic = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Cooperlake";
constexpr const char* kOneTarget = "OpenBLAS 0.3.21 NO_LAPACKE NO_AFFINITY HASWELL";

struct AdviceCase {
  const char* what;
  CpuInfo cpu;
  OpenblasBuild build;
  const char* coretype;                // OPENBLAS_CORETYPE, "" when unset
  std::vector<std::string> says;       // all in the line; empty: no line at all
};

TEST(OpenblasCore, AdvisesOnlyWhenTheChosenKernelsAreBelowTheCpu) {
  const CpuInfo epyc = cpu("AuthenticAMD", "sse2 pni ssse3 fma sse4_2 avx avx2 avx512f "
                                           "avx512dq avx512cd avx512bw avx512vl avx512_bf16");
  const CpuInfo haswell = cpu("GenuineIntel", "sse2 pni ssse3 fma sse4_2 avx avx2");
  const std::vector<AdviceCase> cases = {
      {"the right kernels", epyc, {"Cooperlake", kDynamic}, "", {}},
      {"the twin of the right kernels", epyc, {"SkylakeX", kDynamic}, "", {}},
      {"AVX2's twin", haswell, {"Zen", kDynamic}, "", {}},
      {"kernels above the table's best (read more than the flags say)", haswell,
       {"SkylakeX", kDynamic}, "", {}},
      {"a core this table does not know", epyc, {"Zen7", kDynamic}, "", {}},
      {"nothing read of the CPU", CpuInfo{}, {"Prescott", kDynamic}, "", {}},
      {"below, chosen on purpose (CI's Haswell run)", epyc, {"Haswell", kDynamic}, "haswell",
       {}},
      {"a new CPU the library falls back from", epyc, {"Prescott", kDynamic}, "",
       {"towers: warning: OpenBLAS 0.3.21 runs its Prescott kernels (SSE3)",
        "AVX-512 (Cooperlake's kernels)", "OPENBLAS_CORETYPE=Cooperlake", "scripts/env.sh",
        "older than the CPU"}},
      {"AVX2 CPU given AVX kernels", haswell, {"Sandybridge", kDynamic}, "",
       {"Sandybridge kernels (AVX)", "AVX2 (Haswell's kernels)", "OPENBLAS_CORETYPE=Haswell"}},
      {"a name OPENBLAS_CORETYPE gave that the library lacks", epyc, {"Haswell", kDynamic},
       "SkyLake", {"OPENBLAS_CORETYPE=SkyLake names no kernels", "OPENBLAS_CORETYPE=Cooperlake"}},
      {"a library built for one target", epyc, {"Haswell", kOneTarget}, "",
       {"built for Haswell only", "no DYNAMIC_ARCH", "libopenblas0-pthread"}},
  };
  for (const AdviceCase& c : cases) {
    const std::string advice = host::openblas_core_advice(c.cpu, c.build, c.coretype);
    if (c.says.empty()) {
      EXPECT_EQ(advice, "") << c.what;
      continue;
    }
    EXPECT_EQ(advice.find('\n'), std::string::npos) << c.what << ": one line";
    for (const std::string& part : c.says) {
      EXPECT_NE(advice.find(part), std::string::npos) << c.what << ": no '" << part << "' in\n"
                                                      << advice;
    }
  }
}

// This machine: the library answers, and the advice, if any, names its own fix.
TEST(OpenblasCore, TheLoadedLibraryNamesItsKernels) {
  const OpenblasBuild build = host::loaded_openblas();
  EXPECT_FALSE(build.core.empty());
  EXPECT_NE(build.config.find("OpenBLAS"), std::string::npos) << build.config;
  const std::string& advice = host::openblas_core_advice_here();
  if (!advice.empty()) {
    EXPECT_NE(advice.find("OPENBLAS_CORETYPE"), std::string::npos) << advice;
  }
}

}  // namespace
}  // namespace towers
