/* A native tool in plain C: the CRC-32 and the UTF-8 byte length of args.text, or of args.text
 * repeated args.repeat times (default 1).
 *
 * A native tool is a shared library that exports one function, declared with OE_DECLARE_TOOL
 * from <oe/kinds/tool.h>. It receives the same object a .mjs tool gets,
 * {...args, "_edge_inputs": {...}, "_state": {...}}, as JSON text, and appends its result
 * {"state_delta": {...}, "edge_output"?, "metrics"?} to `out` with host->write. Its call context
 * `call` is how it talks to the run while it works: it logs what it computed (a node.log event
 * naming the node), says what it is doing when a job is long (node.activity), and polls
 * is_cancelled so a timeout_ms, a fail_run or Ctrl-C stops a long checksum within milliseconds.
 * It links nothing but libc: the small JSON reader below is all the parsing it needs. */
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

/* CRC-32 (IEEE 802.3, reflected) over `len` more bytes; `crc` is the running register, which
 * starts at 0xFFFFFFFF and is inverted once at the end. Bitwise: slow, but short. */
static uint32_t crc32_update(uint32_t crc, const unsigned char* bytes, size_t len) {
  size_t i;
  int bit;
  for (i = 0; i < len; ++i) {
    crc ^= bytes[i];
    for (bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
  }
  return crc;
}

/* The lengths a JSON number carries exactly (2^53 - 1): the state field `length` is a number. */
#define MAX_TOTAL_BYTES 9007199254740991ULL
/* How much work between two polls of is_cancelled: about a millisecond of CRC. */
#define BYTES_PER_POLL ((unsigned long long)1 << 18)

typedef struct tool_args {
  char* text; /* args.text decoded, malloc'ed; NULL when missing */
  size_t text_len;
  unsigned long long repeat; /* args.repeat, 1 when missing */
} tool_args;

/* Reads a JSON integer >= 1 at c->p into *out. Returns 0 when it is anything else. */
static int read_positive_integer(cursor* c, unsigned long long* out) {
  unsigned long long value = 0;
  const char* first = c->p;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    const unsigned long long digit = (unsigned long long)(*c->p - '0');
    if (value > (MAX_TOTAL_BYTES - digit) / 10) {
      return 0;
    }
    value = value * 10 + digit;
    ++c->p;
  }
  if (c->p == first || value == 0) {
    return 0;
  }
  skip_ws(c);
  if (c->p >= c->end || (*c->p != ',' && *c->p != '}')) {
    return 0; /* a fraction, an exponent or garbage follows */
  }
  *out = value;
  return 1;
}

/* Frees what read_args kept and reports `message`. */
static oe_status bad_input(const oe_host_api* host, oe_writer* err, tool_args* a,
                           const char* message) {
  free(a->text);
  a->text = NULL;
  fail(host, err, message);
  return OE_INVALID_ARGUMENT;
}

/* Fills *a from the top-level members "text" and "repeat" of the input object, skipping the
 * rest (nested objects may hold a "text" of their own). Returns OE_OK or a status with a message
 * in err; a->text is set (to free) only on OE_OK. */
static oe_status read_args(const oe_host_api* host, oe_writer* err, oe_str input, tool_args* a) {
  cursor c;
  a->text = NULL;
  a->text_len = 0;
  a->repeat = 1;
  c.p = input.ptr;
  c.end = input.ptr + input.len;
  skip_ws(&c);
  if (c.p >= c.end || *c.p != '{') {
    fail(host, err, "checksum: the input is not a JSON object");
    return OE_INVALID_ARGUMENT;
  }
  ++c.p;
  for (;;) {
    cursor value;
    size_t key_len = 0;
    int is_text;
    int is_repeat;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') {
      break;
    }
    value = c;
    if (!read_string(&value, NULL, &key_len)) {
      return bad_input(host, err, a, "checksum: malformed input JSON");
    }
    /* Compared in their encoded form: the two keys need no escapes. */
    is_text = key_len == 4 && memcmp(c.p, "\"text\"", 6) == 0;
    is_repeat = key_len == 6 && memcmp(c.p, "\"repeat\"", 8) == 0;
    skip_ws(&value);
    if (value.p >= value.end || *value.p != ':') {
      return bad_input(host, err, a, "checksum: malformed input JSON");
    }
    ++value.p;
    skip_ws(&value);
    c = value;
    if (is_text) {
      if (c.p >= c.end || *c.p != '"') {
        return bad_input(host, err, a, "checksum: args.text must be a string");
      }
      free(a->text); /* a repeated key: the last one counts, as in JSON.parse */
      a->text = (char*)malloc(input.len + 1);
      if (a->text == NULL) {
        fail(host, err, "checksum: out of memory");
        return OE_RESOURCE_EXHAUSTED;
      }
      if (!read_string(&c, a->text, &a->text_len)) {
        return bad_input(host, err, a, "checksum: malformed input JSON");
      }
    } else if (is_repeat) {
      if (!read_positive_integer(&c, &a->repeat)) {
        return bad_input(host, err, a,
                         "checksum: args.repeat must be a whole number from 1 to 2^53 - 1, e.g. "
                         "repeat: 1000");
      }
    } else if (!skip_value(&c)) {
      return bad_input(host, err, a, "checksum: malformed input JSON");
    }
    skip_ws(&c);
    if (c.p < c.end && *c.p == ',') {
      ++c.p;
    }
  }
  if (a->text == NULL) {
    return bad_input(host, err, a,
                     "checksum: args.text is missing; set args: { text: \"...\" } on the node");
  }
  return OE_OK;
}

OE_DECLARE_TOOL {
  tool_args a;
  unsigned long long total;
  unsigned long long done = 0;
  unsigned long long since_poll = 0;
  unsigned long long n;
  uint32_t crc = 0xFFFFFFFFu;
  char line[200];
  int written;
  oe_status status = read_args(host, err, input_json, &a);
  if (status != OE_OK) {
    return status;
  }
  if (a.text_len != 0 && a.repeat > MAX_TOTAL_BYTES / a.text_len) {
    free(a.text);
    fail(host, err, "checksum: args.text times args.repeat is more than 2^53 - 1 bytes");
    return OE_INVALID_ARGUMENT;
  }
  total = (unsigned long long)a.text_len * a.repeat;
  if (total > BYTES_PER_POLL) {
    /* Shown by `oe run` under the node while it works, and kept in the run's events. */
    written = snprintf(line, sizeof line, "{\"activity\":\"checksumming %llu bytes\"}", total);
    host->emit_event(call, str_of("node.activity", strlen("node.activity")),
                     str_of(line, (size_t)written));
  }
  for (n = 0; n < a.repeat && a.text_len != 0; ++n) {
    crc = crc32_update(crc, (const unsigned char*)a.text, a.text_len);
    done += a.text_len;
    since_poll += a.text_len;
    if (since_poll >= BYTES_PER_POLL) {
      since_poll = 0;
      if (host->is_cancelled(call)) {
        free(a.text);
        written =
            snprintf(line, sizeof line, "checksum: stopped after %llu of %llu bytes", done, total);
        host->write(err, str_of(line, (size_t)written));
        return OE_CANCELLED;
      }
    }
  }
  free(a.text);
  crc = ~crc;

  written = snprintf(line, sizeof line, "crc32 %08lx of %llu bytes", (unsigned long)crc, total);
  host->log(call, OE_LOG_INFO, str_of(line, (size_t)written));
  written = snprintf(line, sizeof line,
                     "{\"state_delta\":{\"length\":%llu,\"crc32\":\"%08lx\"},"
                     "\"edge_output\":{\"algorithm\":\"crc32\"}}",
                     total, (unsigned long)crc);
  return host->write(out, str_of(line, (size_t)written));
}
