/*  drv_regex — the bounds every PCRE2 match of a record or a line runs
    under (processor:parse, receiver:file's multiline.start_pattern;
    docs/security.md): backtracking steps, and the interpreter's heap and
    depth, which the JIT does not use but a pattern starting (*NO_JIT), or
    one the JIT refuses, does. A match past a bound fails, counted by the
    caller; the instance goes on. A pattern's own (*LIMIT_...) can only
    lower them. */
#ifndef DRV_REGEX_H
#define DRV_REGEX_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#define DRV_REGEX_MATCH_LIMIT 1000000  // backtracking steps a match may take
#define DRV_REGEX_DEPTH_LIMIT 1000000  // nested backtracking points (the interpreter)
#define DRV_REGEX_HEAP_KIB (20 * 1024) // the interpreter's backtracking memory

//  A match context with those bounds, or NULL when out of memory.
pcre2_match_context *drv_regex_context(void);

#endif
