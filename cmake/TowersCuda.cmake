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
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
      message(FATAL_ERROR "towers: CUDA found but NCCL is missing. Install NCCL (libnccl-dev) "
                          "or configure with -DTOWERS_CUDA=OFF for a host-only build.")
    endif()
    add_library(NCCL::nccl UNKNOWN IMPORTED)
    set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    set(TOWERS_HAVE_CUDA ON)
  elseif(TOWERS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "towers: TOWERS_CUDA=ON but no CUDA compiler was found. Install the "
                        "CUDA toolkit (nvcc on PATH or -DCMAKE_CUDA_COMPILER=...) or use "
                        "-DTOWERS_CUDA=AUTO/OFF.")
  endif()
endif()
