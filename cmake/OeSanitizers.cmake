# Applies OE_SANITIZE ('address;undefined' or 'thread') to everything built after this point.
if(OE_SANITIZE)
  string(REPLACE ";" "," _oe_san "${OE_SANITIZE}")
  add_compile_options(-fsanitize=${_oe_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_oe_san})
endif()
