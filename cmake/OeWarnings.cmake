# oe_warnings(<target>): the warning set for oe's own code; -Werror when OE_WERROR is ON (CI).
function(oe_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                                           $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>)
  # GCC 12 reports -Wrestrict false positives inside libstdc++'s std::string at -O2/-O3
  # (GCC PR 105329, fixed in 13) for plain `a + b` on strings; it would fail every -Werror build.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
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
