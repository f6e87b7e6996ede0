# SPDX-License-Identifier: MIT
# Runs one program for the docs (cmake -P; see towers_docs_output in docs/CMakeLists.txt):
#
#   PROGRAM --backend host ARGS --trace OUT_DIR/NAME.json --trace-svg OUT_DIR/NAME.svg
#     >  OUT_DIR/NAME.txt
#
# and writes OUT_DIR/NAME.stamp, one key=value a line, saying where the output came from:
# the command, the SHA-256 of the binary that ran, the git commit and the time. The pages
# print the stamp under the output; tests/docs/check_fresh.cmake compares it with the
# binary in build/bin and with the HTML, so a stale page fails `ctest -L docs`.
foreach(var NAME PROGRAM OUT_DIR SOURCE_DIR BINARY_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_program.cmake: -D${var}=... is required")
  endif()
endforeach()
# ARGS may hold {RUN.key}: the value another docs run (RUN, run before this one) printed
# for key on its last summary line, e.g. --link-gbps {06_link.link_gbps}: two runs that
# must share a setting this machine chose (docs/CMakeLists.txt adds the dependency).
string(REGEX MATCHALL "{[A-Za-z0-9_]+\\.[a-z0-9_]+}" refs "${ARGS}")
foreach(ref IN LISTS refs)
  string(REGEX REPLACE "^{([A-Za-z0-9_]+)\\.([a-z0-9_]+)}$" "\\1" ref_run "${ref}")
  string(REGEX REPLACE "^{([A-Za-z0-9_]+)\\.([a-z0-9_]+)}$" "\\2" ref_key "${ref}")
  file(STRINGS ${OUT_DIR}/${ref_run}.txt ref_lines REGEX "^summary: ")
  list(GET ref_lines -1 ref_last)
  if(NOT " ${ref_last} " MATCHES " ${ref_key}=([^ ]+) ")
    message(FATAL_ERROR "docs: ${NAME}'s ${ref} names ${ref_key}, which ${ref_run} does not print")
  endif()
  string(REPLACE "${ref}" "${CMAKE_MATCH_1}" ARGS "${ARGS}")
endforeach()
separate_arguments(args UNIX_COMMAND "${ARGS}")
# LAUNCHER (optional): what starts the program, e.g. "mpiexec -n 2" for chapter 5's ranks.
separate_arguments(launcher UNIX_COMMAND "${LAUNCHER}")
file(MAKE_DIRECTORY ${OUT_DIR})
set(txt ${OUT_DIR}/${NAME}.txt)
set(svg ${OUT_DIR}/${NAME}.svg)
set(json ${OUT_DIR}/${NAME}.json)
file(REMOVE ${txt} ${svg} ${json} ${OUT_DIR}/${NAME}.stamp)

# NO_TRACE (optional): no trace files, for a long run whose pages show only its output.
set(trace_args --trace ${json} --trace-svg ${svg})
if(NO_TRACE)
  set(trace_args)
endif()
# NO_BACKEND (optional): a program with one backend and no --backend flag (chapter 11).
set(backend_args --backend host)
if(NO_BACKEND)
  set(backend_args)
endif()
string(JOIN " " shown_backend ${backend_args} "")  # "--backend host " or ""
# How busy the machine was as the run started (1-minute load average, cores): timings
# taken while other work ran say nothing about the lesson, and numbers_check.py says so.
file(STRINGS /proc/loadavg loadavg LIMIT_COUNT 1)
string(REGEX MATCH "^[0-9.]+" load_before "${loadavg}")
cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
execute_process(
  COMMAND ${launcher} ${PROGRAM} ${backend_args} ${args} ${trace_args}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "docs: ${PROGRAM} ${shown_backend}${ARGS} failed (${rc}):\n${out}${err}")
endif()
if(NOT out MATCHES "summary: ")
  message(FATAL_ERROR "docs: ${PROGRAM} printed no `summary:` line; every program ends with one")
endif()
if(NOT NO_TRACE AND NOT EXISTS ${svg})
  message(FATAL_ERROR "docs: ${PROGRAM} wrote no SVG timeline to ${svg}")
endif()
# "trace: wrote /abs/path/NAME.svg": the page shows the file name, not this machine's path.
# The same for the data folder: the reader's cache is ~/.cache, not this machine's home.
if(DEFINED ENV{HOME} AND NOT "$ENV{HOME}" STREQUAL "")
  string(REPLACE "$ENV{HOME}/" "~/" out "${out}")
endif()
string(REPLACE "${OUT_DIR}/" "" out "${out}")
file(WRITE ${txt} "${out}")

# The command as typed from the checkout's root (build/bin/NAME), when the build is in it.
file(RELATIVE_PATH shown_program ${SOURCE_DIR} ${PROGRAM})
if(shown_program MATCHES "^\\.\\./")
  file(RELATIVE_PATH shown_program ${BINARY_DIR} ${PROGRAM})
endif()
set(shown_launcher "")
if(launcher)
  list(GET launcher 0 launcher_program)
  get_filename_component(launcher_name ${launcher_program} NAME)  # mpiexec, not its path
  list(SUBLIST launcher 1 -1 launcher_args)
  list(FILTER launcher_args EXCLUDE REGEX "^--allow-run-as-root$")  # this machine's detail
  string(JOIN " " shown_launcher ${launcher_name} ${launcher_args})
  string(APPEND shown_launcher " ")
endif()
execute_process(COMMAND git -C ${SOURCE_DIR} describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE git_rc)
if(NOT git_rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown (no git)")
endif()
string(TIMESTAMP now "%Y-%m-%d %H:%M:%S UTC" UTC)
file(SHA256 ${PROGRAM} binary_sha)
file(SHA256 ${txt} txt_sha)
string(SUBSTRING ${txt_sha} 0 12 run_id)
set(shown_trace " --trace ${NAME}.json --trace-svg ${NAME}.svg")
set(trace_stamp "")
if(NO_TRACE)  # no svg_sha256 in the stamp: check_fresh.cmake looks for no picture
  set(shown_trace "")
else()
  file(SHA256 ${svg} svg_sha)
  file(SHA256 ${json} json_sha)
  set(trace_stamp "svg_sha256=${svg_sha}\njson_sha256=${json_sha}\n")
endif()
file(WRITE ${OUT_DIR}/${NAME}.stamp
"name=${NAME}
command=${shown_launcher}${shown_program} ${shown_backend}${ARGS}${shown_trace}
program=${PROGRAM}
program_sha256=${binary_sha}
txt_sha256=${txt_sha}
${trace_stamp}run_id=${run_id}
commit=${commit}
time=${now}
load_before=${load_before}
cores=${cores}
")
