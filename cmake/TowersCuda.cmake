# SPDX-License-Identifier: MIT
# Decides whether the CUDA backend is built. AUTO builds it when nvcc is found, so a
# machine without the CUDA toolkit still gets a complete host-only tree.
set(TOWERS_HAVE_CUDA OFF)
if(NOT TOWERS_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # 90: H100/H200. 75: an older arch (Turing) so the default build also runs on
    # common classroom GPUs. Override with -DCMAKE_CUDA_ARCHITECTURES=...
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 75 90)
    endif()
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    include(${CMAKE_CURRENT_LIST_DIR}/TowersNccl.cmake)
    towers_find_nccl()  # NCCL::nccl, from the system or NCCL's pip wheel
    set(TOWERS_HAVE_CUDA ON)
  elseif(TOWERS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "towers: TOWERS_CUDA=ON but no CUDA compiler was found. Install the "
                        "CUDA toolkit (nvcc on PATH or -DCMAKE_CUDA_COMPILER=...) or use "
                        "-DTOWERS_CUDA=AUTO/OFF.")
  endif()
endif()
