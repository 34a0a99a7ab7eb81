# cmake/build_info.cmake — run at every build (cmake -P): writes the commit that `graphrun --version`
# prints into a header, and rewrites it only when the text changes, so nothing recompiles otherwise.
#   -DSOURCE_DIR=<checkout> -DOUTPUT=<header> -DGIT_EXECUTABLE=<git, or empty>
# The commit is "unknown" outside a git checkout (a source tarball), or when git is not installed.
cmake_minimum_required(VERSION 3.25)
set(commit "unknown")
if(GIT_EXECUTABLE)
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --show-toplevel
                  WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE failed
                  OUTPUT_VARIABLE toplevel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  # Only this project's own checkout counts, not a repository that happens to contain the sources.
  if(NOT failed)
    file(REAL_PATH "${toplevel}" toplevel)
    file(REAL_PATH "${SOURCE_DIR}" source)
  endif()
  if(NOT failed AND toplevel STREQUAL source)
    execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
                    WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE failed
                    OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT failed)
      set(commit "${head}")
      execute_process(COMMAND "${GIT_EXECUTABLE}" status --porcelain --untracked-files=no
                      WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE changes ERROR_QUIET)
      if(changes)
        string(APPEND commit " (with uncommitted changes)")
      endif()
    endif()
  endif()
endif()

set(text "// Written by cmake/build_info.cmake at build time; do not edit.\n#define GRAPHRUN_COMMIT \"${commit}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUTPUT}" "${text}")
endif()
