/*  drv_suggest — see the header. */
#include "drover/drv_suggest.h"

#include <string.h>

size_t drv_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 150 || lb > 150) {
        return 99;
    }
    size_t row[152];
    for (size_t j = 0; j <= lb; j++) {
        row[j] = j;
    }
    for (size_t i = 1; i <= la; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t above = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diagonal + cost;
            best = row[j] + 1 < best ? row[j] + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[lb];
}

const char *drv_suggest(const char *word, const char *const *candidates, size_t count)
{
    size_t len = strlen(word);
    size_t allowed = len / 3 > 2 ? len / 3 : 2;
    const char *best = NULL;
    size_t best_distance = allowed + 1;
    for (size_t i = 0; i < count; i++) {
        size_t d = len >= 2 && !strncmp(candidates[i], word, len) ? 1 : drv_edit_distance(word, candidates[i]);
        if (d > 0 && d < best_distance) {
            best = candidates[i];
            best_distance = d;
        }
    }
    return best;
}
