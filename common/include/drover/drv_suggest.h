/*  drv_suggest — "did you mean": the candidate closest to a mistyped word,
    for error messages (an unknown node type, config key or node id; a
    droverctl command or pipeline name). */
#ifndef DRV_SUGGEST_H
#define DRV_SUGGEST_H

#include <stddef.h>

//  Levenshtein distance between a and b (99 when either is over 150 bytes).
size_t drv_edit_distance(const char *a, const char *b);

//  The candidate closest to word, when it is close enough to be a typo
//  (at most max(2, len/3) edits, or word is a prefix of it); else NULL.
const char *drv_suggest(const char *word, const char *const *candidates, size_t count);

#endif
