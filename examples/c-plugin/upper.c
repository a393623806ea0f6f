/* text-upper: an oe node kind written in plain C11 against <oe/oe.h> only. It reads `args.text`
 * from the request and writes it upper-cased (ASCII letters; other bytes are kept as they are)
 * to the one state field the node lists in `writes`. */
#include <oe/oe.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UPPER_KIND "text-upper"
#define MAX_JSON_DEPTH 256

/* ---- A minimal, strict JSON reader: enough to find members and decode strings. ---------------
 * The host always sends valid JSON, but a plugin must never read past a buffer if it does not. */

typedef struct json_cursor {
  const char* p;
  const char* end;
} json_cursor;

static void skip_ws(json_cursor* c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) {
    ++c->p;
  }
}

static int hex_value(char h) {
  if (h >= '0' && h <= '9') {
    return h - '0';
  }
  if (h >= 'a' && h <= 'f') {
    return h - 'a' + 10;
  }
  if (h >= 'A' && h <= 'F') {
    return h - 'A' + 10;
  }
  return -1;
}

/* Reads the 4 hex digits after "\u"; c->p is on the first digit. Returns -1 if malformed. */
static long read_hex4(json_cursor* c) {
  long value = 0;
  if (c->end - c->p < 4) {
    return -1;
  }
  for (int i = 0; i < 4; ++i) {
    const int digit = hex_value(c->p[i]);
    if (digit < 0) {
      return -1;
    }
    value = value * 16 + digit;
  }
  c->p += 4;
  return value;
}

static size_t put_utf8(unsigned long cp, char* out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Parses the string at c->p (which must be on the opening quote) and advances past it. When out
 * is not NULL, the decoded UTF-8 is stored there (malloc'ed, NUL-terminated; *out_len excludes
 * the NUL; the text may itself contain NULs from "\u0000"). Returns 0 on malformed input. */
static int read_string(json_cursor* c, char** out, size_t* out_len) {
  if (c->p >= c->end || *c->p != '"') {
    return 0;
  }
  ++c->p;
  /* Decoding never makes a string longer than its escaped form, so this bound is enough. */
  char* buf = NULL;
  size_t n = 0;
  if (out != NULL) {
    buf = (char*)malloc((size_t)(c->end - c->p) + 1);
    if (buf == NULL) {
      return 0;
    }
  }
  while (c->p < c->end) {
    const unsigned char ch = (unsigned char)*c->p++;
    if (ch == '"') {
      if (out != NULL) {
        buf[n] = '\0';
        *out = buf;
        *out_len = n;
      }
      return 1;
    }
    if (ch < 0x20) {
      break; /* raw control characters are not allowed inside JSON strings */
    }
    if (ch != '\\') {
      if (buf != NULL) {
        buf[n++] = (char)ch;
      }
      continue;
    }
    if (c->p >= c->end) {
      break;
    }
    const char esc = *c->p++;
    char decoded[4];
    size_t decoded_len = 1;
    switch (esc) {
      case '"': decoded[0] = '"'; break;
      case '\\': decoded[0] = '\\'; break;
      case '/': decoded[0] = '/'; break;
      case 'b': decoded[0] = '\b'; break;
      case 'f': decoded[0] = '\f'; break;
      case 'n': decoded[0] = '\n'; break;
      case 'r': decoded[0] = '\r'; break;
      case 't': decoded[0] = '\t'; break;
      case 'u': {
        long cp = read_hex4(c);
        if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) {
          goto malformed; /* bad digits or a lone low surrogate */
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) { /* high surrogate: a low one must follow */
          if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u') {
            goto malformed;
          }
          c->p += 2;
          const long low = read_hex4(c);
          if (low < 0xDC00 || low > 0xDFFF) {
            goto malformed;
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        decoded_len = put_utf8((unsigned long)cp, decoded);
        break;
      }
      default:
        goto malformed;
    }
    if (buf != NULL) {
      memcpy(buf + n, decoded, decoded_len);
      n += decoded_len;
    }
  }
malformed:
  free(buf);
  return 0;
}

static int skip_literal(json_cursor* c, const char* word) {
  const size_t len = strlen(word);
  if ((size_t)(c->end - c->p) < len || memcmp(c->p, word, len) != 0) {
    return 0;
  }
  c->p += len;
  return 1;
}

/* Advances past one JSON value of any type. Returns 0 on malformed input or excessive nesting. */
static int skip_value(json_cursor* c, int depth) {
  skip_ws(c);
  if (c->p >= c->end || depth > MAX_JSON_DEPTH) {
    return 0;
  }
  const char first = *c->p;
  if (first == '"') {
    return read_string(c, NULL, NULL);
  }
  if (first == '{' || first == '[') {
    const char close = first == '{' ? '}' : ']';
    ++c->p;
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
      ++c->p;
      return 1;
    }
    for (;;) {
      if (first == '{') {
        skip_ws(c);
        if (!read_string(c, NULL, NULL)) {
          return 0;
        }
        skip_ws(c);
        if (c->p >= c->end || *c->p++ != ':') {
          return 0;
        }
      }
      if (!skip_value(c, depth + 1)) {
        return 0;
      }
      skip_ws(c);
      if (c->p >= c->end) {
        return 0;
      }
      const char next = *c->p++;
      if (next == close) {
        return 1;
      }
      if (next != ',') {
        return 0;
      }
    }
  }
  if (first == 't') {
    return skip_literal(c, "true");
  }
  if (first == 'f') {
    return skip_literal(c, "false");
  }
  if (first == 'n') {
    return skip_literal(c, "null");
  }
  const char* start = c->p;
  while (c->p < c->end && strchr("+-0123456789.eE", *c->p) != NULL) {
    ++c->p;
  }
  return c->p > start;
}

/* With `obj` on an object, finds member `key` and returns a cursor on its value (after any
 * whitespace). Returns 0 when the value is not an object, or has no such member. */
static int find_member(json_cursor obj, const char* key, json_cursor* value) {
  const size_t key_len = strlen(key);
  skip_ws(&obj);
  if (obj.p >= obj.end || *obj.p != '{') {
    return 0;
  }
  ++obj.p;
  skip_ws(&obj);
  if (obj.p < obj.end && *obj.p == '}') {
    return 0;
  }
  for (;;) {
    char* name = NULL;
    size_t name_len = 0;
    skip_ws(&obj);
    if (!read_string(&obj, &name, &name_len)) {
      return 0;
    }
    const int match = name_len == key_len && memcmp(name, key, key_len) == 0;
    free(name);
    skip_ws(&obj);
    if (obj.p >= obj.end || *obj.p++ != ':') {
      return 0;
    }
    skip_ws(&obj);
    if (match) {
      *value = obj;
      return 1;
    }
    if (!skip_value(&obj, 1)) {
      return 0;
    }
    skip_ws(&obj);
    if (obj.p >= obj.end || *obj.p++ != ',') {
      return 0; /* '}' (end of object) or malformed: either way, not found */
    }
  }
}

/* Follows a path of member names ("node", "writes", NULL) from the root. */
static int find_path(json_cursor root, const char* const* path, json_cursor* value) {
  json_cursor at = root;
  for (; *path != NULL; ++path) {
    if (!find_member(at, *path, &at)) {
      return 0;
    }
  }
  *value = at;
  return 1;
}

/* ---- Output: a growable byte buffer and JSON string escaping. ------------------------------- */

typedef struct byte_buf {
  char* data;
  size_t len;
  size_t cap;
  int failed;
} byte_buf;

static void buf_append(byte_buf* b, const char* bytes, size_t len) {
  if (b->failed) {
    return;
  }
  if (b->len + len > b->cap) {
    size_t cap = b->cap == 0 ? 256 : b->cap;
    while (cap < b->len + len) {
      cap *= 2;
    }
    char* grown = (char*)realloc(b->data, cap);
    if (grown == NULL) {
      b->failed = 1;
      return;
    }
    b->data = grown;
    b->cap = cap;
  }
  memcpy(b->data + b->len, bytes, len);
  b->len += len;
}

static void buf_append_cstr(byte_buf* b, const char* text) { buf_append(b, text, strlen(text)); }

static void buf_append_json_string(byte_buf* b, const char* text, size_t len) {
  buf_append(b, "\"", 1);
  for (size_t i = 0; i < len; ++i) {
    const unsigned char ch = (unsigned char)text[i];
    if (ch == '"' || ch == '\\') {
      const char escaped[2] = {'\\', (char)ch};
      buf_append(b, escaped, 2);
    } else if (ch < 0x20) {
      char escaped[7];
      snprintf(escaped, sizeof escaped, "\\u%04x", (unsigned)ch);
      buf_append(b, escaped, 6);
    } else {
      buf_append(b, &text[i], 1);
    }
  }
  buf_append(b, "\"", 1);
}

/* ---- The plugin. ----------------------------------------------------------------------------- */

struct oe_plugin {
  const oe_host_api* host;
};

struct oe_node {
  const oe_host_api* host;
  char* id;    /* the node's id, for error messages */
  char* field; /* the one state field it writes */
  size_t field_len;
};

static oe_str cstr(const char* text) {
  oe_str s;
  s.ptr = text;
  s.len = strlen(text);
  return s;
}

/* Writes "text-upper node \"<id>\": <message>" to a host-owned error writer. */
static void report(const oe_host_api* host, oe_writer* err, const char* node_id,
                   const char* message) {
  byte_buf b = {NULL, 0, 0, 0};
  buf_append_cstr(&b, UPPER_KIND " node \"");
  buf_append_cstr(&b, node_id != NULL ? node_id : "?");
  buf_append_cstr(&b, "\": ");
  buf_append_cstr(&b, message);
  if (!b.failed) {
    oe_str s;
    s.ptr = b.data;
    s.len = b.len;
    host->write(err, s);
  }
  free(b.data);
}

static oe_status OE_ABI upper_init(const oe_host_api* host, oe_host_ctx* plugin_ctx,
                                   oe_plugin** out_self, oe_writer* err) {
  (void)plugin_ctx;
  oe_plugin* self = (oe_plugin*)malloc(sizeof *self);
  if (self == NULL) {
    host->write(err, cstr("out of memory"));
    return OE_RESOURCE_EXHAUSTED;
  }
  self->host = host;
  *out_self = self;
  return OE_OK;
}

static void OE_ABI upper_deinit(oe_plugin* self) { free(self); }

/* config_json is {"node": <spec>, "experience_dir": "..."}; the spec must list one `writes`. */
static oe_status OE_ABI upper_create(oe_plugin* self, const oe_node_kind* kind,
                                     oe_str config_json, oe_host_ctx* node_ctx,
                                     oe_node** out_node, oe_writer* err) {
  (void)kind; /* one kind: nothing to tell apart */
  (void)node_ctx;
  const json_cursor root = {config_json.ptr, config_json.ptr + config_json.len};
  static const char* const kIdPath[] = {"node", "id", NULL};
  static const char* const kWritesPath[] = {"node", "writes", NULL};
  char* id = NULL;
  size_t id_len = 0;
  json_cursor at;
  if (!find_path(root, kIdPath, &at) || !read_string(&at, &id, &id_len)) {
    report(self->host, err, NULL, "the host sent a node without an id");
    return OE_INVALID_ARGUMENT;
  }

  /* Exactly one string in `writes`: that is where the result goes. */
  char* field = NULL;
  size_t field_len = 0;
  int count = 0;
  if (find_path(root, kWritesPath, &at) && at.p < at.end && *at.p == '[') {
    ++at.p;
    skip_ws(&at);
    while (at.p < at.end && *at.p != ']') {
      char* name = NULL;
      size_t name_len = 0;
      if (!read_string(&at, &name, &name_len)) {
        count = -1;
        break;
      }
      if (++count == 1) {
        field = name;
        field_len = name_len;
      } else {
        free(name);
      }
      skip_ws(&at);
      if (at.p < at.end && *at.p == ',') {
        ++at.p;
        skip_ws(&at);
      }
    }
  }
  if (count != 1) {
    free(field);
    report(self->host, err, id,
           "list exactly one state field in `writes`; the upper-cased text goes there");
    free(id);
    return OE_INVALID_ARGUMENT;
  }

  oe_node* node = (oe_node*)malloc(sizeof *node);
  if (node == NULL) {
    free(field);
    free(id);
    self->host->write(err, cstr("out of memory"));
    return OE_RESOURCE_EXHAUSTED;
  }
  node->host = self->host;
  node->id = id;
  node->field = field;
  node->field_len = field_len;
  *out_node = node;
  return OE_OK;
}

static void OE_ABI upper_destroy(oe_node* node) {
  free(node->id);
  free(node->field);
  free(node);
}

/* request_json is {"node": ..., "args": {...}, "state_view": ..., ...}. */
static oe_status OE_ABI upper_invoke(oe_node* node, const oe_invocation* invocation) {
  const oe_host_api* host = node->host;
  const json_cursor root = {invocation->request_json.ptr,
                            invocation->request_json.ptr + invocation->request_json.len};
  static const char* const kTextPath[] = {"args", "text", NULL};
  json_cursor at;
  char* text = NULL;
  size_t text_len = 0;
  if (!find_path(root, kTextPath, &at) || !read_string(&at, &text, &text_len)) {
    report(host, invocation->error, node->id,
           "args.text must be a string, e.g. args: {text: \"hi\"}");
    return OE_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < text_len; ++i) {
    if (text[i] >= 'a' && text[i] <= 'z') {
      text[i] = (char)(text[i] - 'a' + 'A'); /* ASCII only: no locale, no UTF-8 case tables */
    }
  }

  byte_buf b = {NULL, 0, 0, 0};
  buf_append_cstr(&b, "{\"state_delta\":{");
  buf_append_json_string(&b, node->field, node->field_len);
  buf_append_cstr(&b, ":");
  buf_append_json_string(&b, text, text_len);
  buf_append_cstr(&b, "},\"edge_output\":");
  buf_append_json_string(&b, text, text_len);
  buf_append_cstr(&b, "}");
  free(text);

  oe_status status = OE_RESOURCE_EXHAUSTED;
  if (!b.failed) {
    oe_str response;
    response.ptr = b.data;
    response.len = b.len;
    status = host->write(invocation->response, response);
  }
  free(b.data);
  if (status != OE_OK) {
    report(host, invocation->error, node->id, "could not hand the result to the host (too large?)");
  }
  return status;
}

static const oe_node_kind kKinds[] = {{
    sizeof(oe_node_kind),
    0, /* not reentrant: one call per node at a time (this one would be safe, but needs no more) */
    UPPER_KIND,
    "Upper-cases args.text (ASCII letters) into the node's one `writes` field",
    "{\"type\":\"object\",\"required\":[\"args\"],\"properties\":{\"args\":{\"type\":\"object\","
    "\"required\":[\"text\"],\"properties\":{\"text\":{\"type\":\"string\"}}}}}",
    upper_create,
    upper_destroy,
    upper_invoke,
    NULL, /* cancel: a call takes microseconds, nothing to interrupt */
}};

static uint32_t OE_ABI upper_kind_count(const oe_plugin* self) {
  (void)self;
  return 1;
}

static const oe_node_kind* OE_ABI upper_kind_at(const oe_plugin* self, uint32_t index) {
  (void)self;
  return index == 0 ? &kKinds[0] : NULL;
}

static const void* OE_ABI upper_extension(const oe_plugin* self, const char* extension_id) {
  (void)self;
  (void)extension_id;
  return NULL;
}

static const oe_plugin_entry kEntry = {
    sizeof(oe_plugin_entry),
    OE_ABI_VERSION,
    OE_ABI_VERSION,
    0,
    "dev.oe.example.c-upper",
    "0.1.0",
    "Example plugin in C: the text-upper node kind",
    upper_init,
    upper_deinit,
    upper_kind_count,
    upper_kind_at,
    upper_extension,
};

OE_DECLARE_PLUGIN_ENTRY {
  /* 0.x ABIs are only compatible with themselves; saying no here gives a clear message. */
  if (OE_ABI_VERSION_GET_MAJOR(host_abi_version) != OE_ABI_VERSION_MAJOR) {
    return NULL;
  }
  return &kEntry;
}
