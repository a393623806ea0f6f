# The host's layering rule, checked (ctest: host_layering). docs/architecture.md ("Tiers") lists
# the modules of host/src/oe bottom to top, one tier per line; a module may include the headers
# of a lower tier, and of a module listed before it in its own tier, never of one above it. The
# rule is read from the doc itself so that the doc and the check cannot disagree.
#
#   cmake -DOE_SOURCE_DIR=<repo> -P check_layering.cmake
#
# Fails, naming the file and line, on: an include of a higher (or later same-tier) module, a
# module folder the tiers do not list, and a tier listing a folder that does not exist.
cmake_minimum_required(VERSION 3.20)

if(NOT OE_SOURCE_DIR)
  message(FATAL_ERROR "check_layering: pass -DOE_SOURCE_DIR=<the repository>")
endif()
set(_doc "${OE_SOURCE_DIR}/docs/architecture.md")
set(_src "${OE_SOURCE_DIR}/host/src/oe")

# The tier block: the lines between "<!-- tiers:begin -->" and "<!-- tiers:end -->", each
# "L<n>  module module ...".
file(READ "${_doc}" _text)
string(FIND "${_text}" "<!-- tiers:begin -->" _begin)
string(FIND "${_text}" "<!-- tiers:end -->" _end)
if(_begin EQUAL -1 OR _end EQUAL -1 OR _end LESS _begin)
  message(FATAL_ERROR "check_layering: ${_doc} has no <!-- tiers:begin --> ... "
                      "<!-- tiers:end --> block; restore the tier list there")
endif()
math(EXPR _len "${_end} - ${_begin}")
string(SUBSTRING "${_text}" ${_begin} ${_len} _block)
string(REPLACE "\n" ";" _lines "${_block}")

# rank(module) = tier * 100 + position in its tier: an include must go to a smaller rank.
set(_listed "")
foreach(_line IN LISTS _lines)
  if(_line MATCHES "^L([0-9]+)[ \t]+(.*)$")
    set(_tier ${CMAKE_MATCH_1})
    string(REGEX REPLACE "[ \t]+" ";" _mods "${CMAKE_MATCH_2}")
    set(_pos 0)
    foreach(_m IN LISTS _mods)
      if(_m STREQUAL "")
        continue()
      endif()
      math(EXPR _rank_${_m} "${_tier} * 100 + ${_pos}")
      set(_tier_${_m} ${_tier})
      list(APPEND _listed ${_m})
      math(EXPR _pos "${_pos} + 1")
    endforeach()
  endif()
endforeach()
if(NOT _listed)
  message(FATAL_ERROR "check_layering: the tier block of ${_doc} lists no module")
endif()

set(_problems "")
file(GLOB _dirs LIST_DIRECTORIES true RELATIVE "${_src}" "${_src}/*")
set(_modules "")
foreach(_d IN LISTS _dirs)
  if(IS_DIRECTORY "${_src}/${_d}")
    list(APPEND _modules ${_d})
    if(NOT DEFINED _rank_${_d})
      list(APPEND _problems
           "host/src/oe/${_d}/ is in no tier: add it to the tier list in docs/architecture.md")
    endif()
  endif()
endforeach()
foreach(_m IN LISTS _listed)
  if(NOT _m IN_LIST _modules)
    list(APPEND _problems
         "docs/architecture.md lists module `${_m}`, but host/src/oe/${_m}/ does not exist")
  endif()
endforeach()

foreach(_m IN LISTS _modules)
  if(NOT DEFINED _rank_${_m})
    continue()
  endif()
  file(GLOB_RECURSE _files "${_src}/${_m}/*.hpp" "${_src}/${_m}/*.cpp" "${_src}/${_m}/*.h")
  foreach(_f IN LISTS _files)
    file(STRINGS "${_f}" _incs REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]oe/[a-z_]+/")
    foreach(_inc IN LISTS _incs)
      string(REGEX MATCH "oe/([a-z_]+)/[^\">]*" _path "${_inc}")
      set(_to ${CMAKE_MATCH_1})
      # oe/cpp/ is the SDK's C++ glue, not a host module; only modules are ranked.
      if(_to STREQUAL _m OR NOT _to IN_LIST _modules)
        continue()
      endif()
      if(NOT DEFINED _rank_${_to})
        continue()  # reported above as a folder in no tier
      endif()
      if(NOT _rank_${_to} LESS _rank_${_m})
        file(RELATIVE_PATH _rel "${OE_SOURCE_DIR}" "${_f}")
        string(CONCAT _msg "${_rel}: includes ${_path}, but `${_to}` (L${_tier_${_to}}) is not "
               "below `${_m}` (L${_tier_${_m}}): move the code it needs down, or the including "
               "code up")
        list(APPEND _problems "${_msg}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(_problems)
  list(LENGTH _problems _n)
  string(REPLACE ";" "\n  " _out "${_problems}")
  message(FATAL_ERROR "host layering: ${_n} problem(s)\n  ${_out}")
endif()
list(LENGTH _modules _n)
message(STATUS "host layering: ${_n} modules, every include goes down a tier")
