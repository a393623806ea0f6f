# oe_add_plugin_tests(<plugin> [SOURCES <src>...] [LIBS <lib>...] [DEFINITIONS <def>...]
#                     [DEPENDS <target>...])
#
# The GoogleTest binary <plugin>_plugin_tests of a plugin in this tree: every tests/*_test.cpp
# plus SOURCES (plugin sources compiled in for white-box tests; the plugin's src/ is then an
# include dir too), with tests/ (tests/support/...) as include dir, linked to LIBS, the SDK,
# nlohmann_json and GoogleTest.
# OE_<PLUGIN>_PLUGIN_PATH names the built plugin (the tests load it through the real ABI) and
# OE_<PLUGIN>_EXPECTED_VERSION the project version; DEFINITIONS adds more. The tests build after
# the plugin and the DEPENDS targets. Does nothing when tests are off or GoogleTest is missing.
# In-tree only: not part of the installed SDK package.
include(GoogleTest)

function(oe_add_plugin_tests plugin)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;DEFINITIONS;DEPENDS" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR
            "oe_add_plugin_tests(${plugin}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT OE_BUILD_TESTS)
    return()
  endif()
  # The top level looks GoogleTest up after the plugins; find it here too so the order of
  # add_subdirectory calls does not decide whether these tests exist.
  if(NOT TARGET GTest::gtest_main)
    find_package(GTest QUIET)
  endif()
  if(NOT TARGET GTest::gtest_main)
    return()
  endif()
  set(_tests ${plugin}_plugin_tests)
  string(TOUPPER "${plugin}" _macro)
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/*_test.cpp)
  add_executable(${_tests} ${_srcs} ${ARG_SOURCES})
  if(COMMAND oe_test_code)
    oe_test_code(${_tests})
  endif()
  if(COMMAND oe_use_pch)
    oe_use_pch(${_tests} test)
  endif()
  # tests/support/fake_host.hpp uses the host's header-only host_buffer.hpp (host/src).
  target_include_directories(${_tests} PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/host/src)
  if(ARG_SOURCES)
    target_include_directories(${_tests} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  endif()
  target_link_libraries(${_tests} PRIVATE ${ARG_LIBS} oe_sdk_cpp nlohmann_json::nlohmann_json
                        Threads::Threads ${CMAKE_DL_LIBS} GTest::gtest_main)
  target_compile_definitions(${_tests} PRIVATE
    OE_${_macro}_PLUGIN_PATH="$<TARGET_FILE:${plugin}>"
    OE_${_macro}_EXPECTED_VERSION="${PROJECT_VERSION}"
    ${ARG_DEFINITIONS})
  add_dependencies(${_tests} ${plugin} ${ARG_DEPENDS})
  oe_warnings(${_tests})
  gtest_discover_tests(${_tests} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
endfunction()
