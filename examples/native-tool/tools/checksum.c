/* A native tool in plain C: the CRC-32 and the UTF-8 byte length of args.text.
 *
 * A native tool is a shared library that exports one function, declared with OE_DECLARE_TOOL
 * from <oe/kinds/tool.h>. It receives the same object a .mjs tool gets,
 * {...args, "_edge_inputs": {...}, "_state": {...}}, as JSON text, and appends its result
 * {"state_delta": {...}, "edge_output"?, "metrics"?} to `out` with host->write. It links
 * nothing but libc: the small JSON reader below is all the parsing it needs. */
#include <oe/kinds/tool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cursor {
  const char* p;
  const char* end;
} cursor;

static oe_str str_of(const char* text, size_t len) {
  oe_str s;
  s.ptr = text;
  s.len = len;
  return s;
}

static void fail(const oe_host_api* host, oe_writer* err, const char* message) {
  host->write(err, str_of(message, strlen(message)));
}

static void skip_ws(cursor* c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) {
    ++c->p;
  }
}

static int hex4(const char* p, uint32_t* out) {
  uint32_t value = 0;
  int i;
  for (i = 0; i < 4; ++i) {
    const char h = p[i];
    value <<= 4;
    if (h >= '0' && h <= '9') {
      value |= (uint32_t)(h - '0');
    } else if (h >= 'a' && h <= 'f') {
      value |= (uint32_t)(h - 'a' + 10);
    } else if (h >= 'A' && h <= 'F') {
      value |= (uint32_t)(h - 'A' + 10);
    } else {
      return 0;
    }
  }
  *out = value;
  return 1;
}

static size_t put_utf8(uint32_t code, char* out) {
  if (code < 0x80) {
    out[0] = (char)code;
    return 1;
  }
  if (code < 0x800) {
    out[0] = (char)(0xC0 | (code >> 6));
    out[1] = (char)(0x80 | (code & 0x3F));
    return 2;
  }
  if (code < 0x10000) {
    out[0] = (char)(0xE0 | (code >> 12));
    out[1] = (char)(0x80 | ((code >> 6) & 0x3F));
    out[2] = (char)(0x80 | (code & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (code >> 18));
  out[1] = (char)(0x80 | ((code >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((code >> 6) & 0x3F));
  out[3] = (char)(0x80 | (code & 0x3F));
  return 4;
}

/* Reads a JSON string at c->p. With out != NULL, stores the decoded bytes (never more than the
 * encoded length) and their count in *out_len. Returns 0 on malformed input. */
static int read_string(cursor* c, char* out, size_t* out_len) {
  size_t n = 0;
  if (c->p >= c->end || *c->p != '"') {
    return 0;
  }
  ++c->p;
  while (c->p < c->end && *c->p != '"') {
    char ch = *c->p++;
    if (ch == '\\') {
      if (c->p >= c->end) {
        return 0;
      }
      ch = *c->p++;
      if (ch == 'u') {
        uint32_t code = 0;
        if (c->end - c->p < 4 || !hex4(c->p, &code)) {
          return 0;
        }
        c->p += 4;
        if (code >= 0xD800 && code <= 0xDBFF && c->end - c->p >= 6 && c->p[0] == '\\' &&
            c->p[1] == 'u') {
          uint32_t low = 0;
          if (hex4(c->p + 2, &low) && low >= 0xDC00 && low <= 0xDFFF) {
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            c->p += 6;
          }
        }
        if (out != NULL) {
          n += put_utf8(code, out + n);
        }
        continue;
      }
      switch (ch) {
        case 'b':
          ch = '\b';
          break;
        case 'f':
          ch = '\f';
          break;
        case 'n':
          ch = '\n';
          break;
        case 'r':
          ch = '\r';
          break;
        case 't':
          ch = '\t';
          break;
        default:
          break; /* \" \\ \/ stand for themselves */
      }
    }
    if (out != NULL) {
      out[n] = ch;
    }
    ++n;
  }
  if (c->p >= c->end) {
    return 0;
  }
  ++c->p; /* closing quote */
  if (out_len != NULL) {
    *out_len = n;
  }
  return 1;
}

/* Skips one JSON value of any type. Returns 0 on malformed input. */
static int skip_value(cursor* c) {
  int depth = 0;
  skip_ws(c);
  do {
    if (c->p >= c->end) {
      return 0;
    }
    if (*c->p == '"') {
      if (!read_string(c, NULL, NULL)) {
        return 0;
      }
    } else if (*c->p == '{' || *c->p == '[') {
      ++depth;
      ++c->p;
    } else if (*c->p == '}' || *c->p == ']') {
      --depth;
      ++c->p;
    } else {
      ++c->p; /* numbers, literals, commas, colons, whitespace */
    }
  } while (depth > 0);
  /* A scalar ends at the next delimiter. */
  while (c->p < c->end && *c->p != ',' && *c->p != '}' && *c->p != ']') {
    if (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r') {
      break;
    }
    ++c->p;
  }
  return 1;
}

static uint32_t crc32_of(const unsigned char* bytes, size_t len) {
  uint32_t crc = 0xFFFFFFFFu;
  size_t i;
  int bit;
  for (i = 0; i < len; ++i) {
    crc ^= bytes[i];
    for (bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
  }
  return ~crc;
}

OE_DECLARE_TOOL {
  cursor c;
  c.p = input_json.ptr;
  c.end = input_json.ptr + input_json.len;
  skip_ws(&c);
  if (c.p >= c.end || *c.p != '{') {
    fail(host, err, "checksum: the input is not a JSON object");
    return OE_INVALID_ARGUMENT;
  }
  ++c.p;
  for (;;) {
    cursor key_start;
    size_t key_len = 0;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') {
      break;
    }
    key_start = c;
    if (!read_string(&key_start, NULL, &key_len)) {
      fail(host, err, "checksum: malformed input JSON");
      return OE_INVALID_ARGUMENT;
    }
    if (key_len == 4 && memcmp(c.p, "\"text\"", 6) == 0) {
      char* text;
      size_t text_len = 0;
      char line[160];
      int written;
      c = key_start;
      skip_ws(&c);
      if (c.p >= c.end || *c.p != ':') {
        break;
      }
      ++c.p;
      skip_ws(&c);
      if (c.p >= c.end || *c.p != '"') {
        fail(host, err, "checksum: args.text must be a string");
        return OE_INVALID_ARGUMENT;
      }
      text = (char*)malloc(input_json.len + 1);
      if (text == NULL) {
        fail(host, err, "checksum: out of memory");
        return OE_RESOURCE_EXHAUSTED;
      }
      if (!read_string(&c, text, &text_len)) {
        free(text);
        fail(host, err, "checksum: malformed args.text");
        return OE_INVALID_ARGUMENT;
      }
      written =
          snprintf(line, sizeof line,
                   "{\"state_delta\":{\"length\":%lu,\"crc32\":\"%08x\"},"
                   "\"edge_output\":{\"algorithm\":\"crc32\"}}",
                   (unsigned long)text_len, (unsigned)crc32_of((unsigned char*)text, text_len));
      free(text);
      return host->write(out, str_of(line, (size_t)written));
    }
    c = key_start;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != ':') {
      break;
    }
    ++c.p;
    if (!skip_value(&c)) {
      break;
    }
    skip_ws(&c);
    if (c.p < c.end && *c.p == ',') {
      ++c.p;
    }
  }
  fail(host, err, "checksum: args.text is missing; set args: { text: \"...\" } on the node");
  return OE_INVALID_ARGUMENT;
}
