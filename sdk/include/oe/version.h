/* ABI version of the oe plugin interface. Separate from the product version (docs/abi.md). */
#ifndef OE_VERSION_H
#define OE_VERSION_H

#include <stdint.h>

#include "oe/macros.h"

/* 0.x is unstable: the host requires an exact MAJOR.MINOR match.
 * From 1.0 on, structs and tables only grow at the end and MINOR marks each growth. */
#define OE_ABI_VERSION_MAJOR 0
#define OE_ABI_VERSION_MINOR 3
/* (MAJOR << 16) | MINOR, spelled as a literal so binding generators (bindgen, cffi, ...) see a
 * plain constant. The check below keeps it equal to its parts. */
#define OE_ABI_VERSION 0x00000003u
#define OE_ABI_MAKE_VERSION(major, minor) ((uint32_t)(((uint32_t)(major) << 16) | (uint32_t)(minor)))
#define OE_ABI_VERSION_GET_MAJOR(v) ((uint32_t)(v) >> 16)
#define OE_ABI_VERSION_GET_MINOR(v) ((uint32_t)(v)&0xffffu)

#if OE_ABI_VERSION != ((OE_ABI_VERSION_MAJOR << 16) | OE_ABI_VERSION_MINOR)
#error "OE_ABI_VERSION does not match OE_ABI_VERSION_MAJOR/MINOR"
#endif

OE_BEGIN_DECLS

/* The host's rule, for plugins and bindings that want to check before they are refused: nonzero
 * when a plugin built against plugin_abi, needing at least min_host_abi, loads into a host that
 * speaks host_abi. 0.x: exact MAJOR.MINOR match. From 1.0: same MAJOR and min_host_abi <= host_abi. */
static inline int oe_abi_compatible(uint32_t host_abi, uint32_t plugin_abi, uint32_t min_host_abi) {
  if (OE_ABI_VERSION_GET_MAJOR(host_abi) != OE_ABI_VERSION_GET_MAJOR(plugin_abi)) {
    return 0;
  }
  if (OE_ABI_VERSION_GET_MAJOR(host_abi) == 0) {
    return OE_ABI_VERSION_GET_MINOR(host_abi) == OE_ABI_VERSION_GET_MINOR(plugin_abi);
  }
  return min_host_abi <= host_abi;
}

OE_END_DECLS

#endif /* OE_VERSION_H */
