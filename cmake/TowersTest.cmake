# SPDX-License-Identifier: MIT
# towers_add_test(<name> SOURCES a.cpp ... LIBS lib ... LABELS label)
# One label: gtest_discover_tests cannot pass a list-valued property through.
# One GoogleTest executable, its tests discovered one by one and labelled so that
# `ctest -L runtime` runs one area.
function(towers_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  towers_set_warnings(${name})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  gtest_discover_tests(${name} PROPERTIES LABELS "${T_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()
