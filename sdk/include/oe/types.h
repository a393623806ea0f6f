/* Plain data types shared by every part of the oe plugin ABI. */
#ifndef OE_TYPES_H
#define OE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "oe/macros.h"

OE_BEGIN_DECLS

/* Status codes follow the gRPC/Abseil numbering. The set is OPEN: a consumer must treat any value
 * it does not know as OE_UNKNOWN (every switch over oe_status has a default). There is no count.
 * Each constant has the type oe_status (a cast: still an integer constant expression, usable in
 * `case` labels), and each log level the type oe_log_level.
 * Binding generators that cannot evaluate a cast (bindgen before 0.70) define OE_BINDGEN and get
 * the same values as typed constants instead (docs/abi.md, "Bindings"). */
typedef int32_t oe_status;
typedef int32_t oe_log_level;
#ifndef OE_BINDGEN
#define OE_OK ((oe_status)0)
#define OE_CANCELLED ((oe_status)1)
#define OE_UNKNOWN ((oe_status)2)
#define OE_INVALID_ARGUMENT ((oe_status)3)
#define OE_DEADLINE_EXCEEDED ((oe_status)4)
#define OE_NOT_FOUND ((oe_status)5)
#define OE_ALREADY_EXISTS ((oe_status)6)
#define OE_PERMISSION_DENIED ((oe_status)7)
#define OE_RESOURCE_EXHAUSTED ((oe_status)8)
#define OE_FAILED_PRECONDITION ((oe_status)9)
#define OE_ABORTED ((oe_status)10)
#define OE_OUT_OF_RANGE ((oe_status)11)
#define OE_UNIMPLEMENTED ((oe_status)12)
#define OE_INTERNAL ((oe_status)13)
#define OE_UNAVAILABLE ((oe_status)14)
#define OE_DATA_LOSS ((oe_status)15)
#define OE_UNAUTHENTICATED ((oe_status)16)

/* Log levels for oe_host_api.log. */
#define OE_LOG_DEBUG ((oe_log_level)0)
#define OE_LOG_INFO ((oe_log_level)1)
#define OE_LOG_WARN ((oe_log_level)2)
#define OE_LOG_ERROR ((oe_log_level)3)
#else
static const oe_status OE_OK = 0;
static const oe_status OE_CANCELLED = 1;
static const oe_status OE_UNKNOWN = 2;
static const oe_status OE_INVALID_ARGUMENT = 3;
static const oe_status OE_DEADLINE_EXCEEDED = 4;
static const oe_status OE_NOT_FOUND = 5;
static const oe_status OE_ALREADY_EXISTS = 6;
static const oe_status OE_PERMISSION_DENIED = 7;
static const oe_status OE_RESOURCE_EXHAUSTED = 8;
static const oe_status OE_FAILED_PRECONDITION = 9;
static const oe_status OE_ABORTED = 10;
static const oe_status OE_OUT_OF_RANGE = 11;
static const oe_status OE_UNIMPLEMENTED = 12;
static const oe_status OE_INTERNAL = 13;
static const oe_status OE_UNAVAILABLE = 14;
static const oe_status OE_DATA_LOSS = 15;
static const oe_status OE_UNAUTHENTICATED = 16;
static const oe_log_level OE_LOG_DEBUG = 0;
static const oe_log_level OE_LOG_INFO = 1;
static const oe_log_level OE_LOG_WARN = 2;
static const oe_log_level OE_LOG_ERROR = 3;
#endif /* OE_BINDGEN */

/* A BORROWED UTF-8 string: not NUL-terminated, valid only for the duration of the call that
 * received it. Copy it to keep it. */
typedef struct oe_str {
  const char* ptr;
  size_t len;
} oe_str;

/* A HOST-owned buffer handed to a plugin. The plugin passes it back to oe_host_api.release once;
 * until then ptr/len stay valid. Releasing it again, or a copy of it, does nothing. */
typedef struct oe_host_buf {
  const char* ptr;
  size_t len;
  void* opaque; /* host bookkeeping; the plugin never touches it */
} oe_host_buf;

/* True when the versioned struct at `ptr` (its first member is uint32_t struct_size) is large
 * enough to hold `member`: check it before reading a member that a later ABI minor appended, e.g.
 * OE_HAS_MEMBER(oe_http_api, http, fetch). A NULL ptr has no members. */
#define OE_HAS_MEMBER(type, ptr, member)         \
  ((ptr) != NULL && (size_t)(ptr)->struct_size >= \
                        offsetof(type, member) + sizeof(((const type*)(ptr))->member))

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
