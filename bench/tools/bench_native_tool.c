/* The benchmark's native tool: returns {"state_delta": {<args.out>: <args.i>}} without a JSON
 * library (a few string scans), so the figure measured is the host's cost, not the tool's. With
 * args.sleep_ms it first waits that long without using the CPU: an I/O-bound node
 * (bench/scale_out.py). */
#include <oe/kinds/tool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char* findValue(oe_str in, const char* key) {
  const char* end = in.ptr + in.len;
  size_t klen = strlen(key);
  for (const char* p = in.ptr; p + klen < end; ++p) {
    if (memcmp(p, key, klen) == 0) {
      return p + klen;
    }
  }
  return NULL;
}

OE_DECLARE_TOOL {
  const char* field = findValue(input_json, "\"out\":\"");
  const char* num = findValue(input_json, "\"i\":");
  const char* field_end = field == NULL ? NULL : memchr(field, '"', (size_t)(input_json.ptr + input_json.len - field));
  if (field_end == NULL || num == NULL) {
    static const char kMsg[] = "bench tool: args.out and args.i are required";
    oe_str msg = {kMsg, sizeof kMsg - 1};
    host->write(err, msg);
    return OE_INVALID_ARGUMENT;
  }
  const char* sleep_ms = findValue(input_json, "\"sleep_ms\":");
  if (sleep_ms != NULL) {
    long ms = strtol(sleep_ms, NULL, 10);
    struct timespec wait = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&wait, &wait) != 0) {
    }
  }
  size_t num_len = strspn(num, "0123456789");
  char buf[256];
  int n = snprintf(buf, sizeof buf, "{\"state_delta\":{\"%.*s\":%.*s}}", (int)(field_end - field),
                   field, (int)num_len, num);
  oe_str s = {buf, (size_t)n};
  return host->write(out, s);
}
