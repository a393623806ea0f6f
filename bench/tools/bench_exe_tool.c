/* The benchmark's executable tool: reads the JSON object on stdin, prints
 * {"state_delta": {<out>: <i>}}. Linked statically so the figure is spawn + pipes, not ld.so. */
#include <stdio.h>
#include <string.h>

int main(void) {
  static char in[1 << 20];
  size_t len = fread(in, 1, sizeof in - 1, stdin);
  in[len] = '\0';
  const char* field = strstr(in, "\"out\":\"");
  const char* num = strstr(in, "\"i\":");
  if (field == NULL || num == NULL) {
    fputs("bench tool: args.out and args.i are required\n", stderr);
    return 2;
  }
  field += 7;
  num += 4;
  const char* field_end = strchr(field, '"');
  printf("{\"state_delta\":{\"%.*s\":%.*s}}\n", (int)(field_end - field), field,
         (int)strspn(num, "0123456789"), num);
  return 0;
}
