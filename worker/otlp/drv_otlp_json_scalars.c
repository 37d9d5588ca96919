/*  drv_otlp_json_scalars — the scalar fields of OTLP/JSON and the parse's
    error paths (drv_otlp_json_internal.h). */
#include "drv_otlp_json_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void drv_otlp_json_fail(ctx_t *c, const char *field, const char *fmt, ...)
{
    if (c->failed) {
        return;
    }
    c->failed = true;
    char what[200];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    snprintf(c->err, c->errlen, "%s%s%s: %s", c->path, c->path[0] && field[0] ? "." : "", field, what);
}

void *drv_otlp_json_alloc(ctx_t *c, size_t size)
{
    void *p = calloc(1, size ? size : 1);
    if (!p && !c->failed) {
        drv_otlp_json_fail(c, "", "out of memory");
        c->out_of_memory = true;
    }
    return p;
}

size_t drv_otlp_json_enter(ctx_t *c, const char *field, long index)
{
    size_t at = strlen(c->path);
    if (index >= 0) {
        snprintf(c->path + at, sizeof c->path - at, "%s%s[%ld]", at && field[0] ? "." : "", field, index);
    } else {
        snprintf(c->path + at, sizeof c->path - at, "%s%s", at ? "." : "", field);
    }
    return at;
}

void drv_otlp_json_leave(ctx_t *c, size_t at)
{
    c->path[at] = 0;
}

json_t *drv_otlp_json_get(const json_t *obj, const char *camel)
{
    json_t *v = json_object_get(obj, camel);
    if (v) {
        return v;
    }
    char snake[64];
    size_t n = 0;
    for (const char *p = camel; *p && n + 2 < sizeof snake; p++) {
        if (isupper((unsigned char)*p)) {
            snake[n++] = '_';
        }
        snake[n++] = (char)tolower((unsigned char)*p);
    }
    snake[n] = 0;
    return json_object_get(obj, snake);
}

//  ---------------------------------------------------------------- scalars

char *drv_otlp_json_string(ctx_t *c, const json_t *obj, const char *field)
{
    json_t *v = drv_otlp_json_get(obj, field);
    if (!v || json_is_null(v)) {
        return (char *)protobuf_c_empty_string;
    }
    if (!json_is_string(v)) {
        drv_otlp_json_fail(c, field, "must be a string");
        return (char *)protobuf_c_empty_string;
    }
    char *copy = strdup(json_string_value(v));
    if (!copy) {
        drv_otlp_json_fail(c, field, "out of memory");
        c->out_of_memory = true;
        return (char *)protobuf_c_empty_string;
    }
    return copy;
}

uint64_t drv_otlp_json_uint(ctx_t *c, const json_t *obj, const char *field, uint64_t max)
{
    json_t *v = drv_otlp_json_get(obj, field);
    if (!v || json_is_null(v)) {
        return 0;
    }
    if (json_is_integer(v) && json_integer_value(v) >= 0 && (uint64_t)json_integer_value(v) <= max) {
        return (uint64_t)json_integer_value(v);
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        errno = 0;
        unsigned long long n = strtoull(s, &end, 10);
        if (isdigit((unsigned char)s[0]) && !*end && !errno && n <= max) {
            return n;
        }
    }
    drv_otlp_json_fail(c, field, "must be an unsigned integer (a number or a decimal string) up to %llu",
                       (unsigned long long)max);
    return 0;
}

int64_t drv_otlp_json_int64(ctx_t *c, const json_t *v, const char *field)
{
    if (json_is_integer(v)) {
        return json_integer_value(v);
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        errno = 0;
        long long n = strtoll(s, &end, 10);
        const char *digits = s[0] == '-' ? s + 1 : s;
        if (isdigit((unsigned char)digits[0]) && !*end && !errno) {
            return n;
        }
    }
    drv_otlp_json_fail(c, field, "must be an integer (a number or a decimal string)");
    return 0;
}

int32_t drv_otlp_json_enum(ctx_t *c, const json_t *obj, const char *field, const char *const *names, int count)
{
    json_t *v = drv_otlp_json_get(obj, field);
    if (!v || json_is_null(v)) {
        return 0;
    }
    if (json_is_integer(v) && json_integer_value(v) >= INT32_MIN && json_integer_value(v) <= INT32_MAX) {
        return (int32_t)json_integer_value(v);
    }
    for (int i = 0; json_is_string(v) && i < count; i++) {
        if (!strcmp(json_string_value(v), names[i])) {
            return i;
        }
    }
    drv_otlp_json_fail(c, field, "must be an integer (or the enum's name)");
    return 0;
}

static int s_hexval(int ch)
{
    return isdigit(ch)                ? ch - '0'
           : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
           : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
                                      : -1;
}

ProtobufCBinaryData drv_otlp_json_hex_id(ctx_t *c, const json_t *obj, const char *field)
{
    ProtobufCBinaryData out = {0, NULL};
    json_t *v = drv_otlp_json_get(obj, field);
    if (!v || json_is_null(v)) {
        return out;
    }
    const char *s = json_string_value(v);
    size_t len = s ? strlen(s) : 0;
    if (!s || len % 2 || len > 128) {
        drv_otlp_json_fail(c, field, "must be an id in hex (an even number of digits, at most 128)");
        return out;
    }
    out.data = len ? drv_otlp_json_alloc(c, len / 2) : NULL;
    if (len && !out.data) {
        return out;
    }
    for (size_t i = 0; i < len; i += 2) {
        int hi = s_hexval((unsigned char)s[i]), lo = s_hexval((unsigned char)s[i + 1]);
        if (hi < 0 || lo < 0) {
            drv_otlp_json_fail(c, field, "must be an id in hex");
            break;
        }
        out.data[out.len++] = (uint8_t)(hi << 4 | lo);
    }
    return out;
}

static int s_b64val(int ch)
{
    if (ch >= 'A' && ch <= 'Z') {
        return ch - 'A';
    }
    if (ch >= 'a' && ch <= 'z') {
        return ch - 'a' + 26;
    }
    if (ch >= '0' && ch <= '9') {
        return ch - '0' + 52;
    }
    return ch == '+' || ch == '-' ? 62 : ch == '/' || ch == '_' ? 63 : -1; // standard and URL-safe
}

//  Base64 (protobuf's JSON for bytes), padded or not.
ProtobufCBinaryData drv_otlp_json_base64(ctx_t *c, const json_t *v, const char *field)
{
    ProtobufCBinaryData out = {0, NULL};
    const char *s = json_string_value(v);
    if (!s) {
        drv_otlp_json_fail(c, field, "must be base64");
        return out;
    }
    size_t len = strlen(s);
    while (len && s[len - 1] == '=') {
        len--;
    }
    if (len % 4 == 1) {
        drv_otlp_json_fail(c, field, "must be base64");
        return out;
    }
    out.data = drv_otlp_json_alloc(c, len * 3 / 4 + 1);
    if (!out.data) {
        return out;
    }
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int d = s_b64val((unsigned char)s[i]);
        if (d < 0) {
            drv_otlp_json_fail(c, field, "must be base64");
            return out;
        }
        acc = acc << 6 | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.data[out.len++] = (uint8_t)(acc >> bits);
        }
    }
    return out;
}
