# How the tests' own code is compiled. The code under test (the host's modules, the plugins) is
# built as the preset says; the test binaries spend their time waiting on that code or on the
# processes they start, and their sources (GoogleTest's macros, JSON literals) are what takes an
# optimiser longest. OE_TEST_COMPILE_OPTIONS (a list) comes after the build type's flags, so an
# -O level here wins, and applies to every test target and to the tests' precompiled header,
# which GCC refuses unless it was built with the same -O level. The release preset sets -O0:
# its test targets then build in roughly half the time (docs/testing.md, "Where CI's time goes").
set(OE_TEST_COMPILE_OPTIONS "" CACHE STRING "Compile options for the test targets' own code")

# oe_test_code(<target>...): each target is test code.
function(oe_test_code)
  if(OE_TEST_COMPILE_OPTIONS)
    foreach(_target IN LISTS ARGN)
      target_compile_options(${_target} PRIVATE ${OE_TEST_COMPILE_OPTIONS})
    endforeach()
  endif()
endfunction()
