/* Plain data types shared by every part of the oe plugin ABI. */
#ifndef OE_TYPES_H
#define OE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "oe/macros.h"

OE_BEGIN_DECLS

/* Status codes follow the gRPC/Abseil numbering. The set is OPEN: a consumer must treat any value
 * it does not know as OE_UNKNOWN (every switch over oe_status has a default). There is no count. */
typedef int32_t oe_status;
#define OE_OK 0
#define OE_CANCELLED 1
#define OE_UNKNOWN 2
#define OE_INVALID_ARGUMENT 3
#define OE_DEADLINE_EXCEEDED 4
#define OE_NOT_FOUND 5
#define OE_ALREADY_EXISTS 6
#define OE_PERMISSION_DENIED 7
#define OE_RESOURCE_EXHAUSTED 8
#define OE_FAILED_PRECONDITION 9
#define OE_ABORTED 10
#define OE_OUT_OF_RANGE 11
#define OE_UNIMPLEMENTED 12
#define OE_INTERNAL 13
#define OE_UNAVAILABLE 14
#define OE_DATA_LOSS 15
#define OE_UNAUTHENTICATED 16

/* Log levels for oe_host_api.log. */
typedef int32_t oe_log_level;
#define OE_LOG_DEBUG 0
#define OE_LOG_INFO 1
#define OE_LOG_WARN 2
#define OE_LOG_ERROR 3

/* A BORROWED UTF-8 string: not NUL-terminated, valid only for the duration of the call that
 * received it. Copy it to keep it. */
typedef struct oe_str {
  const char* ptr;
  size_t len;
} oe_str;

/* A HOST-owned buffer handed to a plugin. The plugin must pass it back to
 * oe_host_api.release exactly once; until then ptr/len stay valid. */
typedef struct oe_host_buf {
  const char* ptr;
  size_t len;
  void* opaque; /* host bookkeeping; the plugin never touches it */
} oe_host_buf;

/* HOST-owned append-only sink. A plugin appends bytes with oe_host_api.write; the host owns and
 * frees the memory. Valid only during the call that received it. */
typedef struct oe_writer oe_writer;

/* HOST-owned opaque context. A plugin-level one is passed to init (valid until deinit); a
 * call-level one travels in each oe_invocation (valid until invoke returns). */
typedef struct oe_host_ctx oe_host_ctx;

/* PLUGIN-owned library-wide state, created by init and destroyed by deinit. */
typedef struct oe_plugin oe_plugin;

/* PLUGIN-owned node instance, created by oe_node_kind.create and destroyed by destroy. */
typedef struct oe_node oe_node;

OE_END_DECLS

#endif /* OE_TYPES_H */
