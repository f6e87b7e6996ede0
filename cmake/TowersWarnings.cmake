# SPDX-License-Identifier: MIT
# One place for warning flags: -Wall -Wextra everywhere, errors when TOWERS_WERROR is on.
function(towers_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
    # GCC 12 at -O3 reports std::string concatenation as overlapping memcpy (GCC bug
    # 105329, a false positive); keep -Werror useful by silencing that one check.
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${TOWERS_WERROR}>>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${TOWERS_WERROR}>>:-Werror=all-warnings>)
endfunction()

# CUDA sources: C++20 (CMake 3.25 has no CUDA_STANDARD 20 for nvcc, so pass it directly).
# CMAKE_CXX_STANDARD_REQUIRED would make CMake demand a "CUDA20" dialect it cannot spell
# for nvcc, so CUDA targets do not require one and get -std=c++20 directly.
function(towers_cuda_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 --expt-relaxed-constexpr>)
  set_target_properties(${target} PROPERTIES CUDA_STANDARD_REQUIRED OFF)
endfunction()
