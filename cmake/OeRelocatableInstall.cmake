# Lets `cmake --install <dir>` work from a copy of the build tree at another path (a CI artifact
# unpacked elsewhere, a tree moved to another disk).
#
# CMake writes every cmake_install.cmake with absolute paths into the build tree it configured.
# From a copy, those scripts would include and install the ORIGINAL tree's files, and fail once
# the original is gone. Include this module before any other install rule: its rule runs first,
# and when the tree it runs from is not the configured one, it points the copy's install scripts
# at the copy (rewriting them in place, so the copy must be writable) and installs from there.
# Installed files never come from the source tree (the SDK stages its own, see sdk/), so the copy
# is all `cmake --install` needs. Building in a moved tree is not supported: re-configure it.
# ALL_COMPONENTS: the rule runs for `cmake --install --component X` (and CPack) as well.
install(CODE "set(_oe_configured_binary_dir [[${CMAKE_BINARY_DIR}]])" ALL_COMPONENTS)
install(CODE [=[
  file(REAL_PATH "${CMAKE_CURRENT_LIST_DIR}" _oe_here)
  if(EXISTS "${_oe_configured_binary_dir}")
    file(REAL_PATH "${_oe_configured_binary_dir}" _oe_configured)
  else()
    set(_oe_configured "${_oe_configured_binary_dir}")
  endif()
  if(NOT _oe_here STREQUAL _oe_configured AND NOT _oe_install_relocated)
    message(STATUS "Installing from a copy of the build tree configured at "
                   "${_oe_configured_binary_dir}: pointing its install scripts at ${_oe_here}")
    file(GLOB_RECURSE _oe_scripts "${_oe_here}/cmake_install.cmake"
                                  "${_oe_here}/*/cmake_install.cmake")
    # The first rule's own record moves too, so a copy of this copy relocates from here.
    foreach(_oe_script IN LISTS _oe_scripts)
      file(READ "${_oe_script}" _oe_text)
      string(REPLACE "${_oe_configured_binary_dir}/" "${_oe_here}/" _oe_text "${_oe_text}")
      string(REPLACE "[[${_oe_configured_binary_dir}]]" "[[${_oe_here}]]" _oe_text "${_oe_text}")
      file(WRITE "${_oe_script}" "${_oe_text}")
    endforeach()
    set(_oe_install_relocated TRUE)
    include("${_oe_here}/cmake_install.cmake")
    return()
  endif()
]=] ALL_COMPONENTS)
