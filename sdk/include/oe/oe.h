/* Umbrella header of the oe plugin SDK: the whole C ABI (docs/abi.md). */
#ifndef OE_OE_H
#define OE_OE_H

#include "oe/entry.h"
#include "oe/host.h"
#include "oe/macros.h"
#include "oe/node.h"
#include "oe/types.h"
#include "oe/version.h"

#endif /* OE_OE_H */
