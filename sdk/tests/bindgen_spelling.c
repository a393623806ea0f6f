/* The OE_BINDGEN spelling of the headers must compile as C11 under the same strict warnings as
 * the normal one: a binding generator parses them as C. Compiled with -DOE_BINDGEN. */
#ifndef OE_BINDGEN
#error "compile bindgen_spelling.c with -DOE_BINDGEN"
#endif

#include <oe/ext/http.h>
#include <oe/ext/llm.h>
#include <oe/ext/prompt.h>
#include <oe/kinds/tool.h>
#include <oe/oe.h>

int oe_sdk_bindgen_spelling(void);
int oe_sdk_bindgen_spelling(void) { return OE_OK + OE_LOG_ERROR; }
