# oe_cold_code(<target>...): builds oe's own code that is off the engine's per-node path at -O1 in
# a Release build, where the rest is -O2 (OE_COLD_CODE_O1, ON by default).
#
# Why: the README's first command builds oe from nothing on the user's machine, and most of that
# time is GCC's optimiser over template-heavy code that waits on people, sockets, subprocesses or
# an LLM: argument parsing (CLI11), the HTTP server (Boost.Beast, two stream types), the
# dashboard's API, reports, drafting, the MCP server, the LLM clients. -O1 keeps inlining of small
# functions and the cheap passes and drops the expensive ones; on 2 cores the release build of oe
# and its plugins takes ~19% less CPU (docs/performance.md, "Build time"). The engine (spec, state,
# events, cache, plugins host, run, worker, secrets' redaction, telemetry) and the tool, dataset
# and experience kinds stay at -O2: the 10,000-node benchmark exercises them, `oe serve`'s load
# benchmark the rest, and both are quoted before and after in the same section.
# Debug, sanitizer and fuzz builds are unaffected (they set their own level for everything).
option(OE_COLD_CODE_O1 "Build code off the engine's hot path at -O1 in Release builds" ON)

function(oe_cold_code)
  if(NOT OE_COLD_CODE_O1)
    return()
  endif()
  foreach(_target IN LISTS ARGN)
    # After CMAKE_<LANG>_FLAGS_RELEASE on the command line, so this level wins for the target.
    target_compile_options(${_target} PRIVATE $<$<CONFIG:Release>:-O1>)
  endforeach()
endfunction()
