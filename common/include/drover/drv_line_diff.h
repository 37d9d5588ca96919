/*  drv_line_diff — what changed between two texts, line by line, as a
    unified diff without file names: hunks "@@ -A,N +B,M @@", then each
    line prefixed by ' ' (unchanged, two around a change), '-' or '+'. */
#ifndef DRV_LINE_DIFF_H
#define DRV_LINE_DIFF_H

#include <jansson.h>
#include <stddef.h>

//  The diff's lines as a JSON array of strings, at most max_lines of them
//  and then "(N more lines)". New reference.
json_t *drv_line_diff(const char *before, const char *after, size_t max_lines);

#endif
