# SPDX-License-Identifier: MIT
# towers_add_test(<name> SOURCES a.cpp ... LIBS lib ... LABELS label [SERIAL])
# One label: gtest_discover_tests cannot pass a list-valued property through. SERIAL: its
# tests run alone (RUN_SERIAL), for tests that measure the whole device or machine.
# One GoogleTest executable, its tests discovered one by one and labelled so that
# `ctest -L runtime` runs one area.
function(towers_add_test name)
  cmake_parse_arguments(T "SERIAL" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  towers_set_warnings(${name})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  set(serial FALSE)
  if(T_SERIAL)
    set(serial TRUE)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${T_LABELS}" RUN_SERIAL ${serial}
                       DISCOVERY_TIMEOUT 60)
endfunction()
