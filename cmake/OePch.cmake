# Precompiled headers for oe's own targets: the heavy third-party headers every file of a module
# or a test includes (nlohmann_json, libstdc++'s containers and <filesystem>, and for the tests
# GoogleTest, GoogleMock and Boost.Asio) are parsed once per build instead of once per unity
# batch: ~9 s of a batch's ~40 s at -O2. One precompiled header per set, built by a small object
# library and reused by every target of the set (REUSE_FROM), because most targets are a single
# unity batch and a header of their own would cost what it saves.
#
# The plugins (and their static kits) get a set of their own: the host's header, built as they
# are, position-independent with hidden visibility, which GCC also requires of the header; it saves
# the ~4 s of parsing each plugin's single unity batch spends in nlohmann_json and libstdc++.
# Plugins built out of the oe tree (the installed SDK) are not concerned.
#
# oe_use_pch(<target> host|plugin|test). OE_PCH=OFF turns it off (e.g. for a tool that reads
# compile_commands.json and does not understand -include of a .gch); the fuzz preset's clang build
# and the sanitizer builds use it like the others.
option(OE_PCH "Precompile the heavy third-party headers of oe's own targets" ON)
# GCC refuses a precompiled header when a macro its headers test is defined differently where it
# is used. Boost::headers defines BOOST_ALL_NO_LIB (auto-linking, MSVC only) for the targets that
# link it, and not for the others; define it for every target so one header serves them all.
if(OE_PCH)
  add_compile_definitions(BOOST_ALL_NO_LIB)
endif()

function(_oe_pch_base set)
  set(_base oe_pch_${set})
  if(TARGET ${_base})
    return()
  endif()
  # The base is built as the targets that reuse it are: the host's modules are static libraries
  # (-fPIC), the tests executables (-fPIE), and GCC refuses a header made with the other one.
  set(_src ${CMAKE_BINARY_DIR}/oe_pch/${set}.cpp)
  set(_header ${set})
  if(set STREQUAL "test")
    file(WRITE ${_src} "// Builds the tests' precompiled header (cmake/OePch.cmake).\nint main() { return 0; }\n")
    add_executable(${_base} ${_src})
    set_target_properties(${_base} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/oe_pch)
  else()
    file(WRITE ${_src} "// Builds the ${set}'s precompiled header (cmake/OePch.cmake).\n")
    add_library(${_base} OBJECT ${_src})
  endif()
  if(set STREQUAL "plugin")
    set(_header host)
    set_target_properties(${_base} PROPERTIES CXX_VISIBILITY_PRESET hidden
                          VISIBILITY_INLINES_HIDDEN ON)
  endif()
  set_target_properties(${_base} PROPERTIES UNITY_BUILD OFF)
  target_compile_features(${_base} PRIVATE cxx_std_20)
  target_link_libraries(${_base} PRIVATE nlohmann_json::nlohmann_json Threads::Threads)
  if(set STREQUAL "test")
    target_link_libraries(${_base} PRIVATE GTest::gtest GTest::gmock Boost::headers)
    oe_test_code(${_base})  # built as the tests that use it (cmake/OeTestFlags.cmake)
  endif()
  oe_warnings(${_base})
  target_precompile_headers(${_base} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/pch/${_header}.hpp)
endfunction()

function(oe_use_pch target set)
  if(NOT OE_PCH)
    return()
  endif()
  _oe_pch_base(${set})
  target_precompile_headers(${target} REUSE_FROM oe_pch_${set})
endfunction()
