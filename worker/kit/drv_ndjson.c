/*  drv_ndjson — msgpack objects to JSON text.
    Map keys that are not strings are written as their JSON text in quotes, so
    every line stays a JSON object. Non-finite floats become null. Strings
    are written as strictly valid UTF-8 (docs/security.md); binary as base64. */
#include "drv_ndjson.h"

#include "drover/drv_utf8.h"

#include <czmq.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int s_base64(drv_buf_t *out, const void *data, size_t size)
{
    zarmour_t *armour = zarmour_new();
    zarmour_set_mode(armour, ZARMOUR_MODE_BASE64_STD);
    zarmour_set_line_breaks(armour, false);
    char *encoded = zarmour_encode(armour, (const byte *)data, size);
    zarmour_destroy(&armour);
    if (!encoded) {
        return -1;
    }
    int rc = drv_buf_putc(out, '"') | drv_buf_append(out, encoded, strlen(encoded)) | drv_buf_putc(out, '"');
    zstr_free(&encoded);
    return rc;
}

//  The bytes a string holds as they are: printable ASCII but " and \.
static const bool s_plain[256] = {
    [' ' ... '!'] = true,
    ['#' ... '['] = true,
    [']' ... '~'] = true,
};

//  True when none of eight bytes needs a look of its own: no control
//  byte, no " or \, nothing past ASCII. Each test finds whether any byte
//  is below a bound (x - n*ones & ~x & highs, exact for "any" when n <= 128).
static inline bool s_word_plain(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
    uint64_t special = ((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | w;
    return (special & highs) == 0;
}

//  Strictly valid UTF-8 out, whatever came in: each ill-formed subpart
//  (surrogates, overlongs, past U+10FFFF, truncated) becomes U+FFFD.
static int s_string(drv_buf_t *out, const char *s, size_t len)
{
    if (drv_buf_reserve(out, len + 2) != 0 || drv_buf_putc(out, '"') != 0) {
        return -1;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        //  A run of what needs no escaping goes in at once.
        size_t run = i;
        uint64_t word;
        while (len - run >= 8 && (memcpy(&word, p + run, 8), s_word_plain(word))) {
            run += 8;
        }
        while (run < len && s_plain[p[run]]) {
            run++;
        }
        if (run > i) {
            if (drv_buf_append(out, s + i, run - i) != 0) {
                return -1;
            }
            i = run;
            continue;
        }
        unsigned char c = p[i];
        if (c >= 0x80) {
            size_t bad = 1;
            size_t n = drv_utf8_seq(p + i, len - i, &bad);
            int rc = n ? drv_buf_append(out, s + i, n) : drv_buf_append(out, "\xef\xbf\xbd", 3);
            if (rc != 0) {
                return -1;
            }
            i += n ? n : bad;
            continue;
        }
        if (c == '"' || c == '\\') {
            drv_buf_putc(out, '\\');
            drv_buf_putc(out, (char)c);
        } else if (c < 0x20) {
            char esc[8];
            int n = c == '\n'   ? snprintf(esc, sizeof esc, "\\n")
                    : c == '\t' ? snprintf(esc, sizeof esc, "\\t")
                    : c == '\r' ? snprintf(esc, sizeof esc, "\\r")
                                : snprintf(esc, sizeof esc, "\\u%04x", c);
            drv_buf_append(out, esc, (size_t)n);
        } else if (drv_buf_putc(out, (char)c) != 0) {
            return -1;
        }
        i++;
    }
    return drv_buf_putc(out, '"');
}

static int s_value(drv_buf_t *out, const msgpack_object *obj);

//  "00".."99": two digits a division (a nanosecond time has 19).
static const char s_pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";

//  An integer in decimal, without printf's machinery.
static int s_decimal(drv_buf_t *out, uint64_t magnitude, bool negative)
{
    char text[24];
    char *at = text + sizeof text;
    while (magnitude >= 100) {
        const char *pair = s_pairs + 2 * (magnitude % 100);
        magnitude /= 100;
        *--at = pair[1];
        *--at = pair[0];
    }
    if (magnitude >= 10) {
        *--at = s_pairs[2 * magnitude + 1];
        *--at = s_pairs[2 * magnitude];
    } else {
        *--at = (char)('0' + magnitude);
    }
    if (negative) {
        *--at = '-';
    }
    return drv_buf_append(out, at, (size_t)(text + sizeof text - at));
}

static bool s_keys_distinct_as_text(const msgpack_object_map *map);
static int s_map_renaming(drv_buf_t *out, const msgpack_object_map *map);

//  A key that is not a string is written as its JSON text, as a string,
//  cut at KEY_TEXT_MAX bytes ("..." says so). Uncut, a map whose keys are
//  maps whose keys are maps... would grow at each level as its text is
//  escaped again: a 3 KB message made a 30 MB line (the batch fuzz target's
//  slow input, tests/unit/test_ndjson.c), and 32 levels could make more
//  than an instance has.
#define KEY_TEXT_MAX 1024

static int s_key(drv_buf_t *out, const msgpack_object *key)
{
    if (key->type == MSGPACK_OBJECT_STR) {
        return s_string(out, key->via.str.ptr, key->via.str.size);
    }
    drv_buf_t text = {0};
    int rc = s_value(&text, key);
    if (rc == 0 && text.len > KEY_TEXT_MAX) {
        text.len = KEY_TEXT_MAX; // a UTF-8 sequence cut short reads as U+FFFD
        rc = drv_buf_append(&text, "...", 3);
    }
    if (rc == 0) {
        rc = s_string(out, text.data, text.len);
    }
    drv_buf_free(&text);
    return rc;
}

//  Keys that are valid UTF-8 strings are written as they are, and records
//  never hold two equal ones (refused at the door): the common case, no
//  check. A key that is not a string, or not valid UTF-8, could read the
//  same as another once written (1 and "1"; "a\xff" and "a\xfe" both
//  "a\ufffd"): such a map takes s_map_renaming.
static bool s_keys_distinct_as_text(const msgpack_object_map *map)
{
    for (uint32_t i = 0; i < map->size; i++) {
        const msgpack_object *key = &map->ptr[i].key;
        if (key->type != MSGPACK_OBJECT_STR || !drv_utf8_valid(key->via.str.ptr, key->via.str.size, true)) {
            return false;
        }
    }
    return true;
}

//  A map whose keys might collide as text: a key whose text was already
//  written gets "~2", "~3"... until it is new, so a line never holds a
//  duplicate key and nothing is dropped.
static int s_map_renaming(drv_buf_t *out, const msgpack_object_map *map)
{
    zhashx_t *seen = zhashx_new(); // key text (with its quotes) -> itself
    int rc = drv_buf_putc(out, '{');
    for (uint32_t i = 0; i < map->size && rc == 0; i++) {
        drv_buf_t key = {0};
        rc = s_key(&key, &map->ptr[i].key) | drv_buf_putc(&key, 0);
        size_t base = key.len - 2; // the text without its closing quote and NUL
        for (int n = 2; rc == 0 && zhashx_lookup(seen, key.data); n++) {
            char suffix[24];
            snprintf(suffix, sizeof suffix, "~%d\"", n);
            key.len = base;
            rc = drv_buf_append(&key, suffix, strlen(suffix) + 1);
        }
        if (rc == 0) {
            zhashx_insert(seen, key.data, (void *)"");
            rc = (i ? drv_buf_putc(out, ',') : 0) | drv_buf_append(out, key.data, key.len - 1) |
                 drv_buf_putc(out, ':') | s_value(out, &map->ptr[i].val);
        }
        drv_buf_free(&key);
    }
    zhashx_destroy(&seen);
    return rc ? -1 : drv_buf_putc(out, '}');
}

static int s_value(drv_buf_t *out, const msgpack_object *obj)
{
    char num[64];
    int n;
    switch (obj->type) {
    case MSGPACK_OBJECT_NIL:
        return drv_buf_append(out, "null", 4);
    case MSGPACK_OBJECT_BOOLEAN:
        return obj->via.boolean ? drv_buf_append(out, "true", 4) : drv_buf_append(out, "false", 5);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        return s_decimal(out, obj->via.u64, false);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        //  Its magnitude as unsigned: -INT64_MIN does not fit an int64_t.
        return s_decimal(out, 0 - (uint64_t)obj->via.i64, true);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (!isfinite(obj->via.f64)) {
            return drv_buf_append(out, "null", 4);
        }
        //  The shortest text that reads back as the same double, with a
        //  ".0" when it would read as an integer: a float stays a float.
        for (int digits = 15; digits <= 17; digits++) {
            n = snprintf(num, sizeof num, "%.*g", digits, obj->via.f64);
            if (strtod(num, NULL) == obj->via.f64) {
                break;
            }
        }
        if (!strpbrk(num, ".eE")) {
            n += snprintf(num + n, sizeof num - (size_t)n, ".0");
        }
        return drv_buf_append(out, num, (size_t)n);
    case MSGPACK_OBJECT_STR:
        return s_string(out, obj->via.str.ptr, obj->via.str.size);
    case MSGPACK_OBJECT_BIN:
        return s_base64(out, obj->via.bin.ptr, obj->via.bin.size);
    case MSGPACK_OBJECT_EXT:
        return s_base64(out, obj->via.ext.ptr, obj->via.ext.size);
    case MSGPACK_OBJECT_ARRAY:
        drv_buf_putc(out, '[');
        for (uint32_t i = 0; i < obj->via.array.size; i++) {
            if (i) {
                drv_buf_putc(out, ',');
            }
            if (s_value(out, &obj->via.array.ptr[i]) != 0) {
                return -1;
            }
        }
        return drv_buf_putc(out, ']');
    case MSGPACK_OBJECT_MAP:
        if (!s_keys_distinct_as_text(&obj->via.map)) {
            return s_map_renaming(out, &obj->via.map);
        }
        drv_buf_putc(out, '{');
        for (uint32_t i = 0; i < obj->via.map.size; i++) {
            if (i) {
                drv_buf_putc(out, ',');
            }
            if (s_key(out, &obj->via.map.ptr[i].key) != 0 || drv_buf_putc(out, ':') != 0 ||
                s_value(out, &obj->via.map.ptr[i].val) != 0) {
                return -1;
            }
        }
        return drv_buf_putc(out, '}');
    }
    return -1;
}

int drv_ndjson_append(drv_buf_t *out, const msgpack_object *record)
{
    if (s_value(out, record) != 0) {
        return -1;
    }
    return drv_buf_putc(out, '\n');
}
