/* ABI version of the oe plugin interface. Separate from the product version (docs/abi.md). */
#ifndef OE_VERSION_H
#define OE_VERSION_H

#include <stdint.h>

/* 0.x is unstable: the host requires an exact MAJOR.MINOR match.
 * From 1.0 on, structs and tables only grow at the end and MINOR marks each growth. */
#define OE_ABI_VERSION_MAJOR 0
#define OE_ABI_VERSION_MINOR 1
#define OE_ABI_MAKE_VERSION(major, minor) ((uint32_t)(((uint32_t)(major) << 16) | (uint32_t)(minor)))
#define OE_ABI_VERSION OE_ABI_MAKE_VERSION(OE_ABI_VERSION_MAJOR, OE_ABI_VERSION_MINOR)
#define OE_ABI_VERSION_GET_MAJOR(v) ((uint32_t)(v) >> 16)
#define OE_ABI_VERSION_GET_MINOR(v) ((uint32_t)(v)&0xffffu)

#endif /* OE_VERSION_H */
