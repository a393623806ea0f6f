# The git commit `oe --version` prints, kept out of every file but the one that prints it.
#
# Included from a CMakeLists.txt: oe_build_commit_header(<target> <dir>) adds a step that runs on
# every build and writes <dir>/oe/build_commit.hpp, rewriting it only when the commit (or the
# tree's dirty state) changed. Only host/src/oe/main.cpp includes it, and Ninja's restat of the
# step's byproduct means a build at an unchanged commit recompiles nothing, and a new commit
# recompiles main.cpp and relinks `oe` alone.
#
# Run as a script (cmake -P, what that step does), with OE_SOURCE_DIR, OE_OUTPUT and, when git was
# found, OE_GIT: it asks git for `describe --always --dirty` when OE_SOURCE_DIR is the top of a git
# checkout (a worktree too), and writes "unknown" otherwise (a source tarball, even one unpacked
# inside some other repository; no git installed).

if(CMAKE_SCRIPT_MODE_FILE)
  set(_commit "unknown")
  if(OE_GIT)
    execute_process(COMMAND "${OE_GIT}" -C "${OE_SOURCE_DIR}" rev-parse --show-toplevel
                    OUTPUT_VARIABLE _top OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE _top_status ERROR_QUIET)
    if(_top_status EQUAL 0)
      file(REAL_PATH "${_top}" _top)
      file(REAL_PATH "${OE_SOURCE_DIR}" _source)
      if(_top STREQUAL _source)
        execute_process(COMMAND "${OE_GIT}" -C "${OE_SOURCE_DIR}" describe --always --dirty
                        OUTPUT_VARIABLE _described OUTPUT_STRIP_TRAILING_WHITESPACE
                        RESULT_VARIABLE _described_status ERROR_QUIET)
        # A C++ string literal holds it: keep only what git's names are made of.
        if(_described_status EQUAL 0 AND _described MATCHES "^[A-Za-z0-9._+-]+$")
          set(_commit "${_described}")
        endif()
      endif()
    endif()
  endif()
  # file(CONFIGURE) leaves the file (and its timestamp) alone when the text is the same.
  file(CONFIGURE OUTPUT "${OE_OUTPUT}" CONTENT [=[
// Generated at build time by cmake/OeBuildCommit.cmake: the commit `oe` was built from.
// Included by host/src/oe/main.cpp only, so a new commit recompiles that file alone.
#pragma once

#include <string_view>

namespace oe {
inline constexpr std::string_view kBuildCommit = "@_commit@";
}  // namespace oe
]=] @ONLY)
  return()
endif()

find_package(Git QUIET)

function(oe_build_commit_header target dir)
  set(_header "${dir}/oe/build_commit.hpp")
  set(_git "")
  if(GIT_EXECUTABLE)
    set(_git "${GIT_EXECUTABLE}")
  endif()
  add_custom_target(${target}_build_commit
    COMMAND "${CMAKE_COMMAND}" "-DOE_SOURCE_DIR=${PROJECT_SOURCE_DIR}" "-DOE_OUTPUT=${_header}"
            "-DOE_GIT=${_git}" -P "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
    BYPRODUCTS "${_header}"
    COMMENT "Checking the git commit oe is built from"
    VERBATIM)
  add_dependencies(${target} ${target}_build_commit)
  target_include_directories(${target} PRIVATE "${dir}")
endfunction()
