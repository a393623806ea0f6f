# oe_warnings(<target>): the warning set for oe's own code; -Werror when OE_WERROR is ON (CI).
function(oe_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                                           $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>)
  if(OE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
