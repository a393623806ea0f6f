# oe_add_plugin(<name> SOURCES <src>... [OUTPUT_DIRECTORY <dir>] [NO_INSTALL]
#               [INSTALL_DESTINATION <dir>])
#
# Builds an oe node-kind plugin: a MODULE library with hidden visibility that exports only
# `oe_plugin_entry_v1` and links nothing from the host. A plugin with C++ sources links
# OpenExpertise::sdk_cpp (the C++ glue, compiled as C++20), one in C only OpenExpertise::sdk.
# Installed with the SDK package, so the same function builds plugins inside the oe tree and out
# of it (find_package(OpenExpertiseSDK)).
function(oe_add_plugin name)
  # The version script sits next to this file, in the source tree or the installed package. Read
  # here rather than from a variable so the function also works in directories other than the
  # one that called find_package().
  set(_OE_ADD_PLUGIN_DIR "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY;INSTALL_DESTINATION" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "oe_add_plugin(${name}): SOURCES is required")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  # C++ sources get the C++ glue's target, which carries its C++20 requirement; C sources only
  # the C headers, so a project(... LANGUAGES C) needs no C++ compiler.
  set(_sdk sdk)
  get_property(_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("CXX" IN_LIST _languages)
    foreach(_src IN LISTS ARG_SOURCES)
      get_source_file_property(_language "${_src}" LANGUAGE)
      if(_language STREQUAL "CXX" OR
         (NOT _language AND _src MATCHES "\\.(cpp|cxx|cc|c\\+\\+|C|CPP)$"))
        set(_sdk sdk_cpp)
      endif()
    endforeach()
  endif()
  if(TARGET OpenExpertise::${_sdk})
    target_link_libraries(${name} PRIVATE OpenExpertise::${_sdk})
  elseif(TARGET oe_${_sdk})
    target_link_libraries(${name} PRIVATE oe_${_sdk})
  else()
    message(FATAL_ERROR "oe_add_plugin(${name}): the OpenExpertise::${_sdk} target is not visible"
                        " here; call find_package(OpenExpertiseSDK) in this directory or a parent"
                        " one")
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    target_link_options(${name} PRIVATE
      "LINKER:--version-script=${_OE_ADD_PLUGIN_DIR}/oe_plugin.version"
      "LINKER:-z,defs")
    set_property(TARGET ${name} APPEND PROPERTY
                 LINK_DEPENDS "${_OE_ADD_PLUGIN_DIR}/oe_plugin.version")
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  elseif(DEFINED OE_PLUGIN_BUILD_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${OE_PLUGIN_BUILD_DIR}")
  endif()
  if(NOT ARG_NO_INSTALL)
    if(ARG_INSTALL_DESTINATION)
      set(_dest "${ARG_INSTALL_DESTINATION}")
    elseif(DEFINED OE_PLUGIN_INSTALL_DIR)
      set(_dest "${OE_PLUGIN_INSTALL_DIR}")
    else()
      set(_dest "lib/oe/plugins")
    endif()
    install(TARGETS ${name} LIBRARY DESTINATION "${_dest}")
  endif()
endfunction()
