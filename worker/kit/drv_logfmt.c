/*  drv_logfmt — see the header. */
#include "drv_logfmt.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool s_key_byte(unsigned char c)
{
    return c > ' ' && c != '=' && c != '"' && c != 0x7f;
}

static msgpack_object s_str(const char *ptr, size_t size)
{
    msgpack_object o = {.type = MSGPACK_OBJECT_STR};
    o.via.str.ptr = ptr;
    o.via.str.size = (uint32_t)size;
    return o;
}

//  A quoted value from text[*at] (the opening quote) on: its bytes, escapes
//  undone, in zone; -1 when it does not end.
static int s_quoted(const char *text, size_t len, size_t *at, msgpack_zone *zone, msgpack_object *out)
{
    size_t start = ++*at, escapes = 0;
    while (*at < len && text[*at] != '"') {
        if (text[*at] == '\\' && *at + 1 < len) {
            (*at)++;
            escapes++;
        }
        (*at)++;
    }
    if (*at >= len) {
        return -1;
    }
    size_t size = *at - start;
    (*at)++; // the closing quote
    if (!escapes) {
        *out = s_str(text + start, size);
        return 0;
    }
    char *copy = msgpack_zone_malloc(zone, size ? size : 1);
    if (!copy) {
        return -2;
    }
    size_t n = 0;
    for (size_t i = start; i < start + size; i++) {
        char c = text[i];
        if (c == '\\' && i + 1 < start + size) {
            c = text[++i];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        }
        copy[n++] = c;
    }
    *out = s_str(copy, n);
    return 0;
}

int drv_logfmt_parse(const char *text, size_t len, msgpack_zone *zone, msgpack_object_kv **kv, size_t *n, char *err,
                     size_t errlen)
{
    size_t cap = 0;
    for (size_t i = 0; i < len; i++) { // at most one pair per key's first byte
        cap += s_key_byte((unsigned char)text[i]) && (i == 0 || !s_key_byte((unsigned char)text[i - 1]));
    }
    *n = 0;
    *kv = msgpack_zone_malloc(zone, (cap ? cap : 1) * sizeof **kv);
    if (!*kv) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t at = 0;
    while (at < len) {
        unsigned char c = (unsigned char)text[at];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            at++;
            continue;
        }
        if (!s_key_byte(c)) {
            snprintf(err, errlen, "logfmt: a key was expected at offset %zu, not '%c'", at, c >= ' ' ? c : '?');
            return -1;
        }
        size_t key = at;
        while (at < len && s_key_byte((unsigned char)text[at])) {
            at++;
        }
        msgpack_object_kv *pair = &(*kv)[(*n)++];
        pair->key = s_str(text + key, at - key);
        if (at >= len || text[at] != '=') {
            pair->val = (msgpack_object){.type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = true};
            continue;
        }
        at++; // '='
        if (at < len && text[at] == '"') {
            int rc = s_quoted(text, len, &at, zone, &pair->val);
            if (rc != 0) {
                snprintf(err, errlen, rc == -1 ? "logfmt: the quoted value of \"%.*s\" does not end" : "out of memory",
                         (int)(pair->key.via.str.size > 64 ? 64 : pair->key.via.str.size), text + key);
                return -1;
            }
            continue;
        }
        size_t value = at;
        while (at < len && (unsigned char)text[at] > ' ') {
            at++;
        }
        pair->val = s_str(text + value, at - value);
    }
    return 0;
}
