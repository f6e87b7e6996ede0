# SPDX-License-Identifier: MIT
# The `tutorial` target: only the programs scripts/tutorial runs, read from
# scripts/tutorial.chapters (its first column), so that the first run compiles no test,
# grader, benchmark or fuzzer. scripts/tutorial builds it; `all` (scripts/test) builds
# everything.
#
#   cmake --build build --target tutorial
#
# A program of the list that is not a target here (chapter 5 without MPI) is left out
# with a status line, as the tutorial skips it with a line of its own.
set(towers_tutorial_list ${PROJECT_SOURCE_DIR}/scripts/tutorial.chapters)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${towers_tutorial_list})
file(STRINGS ${towers_tutorial_list} towers_tutorial_lines)
set(towers_tutorial_programs)
foreach(line IN LISTS towers_tutorial_lines)
  if(line MATCHES "^[ \t]*([A-Za-z0-9_]+)[ \t]*\\|")
    set(program ${CMAKE_MATCH_1})
    if(TARGET ${program})
      list(APPEND towers_tutorial_programs ${program})
    elseif(NOT program IN_LIST towers_tutorial_missing)
      list(APPEND towers_tutorial_missing ${program})
      message(STATUS "towers: tutorial target without ${program} (not built in this "
                     "configuration); scripts/tutorial skips it")
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES towers_tutorial_programs)
if(NOT towers_tutorial_programs)
  message(FATAL_ERROR "cmake/TowersTutorial.cmake: no program of ${towers_tutorial_list} "
                      "is a target")
endif()
add_custom_target(tutorial DEPENDS ${towers_tutorial_programs})
