# SPDX-License-Identifier: MIT
# towers_find_nccl(): NCCL for the cuda backend, as the imported target NCCL::nccl.
#
# Looked for beside the CUDA toolkit and in the system's folders, where libnccl-dev puts
# nccl.h and the development link libnccl.so; then in NCCL's pip wheel (nvidia-nccl-cu12
# or -cu13, under site-packages/nvidia/nccl/{include,lib}), as a machine with PyTorch has
# it. The wheel ships only the runtime library, libnccl.so.2, and no libnccl.so, so that
# name is accepted too, after the development link. -DNCCL_ROOT=<folder holding include/
# and lib/> names any other place. Sets NCCL_INCLUDE_DIR and NCCL_LIBRARY (cached), and
# fails configuration, saying what to install, when either is missing.
function(towers_nccl_wheel_dir out)
  set(${out} "" PARENT_SCOPE)
  find_program(TOWERS_PYTHON3 NAMES python3)
  if(NOT TOWERS_PYTHON3)
    return()
  endif()
  # nvidia is a namespace package: nvidia.nccl's folder is the first of its __path__.
  execute_process(
    COMMAND "${TOWERS_PYTHON3}" -c "import nvidia.nccl as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
  if(NOT failed AND IS_DIRECTORY "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  endif()
endfunction()

function(towers_find_nccl)
  towers_nccl_wheel_dir(wheel)
  set(include_hints ${CUDAToolkit_INCLUDE_DIRS})
  set(library_hints ${CUDAToolkit_LIBRARY_DIR})
  if(NCCL_ROOT)
    list(PREPEND include_hints "${NCCL_ROOT}/include")
    list(PREPEND library_hints "${NCCL_ROOT}/lib")
  endif()
  # The wheel last: a system NCCL, when there is one, is the one the toolkit was meant for.
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${include_hints} PATHS "${wheel}/include")
  # Each name in every folder before the next name: libnccl.so wherever it is, else .so.2.
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${library_hints} PATHS "${wheel}/lib")
  if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
    message(FATAL_ERROR "towers: CUDA found but NCCL is missing (nccl.h: ${NCCL_INCLUDE_DIR}; "
                        "library: ${NCCL_LIBRARY}). Install NCCL (libnccl-dev, or pip install "
                        "nvidia-nccl-cu12), point -DNCCL_ROOT= at a folder with include/nccl.h "
                        "and lib/libnccl.so*, or configure with -DTOWERS_CUDA=OFF for a "
                        "host-only build.")
  endif()
  if(NCCL_LIBRARY MATCHES "\\.so\\.[0-9]+$")
    message(STATUS "towers: NCCL from ${NCCL_LIBRARY} (no libnccl.so development link; "
                   "linked by its runtime name)")
  endif()
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endfunction()
