// SPDX-License-Identifier: MIT
// Which kernels OpenBLAS chose for the matrix products, and whether the CPU deserves better.
//
// OpenBLAS carries one set of kernels per CPU generation ("core": Prescott, Sandybridge,
// Haswell, SkylakeX, Cooperlake, ...) and picks one when it loads, from the CPU's model
// number. A release older than the CPU may not know the model and fall back to kernels
// for a far older one (OpenBLAS's tracker has such reports); the host step then runs
// several times slower than the machine allows, and nothing says why. So the first host
// product of every program (blas.cpp) asks the library which core it chose, reads the
// CPU's instruction sets from /proc/cpuinfo, and when the chosen core's instruction set
// is below what the CPU has, says so once on stderr, with the fix: OPENBLAS_CORETYPE,
// which OpenBLAS reads when it loads (scripts/env.sh sets it where that is safe).
//
// Cores are compared by instruction-set level, not by name: Haswell and Zen are both
// AVX2 with FMA, SkylakeX and Cooperlake both AVX-512 (Cooperlake adds bfloat16, which
// towers does not use), so a library that picks either of a pair is not told off. x86-64
// only: elsewhere nothing is read and nothing is said.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace towers::host {

/// What the kernel tells of the CPU in /proc/cpuinfo: the first processor's vendor and
/// its flags (the features the CPU has and the operating system enabled).
struct CpuInfo {
  std::string vendor;               ///< vendor_id: "GenuineIntel", "AuthenticAMD"; "" if unread
  std::vector<std::string> flags;  ///< "avx2", "fma", "avx512f", "pni" (SSE3), ...

  /// Whether `flag` is among the flags.
  bool has(std::string_view flag) const;
};

/// The vendor_id and flags of the first processor listed in `cpuinfo` (the text of
/// /proc/cpuinfo); empty fields for lines that are missing.
CpuInfo parse_cpuinfo(std::string_view cpuinfo);

/// This machine's CpuInfo, read from /proc/cpuinfo; empty where it cannot be read.
CpuInfo read_cpuinfo();

/// The OpenBLAS core that fits `cpu` best, by instruction sets: Cooperlake (AVX-512 with
/// bfloat16), SkylakeX (AVX-512 F, CD, BW, DQ and VL), Zen (AVX2 and FMA, AMD or Hygon)
/// or Haswell (AVX2 and FMA, others), Sandybridge (AVX), Nehalem (SSE4.2), Core2 (SSSE3),
/// Prescott (SSE3); "" when the flags show none of these (nothing read, or not x86-64).
std::string best_openblas_core(const CpuInfo& cpu);

/// The instruction-set level of an OpenBLAS x86-64 core: 1 SSE2, 2 SSE3, 3 SSSE3,
/// 4 SSE4.2, 5 AVX, 6 AVX2, 7 AVX-512 (names compared without case); 0 for a name this
/// table does not know, which is never judged.
int openblas_core_level(std::string_view core);

/// The loaded OpenBLAS as it describes itself.
struct OpenblasBuild {
  std::string core;    ///< openblas_get_corename(): the kernels it chose, e.g. "Cooperlake"
  std::string config;  ///< openblas_get_config(): "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
};

/// The OpenBLAS this process loaded.
OpenblasBuild loaded_openblas();

/// One line for stderr when `build`'s core is below the best for `cpu`, saying so, why
/// and what to do; "" when it is not below, when either core is unknown, or when
/// `coretype` (the value of OPENBLAS_CORETYPE, "" if unset) named the chosen core: the
/// choice was made on purpose (CI runs the docs under Haswell's kernels so).
std::string openblas_core_advice(const CpuInfo& cpu, const OpenblasBuild& build,
                                 std::string_view coretype);

/// This process's advice (openblas_core_advice for this machine), computed once; "" for
/// none.
const std::string& openblas_core_advice_here();

/// Prints openblas_core_advice_here() on stderr, at most once per process. blas.cpp calls
/// it before the first product; a program that calls CBLAS itself (bench_train) calls it
/// before.
void warn_once_if_openblas_core_is_below_the_cpu();

}  // namespace towers::host
