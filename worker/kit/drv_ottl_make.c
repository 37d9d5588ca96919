/*  drv_ottl_make — the converters that make what they give (docs/ottl.md,
    "Converters"): text changed or joined, maps and lists parsed out of
    text, a hash, the time. What they make goes into the evaluation's zone
    (a condition's scratch, or the batch a statement writes into). */
#include "drv_ottl_value.h"
#include "drv_record_copy.h"
#include "drv_regex.h"

#include "drover/drv_mpjson.h"
#include "drover/drv_time.h"

#include <ctype.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const drv_ottl_value_t s_nil = {.type = DRV_OTTL_V_NIL};

static drv_ottl_value_t s_string(drv_ottl_ctx_t *e, const char *s, size_t len)
{
    (void)e;
    return (drv_ottl_value_t){.type = DRV_OTTL_V_STR, .s = s, .len = len};
}

static msgpack_object s_str_object(const char *s, size_t len)
{
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)len, s}};
}

//  A map of n entries (kv in the zone) as a value.
static drv_ottl_value_t s_map(drv_ottl_ctx_t *e, msgpack_object_kv *kv, uint32_t n)
{
    msgpack_object *map = msgpack_zone_malloc(e->zone, sizeof *map);
    if (!map) {
        drv_ottl_fail(e, "%s", "out of memory");
        return s_nil;
    }
    *map = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {n, kv}};
    return drv_ottl_of(map);
}

//  ParseKeyValue(target, delimiter = "=", pair_delimiter = " "): a map of
//  the pairs (a key twice: the last), their values trimmed of quotes.
static drv_ottl_value_t s_key_values(drv_ottl_ctx_t *e, const drv_ottl_node_t *node, drv_ottl_value_t a)
{
    drv_ottl_value_t d = node->nargs > 1 ? drv_ottl_value(e, node->args[1]) : s_string(e, "=", 1);
    drv_ottl_value_t p = node->nargs > 2 ? drv_ottl_value(e, node->args[2]) : s_string(e, " ", 1);
    if (a.type != DRV_OTTL_V_STR || d.type != DRV_OTTL_V_STR || p.type != DRV_OTTL_V_STR || !d.len || !p.len) {
        drv_ottl_fail(e, "%s", "ParseKeyValue takes a string and non-empty delimiters");
        return s_nil;
    }
    size_t cap = a.len / 2 + 1;
    msgpack_object_kv *kv = msgpack_zone_malloc(e->zone, cap * sizeof *kv);
    uint32_t n = 0;
    for (size_t at = 0; kv && at < a.len;) {
        const char *pair = a.s + at;
        const char *end = memmem(pair, a.len - at, p.s, p.len);
        size_t len = end ? (size_t)(end - pair) : a.len - at;
        at += len + (end ? p.len : 0);
        const char *eq = memmem(pair, len, d.s, d.len);
        if (!len) {
            continue; // two pair delimiters in a row
        }
        if (!eq) {
            drv_ottl_fail(e, "%s", "ParseKeyValue: a pair without its delimiter");
            return s_nil;
        }
        const char *v = eq + d.len;
        size_t vlen = (size_t)(pair + len - v);
        if (vlen >= 2 && (v[0] == '"' || v[0] == '\'') && v[vlen - 1] == v[0]) {
            v++, vlen -= 2;
        }
        msgpack_object key = s_str_object(pair, (size_t)(eq - pair));
        uint32_t i = 0;
        while (i < n && !msgpack_object_equal(kv[i].key, key)) {
            i++;
        }
        kv[i] = (msgpack_object_kv){key, s_str_object(v, vlen)};
        n += i == n;
    }
    return kv ? s_map(e, kv, n) : s_nil;
}

//  ExtractPatterns(target, pattern): its named groups' texts as a map.
static drv_ottl_value_t s_extract(drv_ottl_ctx_t *e, const drv_ottl_node_t *node, drv_ottl_value_t a)
{
    if (a.type != DRV_OTTL_V_STR) {
        drv_ottl_fail(e, "%s", "ExtractPatterns takes a string");
        return s_nil;
    }
    pcre2_match_data *data = pcre2_match_data_create_from_pattern(node->compiled, NULL);
    int rc = data ? pcre2_match(node->compiled, (PCRE2_SPTR)a.s, a.len, 0, 0, data, e->match) : PCRE2_ERROR_NOMEMORY;
    uint32_t names = 0, size = 0;
    PCRE2_SPTR table = NULL;
    pcre2_pattern_info(node->compiled, PCRE2_INFO_NAMECOUNT, &names);
    pcre2_pattern_info(node->compiled, PCRE2_INFO_NAMEENTRYSIZE, &size);
    pcre2_pattern_info(node->compiled, PCRE2_INFO_NAMETABLE, &table);
    msgpack_object_kv *kv = msgpack_zone_malloc(e->zone, (names ? names : 1) * sizeof *kv);
    uint32_t n = 0;
    if (rc >= 0 && kv) {
        PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(data);
        for (uint32_t i = 0; i < names; i++, table += size) {
            int group = (table[0] << 8) | table[1];
            const char *name = (const char *)table + 2;
            if (group < rc && ovector[2 * group] != PCRE2_UNSET) {
                kv[n++] = (msgpack_object_kv){
                    s_str_object(name, strlen(name)),
                    s_str_object(a.s + ovector[2 * group], ovector[2 * group + 1] - ovector[2 * group])};
            }
        }
    } else if (rc != PCRE2_ERROR_NOMATCH) {
        drv_ottl_fail(e, "%s", "ExtractPatterns: the match went past its bounds (docs/security.md)");
    }
    pcre2_match_data_free(data);
    return e->failed || !kv ? s_nil : s_map(e, kv, n);
}

//  Split(target, delimiter): the pieces as a list.
static drv_ottl_value_t s_split(drv_ottl_ctx_t *e, const drv_ottl_node_t *node, drv_ottl_value_t a)
{
    drv_ottl_value_t d = drv_ottl_value(e, node->args[1]);
    if (a.type != DRV_OTTL_V_STR || d.type != DRV_OTTL_V_STR || !d.len) {
        drv_ottl_fail(e, "%s", "Split takes a string and a non-empty delimiter");
        return s_nil;
    }
    size_t cap = a.len / d.len + 1;
    msgpack_object *items = msgpack_zone_malloc(e->zone, cap * sizeof *items), *list = NULL;
    uint32_t n = 0;
    for (size_t at = 0; items;) {
        const char *end = memmem(a.s + at, a.len - at, d.s, d.len);
        size_t len = end ? (size_t)(end - (a.s + at)) : a.len - at;
        items[n++] = s_str_object(a.s + at, len);
        if (!end) {
            break;
        }
        at += len + d.len;
    }
    if (items && (list = msgpack_zone_malloc(e->zone, sizeof *list))) {
        *list = (msgpack_object){.type = MSGPACK_OBJECT_ARRAY, .via.array = {n, items}};
        return drv_ottl_of(list);
    }
    drv_ottl_fail(e, "%s", "out of memory");
    return s_nil;
}

drv_ottl_value_t drv_ottl_make(drv_ottl_ctx_t *e, const drv_ottl_node_t *node, drv_ottl_value_t a)
{
    const char *s;
    size_t len;
    switch (node->function) {
    case DRV_OTTL_TO_LOWER:
    case DRV_OTTL_TO_UPPER: {
        if (a.type != DRV_OTTL_V_STR) {
            return s_nil;
        }
        char *out = msgpack_zone_malloc(e->zone, a.len ? a.len : 1);
        if (!out) {
            drv_ottl_fail(e, "%s", "out of memory");
            return s_nil;
        }
        for (size_t i = 0; i < a.len; i++) {
            out[i] = (char)(node->function == DRV_OTTL_TO_LOWER ? tolower((unsigned char)a.s[i])
                                                                : toupper((unsigned char)a.s[i]));
        }
        return s_string(e, out, a.len);
    }
    case DRV_OTTL_CONCAT: { // Concat([values], delimiter)
        drv_ottl_value_t d = drv_ottl_value(e, node->args[1]);
        const drv_ottl_node_t *list = node->args[0];
        if (list->kind != DRV_OTTL_LIST || d.type != DRV_OTTL_V_STR) {
            drv_ottl_fail(e, "%s", "Concat takes a list in [] and a delimiter string");
            return s_nil;
        }
        size_t total = 0;
        const char *parts[DRV_OTTL_MAX_ARGS];
        size_t lens[DRV_OTTL_MAX_ARGS];
        for (int i = 0; i < list->nargs; i++) {
            drv_ottl_value_t v = drv_ottl_value(e, list->args[i]);
            if (v.type == DRV_OTTL_V_NIL) {
                parts[i] = "", lens[i] = 0; // the Collector writes nil as ""
            } else if (!drv_ottl_text(e, v, &parts[i], &lens[i])) {
                drv_ottl_fail(e, "%s", "Concat: a map or a list among its values");
                return s_nil;
            }
            total += lens[i] + (i ? d.len : 0);
        }
        char *out = msgpack_zone_malloc(e->zone, total ? total : 1), *at = out;
        for (int i = 0; out && i < list->nargs; i++) {
            if (i) {
                memcpy(at, d.s, d.len), at += d.len;
            }
            memcpy(at, parts[i], lens[i]), at += lens[i];
        }
        return out ? s_string(e, out, total) : s_nil;
    }
    case DRV_OTTL_SUBSTRING: { // Substring(target, start, length)
        drv_ottl_value_t start = drv_ottl_value(e, node->args[1]), length = drv_ottl_value(e, node->args[2]);
        if (a.type != DRV_OTTL_V_STR || start.type != DRV_OTTL_V_INT || length.type != DRV_OTTL_V_INT || start.i < 0 ||
            length.i < 0 || (uint64_t)start.i + (uint64_t)length.i > a.len) {
            drv_ottl_fail(e, "%s", "Substring: a string, and a start and length within it");
            return s_nil;
        }
        return s_string(e, a.s + start.i, (size_t)length.i);
    }
    case DRV_OTTL_PARSE_JSON: { // a map or a list from a JSON text, into the zone
        if (a.type != DRV_OTTL_V_STR) {
            drv_ottl_fail(e, "%s", "ParseJSON takes a string");
            return s_nil;
        }
        json_error_t error;
        json_t *json = json_loadb(a.s, a.len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &error);
        msgpack_object parsed, *copy = msgpack_zone_malloc(e->zone, sizeof *copy);
        bool ok = json && copy && drv_mpjson_object(json, e->zone, DRV_OTTL_MAX_DEPTH, &parsed) == 0 &&
                  drv_record_copy(e->zone, &parsed, copy) > 0;
        json_decref(json);
        if (!ok) {
            drv_ottl_fail(e, "ParseJSON: %s", json ? "nested too deep, or out of memory" : error.text);
            return s_nil;
        }
        return drv_ottl_of(copy);
    }
    case DRV_OTTL_PARSE_KEY_VALUE:
        return s_key_values(e, node, a);
    case DRV_OTTL_EXTRACT_PATTERNS:
        return s_extract(e, node, a);
    case DRV_OTTL_SPLIT:
        return s_split(e, node, a);
    case DRV_OTTL_SHA256: {
        if (!drv_ottl_text(e, a, &s, &len)) {
            drv_ottl_fail(e, "%s", "SHA256 takes a string, a number or a bool");
            return s_nil;
        }
        unsigned char digest[32];
        unsigned int n = 0;
        char *hex = msgpack_zone_malloc(e->zone, 64);
        if (!hex || !EVP_Digest(s, len, digest, &n, EVP_sha256(), NULL)) {
            drv_ottl_fail(e, "%s", "out of memory");
            return s_nil;
        }
        for (int i = 0; i < 32; i++) {
            hex[2 * i] = "0123456789abcdef"[digest[i] >> 4];
            hex[2 * i + 1] = "0123456789abcdef"[digest[i] & 15];
        }
        return s_string(e, hex, 64);
    }
    case DRV_OTTL_NOW: // nanoseconds since the epoch, as time_unix_nano holds them
        return (drv_ottl_value_t){.type = DRV_OTTL_V_INT, .i = drv_time_wall_ms() * 1000000};
    default:
        drv_ottl_fail(e, "%s", "a converter this build does not evaluate");
        return s_nil;
    }
}
