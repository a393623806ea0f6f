# oe_add_plugin(<name> SOURCES <src>... [OUTPUT_DIRECTORY <dir>] [NO_INSTALL] [NO_MANIFEST]
#               [INSTALL_DESTINATION <dir>] [COMPONENT <component>])
#
# Builds an oe node-kind plugin: a MODULE library with hidden visibility that exports only
# `oe_plugin_entry_v1` and links nothing from the host. A plugin with C++ sources links
# OpenExpertise::sdk_cpp (the C++ glue, compiled as C++20), one in C only OpenExpertise::sdk.
# Installed with the SDK package, so the same function builds plugins inside the oe tree and out
# of it (find_package(OpenExpertiseSDK)).
#
# After each build, oe-plugin-manifest (OpenExpertise::plugin_manifest) loads the library just
# built and writes <library>.oe-manifest.json beside it: what `oe validate`, `oe plugins` and
# the other commands that run nothing read instead of loading a plugin that is not built in
# (docs/trust.md). A library the host would refuse fails the build there, with the host's reason.
# The manifest is installed beside the library, its hash made that of the installed file (which
# `--strip` changes). NO_MANIFEST: none (a test fixture the host must refuse).
function(oe_add_plugin name)
  _oe_add_module(oe_add_plugin ${name} oe_plugin.version ${ARGN})
endfunction()

# oe_add_native_tool(<name> SOURCES <src>... [OUTPUT_DIRECTORY <dir>] [NO_INSTALL]
#                    [INSTALL_DESTINATION <dir>] [COMPONENT <component>])
#
# Builds a native tool (a library a `kind: tool` node names in `impl:`, docs/tools.md): the same
# MODULE library as a plugin, but its version script exports only `oe_tool_invoke_v2`, the
# symbol the tool plugin looks up. Installs to OE_NATIVE_TOOL_INSTALL_DIR (default `tools`): a
# tool belongs to the experience that names it, so `cmake --install <build> --prefix
# <experience dir>` puts it where `impl: ./tools/<name>.so` finds it.
#
# COMPONENT names the install component (for `cmake --install --component` and CPack); without
# it, OE_PLUGIN_INSTALL_COMPONENT / OE_NATIVE_TOOL_INSTALL_COMPONENT when set (oe's own plugins
# are the `runtime` component, the oe package), else CMake's default component.
function(oe_add_native_tool name)
  _oe_add_module(oe_add_native_tool ${name} oe_native_tool.version ${ARGN})
endfunction()

# What both share; `caller` names the public function in messages, `version_script` is the file
# next to this one that lists the one exported symbol.
function(_oe_add_module caller name version_script)
  # The version script sits next to this file, in the source tree or the installed package. Read
  # here rather than from a variable so the function also works in directories other than the
  # one that called find_package().
  set(_dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  cmake_parse_arguments(ARG "NO_INSTALL;NO_MANIFEST" "OUTPUT_DIRECTORY;INSTALL_DESTINATION;COMPONENT"
                        "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "${caller}(${name}): SOURCES is required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${caller}(${name}): unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
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
    message(FATAL_ERROR "${caller}(${name}): the OpenExpertise::${_sdk} target is not visible"
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
      "LINKER:--version-script=${_dir}/${version_script}"
      "LINKER:-z,defs")
    set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS "${_dir}/${version_script}")
  endif()
  if(ARG_NO_MANIFEST AND NOT caller STREQUAL "oe_add_plugin")
    message(FATAL_ERROR "${caller}(${name}): NO_MANIFEST is for plugins; a native tool has none")
  endif()
  set(_manifest_tool "")
  if(caller STREQUAL "oe_add_plugin" AND NOT ARG_NO_MANIFEST)
    # In oe's own tree the tool is a target of this build; out of tree, the installed package's.
    if(TARGET oe_plugin_manifest)
      set(_manifest_tool oe_plugin_manifest)
    elseif(TARGET OpenExpertise::plugin_manifest)
      set(_manifest_tool OpenExpertise::plugin_manifest)
    endif()
    if(CMAKE_CROSSCOMPILING)
      message(WARNING "${caller}(${name}): cross-compiling, so no manifest is written (the library "
                      "cannot be loaded here); run oe-plugin-manifest on the target machine")
      set(_manifest_tool "")
    elseif(NOT _manifest_tool)
      message(FATAL_ERROR "${caller}(${name}): the OpenExpertise::plugin_manifest tool is not "
                          "visible here; call find_package(OpenExpertiseSDK) in this directory or "
                          "a parent one (or pass NO_MANIFEST)")
    endif()
  endif()
  if(_manifest_tool)
    add_custom_command(TARGET ${name} POST_BUILD
      COMMAND $<TARGET_FILE:${_manifest_tool}> $<TARGET_FILE:${name}>
      COMMENT "Writing the manifest of plugin ${name}"
      VERBATIM)
    get_target_property(_imported ${_manifest_tool} IMPORTED)
    if(NOT _imported)
      add_dependencies(${name} ${_manifest_tool})
    endif()
  endif()
  if(caller STREQUAL "oe_add_plugin")
    set(_build_dir_var OE_PLUGIN_BUILD_DIR)  # the oe build's own plugin folder
    set(_install_dir_var OE_PLUGIN_INSTALL_DIR)
    set(_component_var OE_PLUGIN_INSTALL_COMPONENT)
    set(_default_dest "lib/oe/plugins")
  else()
    set(_build_dir_var "")  # a tool lands where the caller builds it
    set(_install_dir_var OE_NATIVE_TOOL_INSTALL_DIR)
    set(_component_var OE_NATIVE_TOOL_INSTALL_COMPONENT)
    set(_default_dest "tools")
  endif()
  # $<1:...> keeps multi-config generators from adding a per-configuration folder: the file is
  # where the caller said, which matters for a tool an experience names by path.
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "$<1:${ARG_OUTPUT_DIRECTORY}>")
  elseif(_build_dir_var AND DEFINED ${_build_dir_var})
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${${_build_dir_var}}")
  endif()
  if(NOT ARG_NO_INSTALL)
    if(ARG_INSTALL_DESTINATION)
      set(_dest "${ARG_INSTALL_DESTINATION}")
    elseif(DEFINED ${_install_dir_var})
      set(_dest "${${_install_dir_var}}")
    else()
      set(_dest "${_default_dest}")
    endif()
    set(_component)
    if(ARG_COMPONENT)
      set(_component COMPONENT "${ARG_COMPONENT}")
    elseif(${_component_var})
      set(_component COMPONENT "${${_component_var}}")
    endif()
    install(TARGETS ${name} LIBRARY DESTINATION "${_dest}" ${_component})
    if(_manifest_tool)
      # The manifest describes the library as built; the installed file may differ by its
      # symbols alone (cmake --install --strip, CPack), so its hash is made the installed one's.
      # Nothing of the plugin runs here.
      install(CODE "
        set(_lib \"${_dest}/$<TARGET_FILE_NAME:${name}>\")
        if(NOT IS_ABSOLUTE \"\${_lib}\")
          set(_lib \"\${CMAKE_INSTALL_PREFIX}/\${_lib}\")
        endif()
        set(_lib \"\$ENV{DESTDIR}\${_lib}\")
        file(READ \"$<TARGET_FILE:${name}>.oe-manifest.json\" _manifest)
        file(SHA256 \"\${_lib}\" _sha)
        string(JSON _manifest SET \"\${_manifest}\" sha256 \"\\\"\${_sha}\\\"\")
        message(STATUS \"Installing: \${_lib}.oe-manifest.json\")
        file(WRITE \"\${_lib}.oe-manifest.json\" \"\${_manifest}\\n\")
        " ${_component})
    endif()
  endif()
endfunction()
