# SPDX-License-Identifier: MIT
# ctest -L docs: do the built docs show what this build's programs print?
#
#   cmake -DGENERATED_DIR=build/docs/generated -DHTML_DIR=build/docs/html -P check_fresh.cmake
#
# The docs target runs each program and writes NAME.txt, NAME.svg and NAME.stamp
# (docs/run_program.cmake); the stamp holds the SHA-256 of the binary that ran and a
# run id taken from the output. The pages print the run id under every output. So the
# HTML shows this build's runs when, for every stamp:
#   1. the binary it names is, byte for byte, the one that ran (else the chapter was
#      rebuilt after the docs: rebuild the docs);
#   2. NAME.txt and NAME.svg are the files the run wrote;
#   3. some page of the HTML names the run id, and its copy of NAME.svg is the one the
#      run wrote (else Sphinx did not rebuild after the run).
# Prints "docs not built" and exits 0 when there is no HTML; ctest reports that as skipped.
if(NOT EXISTS ${HTML_DIR}/index.html OR NOT IS_DIRECTORY ${GENERATED_DIR})
  message("docs not built: build the `docs` target to check them")
  return()
endif()
file(GLOB stamps ${GENERATED_DIR}/*.stamp)
if(NOT stamps)
  message(FATAL_ERROR "no stamps in ${GENERATED_DIR}: the docs show no program output")
endif()
file(GLOB_RECURSE pages ${HTML_DIR}/*.html)
set(html "")
foreach(page ${pages})
  file(READ ${page} text)
  string(APPEND html "${text}")
endforeach()

set(failures "")
foreach(stamp ${stamps})
  unset(s_svg_sha256)  # absent for a run without a trace (towers_docs_output NO_TRACE)
  unset(s_json_sha256)
  file(STRINGS ${stamp} lines)
  foreach(line ${lines})
    if(line MATCHES "^([a-z_0-9]+)=(.*)$")
      set(s_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  set(name ${s_name})
  if(NOT EXISTS ${s_program})
    string(APPEND failures "${name}: ${s_program} no longer exists\n")
    continue()
  endif()
  file(SHA256 ${s_program} program_sha)
  if(NOT program_sha STREQUAL s_program_sha256)
    string(APPEND failures "${name}: ${s_program} changed since the docs ran it; "
                           "rebuild them: cmake --build <build> --target docs\n")
  endif()
  file(SHA256 ${GENERATED_DIR}/${name}.txt txt_sha)
  set(svg_sha "")
  if(DEFINED s_svg_sha256)
    file(SHA256 ${GENERATED_DIR}/${name}.svg svg_sha)
  endif()
  if(NOT txt_sha STREQUAL s_txt_sha256 OR NOT "${svg_sha}" STREQUAL "${s_svg_sha256}")
    string(APPEND failures "${name}: ${name}.txt or ${name}.svg is not what the run wrote\n")
  endif()
  string(FIND "${html}" "${s_run_id}" at)
  if(at EQUAL -1)
    string(APPEND failures "${name}: no page shows run ${s_run_id}; the HTML predates the run\n")
  endif()
  if(NOT DEFINED s_svg_sha256)  # a run without a trace: its output is all a page shows
    message("${name}: run ${s_run_id} of ${s_command} (commit ${s_commit}, ${s_time})")
    continue()
  endif()
  # A page shows the run's picture either as the program's own SVG (copied to _images/)
  # or as a figure drawn from its trace (NAME.json), which carries the trace's SHA-256.
  file(GLOB_RECURSE copies ${HTML_DIR}/_images/${name}*.svg)
  set(copied FALSE)
  foreach(copy ${copies})
    file(SHA256 ${copy} copy_sha)
    if(copy_sha STREQUAL s_svg_sha256)
      set(copied TRUE)
    endif()
  endforeach()
  set(drawn FALSE)
  if(DEFINED s_json_sha256 AND EXISTS ${GENERATED_DIR}/${name}.json)
    file(SHA256 ${GENERATED_DIR}/${name}.json json_sha)
    if(NOT json_sha STREQUAL s_json_sha256)
      string(APPEND failures "${name}: ${name}.json is not what the run wrote\n")
    endif()
    string(FIND "${html}" "${s_json_sha256}" json_at)
    if(NOT json_at EQUAL -1)
      set(drawn TRUE)
    endif()
  endif()
  if(NOT copied AND NOT drawn)
    string(APPEND failures "${name}: the HTML shows neither this run's ${name}.svg nor a "
                           "figure drawn from its trace\n")
  endif()
  message("${name}: run ${s_run_id} of ${s_command} (commit ${s_commit}, ${s_time})")
endforeach()
if(failures)
  message(FATAL_ERROR "the docs do not show this build's runs:\n${failures}")
endif()
message("the docs show this build's runs")
