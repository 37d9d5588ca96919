/*  drv_path — see the header. */
#include "drover/drv_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_push(drv_path_t *out, const char *key, size_t len, char *err, size_t errlen)
{
    if (out->depth == DRV_PATH_MAX_DEPTH) {
        snprintf(err, errlen, "deeper than %d keys", DRV_PATH_MAX_DEPTH);
        return -1;
    }
    char *copy = malloc(len + 1);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(copy, key, len);
    copy[len] = 0;
    out->keys[out->depth] = copy;
    out->lengths[out->depth++] = len;
    return 0;
}

//  A quoted key from text[*at] (its opening quote): unescaped into key.
static int s_quoted(const char *text, size_t *at, char *key, size_t *len, char *err, size_t errlen)
{
    size_t start = *at;
    *len = 0;
    for ((*at)++; text[*at] && text[*at] != '"'; (*at)++) {
        if (text[*at] == '\\' && (text[*at + 1] == '"' || text[*at + 1] == '\\')) {
            (*at)++;
        }
        key[(*len)++] = text[*at];
    }
    if (text[*at] != '"') {
        snprintf(err, errlen, "the key quoted at offset %zu does not end", start);
        return -1;
    }
    (*at)++;
    return 0;
}

int drv_path_parse(const char *text, drv_path_t *out, char *err, size_t errlen)
{
    *out = (drv_path_t){0};
    const char *bracket = strchr(text, '[');
    bool scope = !strcmp(text, "scope.name") || !strcmp(text, "scope.version");
    if (!bracket && !scope) {
        return s_push(out, text, strlen(text), err, errlen); // a plain name: one top-level field
    }
    if (scope) {
        return s_push(out, "scope", 5, err, errlen) || s_push(out, text + 6, strlen(text + 6), err, errlen) ? -1 : 0;
    }
    if (bracket == text) {
        snprintf(err, errlen, "a path begins with a field's name, as attributes[\"key\"]");
        return -1;
    }
    int rc = s_push(out, text, (size_t)(bracket - text), err, errlen);
    size_t at = (size_t)(bracket - text), len;
    char *key = malloc(strlen(text) + 1);
    while (rc == 0 && text[at]) {
        if (text[at] != '[' || text[at + 1] != '"') {
            snprintf(err, errlen, "expected [\"key\"] at offset %zu", at);
            rc = -1;
        } else if (!key) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        } else {
            at++;
            rc = s_quoted(text, &at, key, &len, err, errlen);
            if (rc == 0 && text[at] != ']') {
                snprintf(err, errlen, "expected ] at offset %zu", at);
                rc = -1;
            }
            at++;
            rc = rc == 0 ? s_push(out, key, len, err, errlen) : rc;
        }
    }
    free(key);
    if (rc != 0) {
        drv_path_free(out);
    }
    return rc;
}

void drv_path_free(drv_path_t *path)
{
    for (int i = 0; i < path->depth; i++) {
        free(path->keys[i]);
    }
    path->depth = 0;
}
