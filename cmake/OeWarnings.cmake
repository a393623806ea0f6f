# oe_warnings(<target>): the warning set for oe's own code; -Werror when OE_WERROR is ON (CI).
function(oe_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                                           $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>)
  # GCC 12 reports -Wrestrict false positives inside libstdc++'s std::string at -O2/-O3
  # (GCC PR 105329, fixed in 13) for plain `a + b` on strings; it would fail every -Werror build.
  # The same inlining gives -Warray-bounds and -Wstringop-overflow false positives at -O2
  # ("forming offset [32, N] is out of the bounds [0, 32]", "writing 21 bytes into a region of
  # size 16" in char_traits::copy, for `"literal" + s` chains and for inserting into a
  # vector<string>): four test files hit them the day the release preset moved to -O2. Real
  # out-of-bounds accesses are what the ASan build and the fuzzers catch, at run time.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(
      ${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>
                        $<$<COMPILE_LANGUAGE:CXX>:-Wno-array-bounds>
                        $<$<COMPILE_LANGUAGE:CXX>:-Wno-stringop-overflow>)
  endif()
  # Sources silence GCC-only warnings with `#pragma GCC diagnostic ignored "-Wrestrict"`, which
  # clang (the fuzz preset) reports as an unknown warning group.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(${target} PRIVATE -Wno-unknown-warning-option)
  endif()
  if(OE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
