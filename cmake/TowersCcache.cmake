# SPDX-License-Identifier: MIT
# Uses ccache for C++ and CUDA when it is installed and no launcher was chosen already
# (-DCMAKE_CXX_COMPILER_LAUNCHER=... or the environment variable of that name wins).
# The cache is keyed on paths relative to this source tree (CCACHE_BASEDIR) and ignores
# the build folder's name (CCACHE_NOHASHDIR), so a second clone of the same commit, or
# CI's fresh clone on a machine that built before, compiles almost nothing. Off with
# -DTOWERS_CCACHE=OFF. Results are identical: ccache hands back the same object files.
option(TOWERS_CCACHE "Use ccache when it is installed" ON)
find_program(TOWERS_CCACHE_PROGRAM ccache)
if(TOWERS_CCACHE AND TOWERS_CCACHE_PROGRAM)
  set(towers_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}
                      CCACHE_NOHASHDIR=1 ${TOWERS_CCACHE_PROGRAM})
  foreach(lang CXX CUDA)
    if(NOT DEFINED CMAKE_${lang}_COMPILER_LAUNCHER AND NOT DEFINED ENV{CMAKE_${lang}_COMPILER_LAUNCHER})
      set(CMAKE_${lang}_COMPILER_LAUNCHER ${towers_launcher})
    endif()
  endforeach()
  message(STATUS "towers: compiling through ccache (${TOWERS_CCACHE_PROGRAM}); -DTOWERS_CCACHE=OFF turns it off")
endif()
