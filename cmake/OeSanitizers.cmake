# Applies OE_SANITIZE ('address;undefined' or 'thread') to everything built after this point.
if(OE_SANITIZE)
  string(REPLACE ";" "," _oe_san "${OE_SANITIZE}")
  add_compile_options(-fsanitize=${_oe_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_oe_san})
  # ThreadSanitizer does not model std::atomic_thread_fence (GCC fails -Werror=tsan on it):
  # Boost.Asio's handler fences would go unseen and hide or fake races. Its queues also lock a
  # mutex, which tsan does see, so the fences can go.
  if("thread" IN_LIST OE_SANITIZE)
    add_compile_definitions(BOOST_ASIO_DISABLE_FENCED_BLOCK)
  endif()
endif()
# The fuzz build also instruments everything for libFuzzer's coverage feedback; only the fuzz
# targets themselves link libFuzzer's main (tests/fuzz).
if(OE_BUILD_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
