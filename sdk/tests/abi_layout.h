/* The ABI layout as the C compiler sees it, exported by abi_layout.c for abi_layout_test.cpp. */
#ifndef OE_SDK_TESTS_ABI_LAYOUT_H
#define OE_SDK_TESTS_ABI_LAYOUT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oe_test_layout {
  const char* name; /* "oe_str" for a whole struct, "oe_str.len" for a member */
  size_t offset;    /* 0 for a whole struct */
  size_t size;
  size_t align; /* alignof for a whole struct, 0 for a member */
} oe_test_layout;

const oe_test_layout* oe_test_c_layout(size_t* count);

#ifdef __cplusplus
}
#endif

#endif /* OE_SDK_TESTS_ABI_LAYOUT_H */
