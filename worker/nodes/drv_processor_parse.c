/*  processor:parse — one string field parsed into many (docs/nodes.md):
    JSON (an object), logfmt (kit/drv_logfmt.c) or a regex's named groups
    (PCRE2, JIT-compiled where the platform has it, every match bounded
    (drv_regex.h) so that a pattern that backtracks without end fails that
    record, counted, and the instance goes on). The parsed fields go
    into the record's attributes or its top level, a parsed field replacing
    one of the same name (merged through a hash: linear in the keys), and
    a field that parses into more than max_keys is an error. A record is
    never changed in place: the new one is built in the batch zone. */
#include "drv_node.h"
#include "drv_schemas.h"
#include "drv_logfmt.h"
#include "drv_record.h"
#include "drv_regex.h"

#include "drover/drv_mpcheck.h"
#include "drover/drv_mpjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JIT_STACK_BYTES (512 * 1024) // what a JIT-compiled match may use

typedef enum { FORMAT_JSON, FORMAT_LOGFMT, FORMAT_REGEX } format_t;

typedef struct {
    format_t format;
    msgpack_object field, attributes;
    bool into_root, keep_original, drop_on_error;
    size_t max_keys;
    pcre2_code *re;
    pcre2_match_data *match;
    pcre2_match_context *context;
    pcre2_jit_stack *jit_stack;
    msgpack_object *group_keys; // the named groups: their names, and numbers
    uint32_t *group_numbers;
    uint32_t groups;
    json_t *docs; // the JSON values of the batch being run (records point into them)
} parse_t;

//  The named groups, from the pattern's name table.
static int s_groups(drv_node_t *node, parse_t *self)
{
    PCRE2_SPTR table;
    uint32_t entry_size;
    pcre2_pattern_info(self->re, PCRE2_INFO_NAMECOUNT, &self->groups);
    pcre2_pattern_info(self->re, PCRE2_INFO_NAMETABLE, &table);
    pcre2_pattern_info(self->re, PCRE2_INFO_NAMEENTRYSIZE, &entry_size);
    self->group_keys = calloc(self->groups + 1, sizeof *self->group_keys);
    self->group_numbers = calloc(self->groups + 1, sizeof *self->group_numbers);
    for (uint32_t i = 0; i < self->groups; i++) {
        PCRE2_SPTR at = table + i * entry_size;
        self->group_numbers[i] = (uint32_t)(at[0] << 8 | at[1]);
        if (drv_node_string_object(node, (const char *)at + 2, &self->group_keys[i]) != 0) {
            return -1;
        }
    }
    return 0;
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    parse_t *self = calloc(1, sizeof *self);
    node->state = self;
    const char *format = json_string_value(json_object_get(config, "format"));
    self->format = !strcmp(format, "json") ? FORMAT_JSON : !strcmp(format, "logfmt") ? FORMAT_LOGFMT : FORMAT_REGEX;
    self->into_root = !strcmp(json_string_value(json_object_get(config, "into")), "root");
    self->keep_original = json_is_true(json_object_get(config, "keep_original"));
    self->drop_on_error = !strcmp(json_string_value(json_object_get(config, "on_error")), "drop");
    self->max_keys = (size_t)json_integer_value(json_object_get(config, "max_keys"));
    self->docs = json_array();
    if (drv_node_string_object(node, json_string_value(json_object_get(config, "field")), &self->field) != 0 ||
        drv_node_string_object(node, "attributes", &self->attributes) != 0) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    if (self->format != FORMAT_REGEX) {
        return 0;
    }
    char why[300];
    self->re = drv_parse_compile(json_string_value(json_object_get(config, "pattern")), why, sizeof why);
    if (!self->re || s_groups(node, self) != 0) {
        snprintf(err, errlen, "node %s: pattern %s", node->id, self->re ? "names cannot be encoded" : why);
        return -1;
    }
    pcre2_jit_compile(self->re, PCRE2_JIT_COMPLETE); // where there is no JIT, matches are interpreted
    self->match = pcre2_match_data_create_from_pattern(self->re, NULL);
    self->context = drv_regex_context();
    self->jit_stack = pcre2_jit_stack_create(32 * 1024, JIT_STACK_BYTES, NULL);
    if (!self->match || !self->context) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    if (self->jit_stack) {
        pcre2_jit_stack_assign(self->context, NULL, self->jit_stack);
    }
    return 0;
}

static void s_destroy(drv_node_t *node)
{
    parse_t *self = node->state;
    if (!self) {
        return;
    }
    pcre2_match_data_free(self->match);
    pcre2_match_context_free(self->context);
    pcre2_jit_stack_free(self->jit_stack);
    pcre2_code_free(self->re);
    free(self->group_keys);
    free(self->group_numbers);
    json_decref(self->docs);
    free(self);
}

//  ---------------------------------------------------------------- parsing

//  text as JSON: an object's pairs, pointing into the kept document.
static int s_json(drv_node_t *node, parse_t *self, const char *text, size_t len, msgpack_object_kv **kv, size_t *n,
                  char *why, size_t whylen)
{
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(doc)) {
        if (doc) {
            snprintf(why, whylen, "json: not an object");
        } else {
            snprintf(why, whylen, "json: %s at offset %d", jerr.text, jerr.position);
        }
        json_decref(doc);
        return -1;
    }
    json_array_append_new(self->docs, doc);
    msgpack_object parsed;
    //  A level for the record, one for attributes: what is parsed nests below.
    int depth = DRV_RECORD_MAX_DEPTH - (self->into_root ? 0 : 1);
    int rc = drv_mpjson_object(doc, drv_node_zone(node), depth, &parsed);
    if (rc != 0) {
        snprintf(why, whylen, "json: %s (%d levels at most)", rc == -2 ? "nested too deep" : "out of memory", depth);
        return -1;
    }
    *kv = parsed.via.map.ptr;
    *n = parsed.via.map.size;
    return 0;
}

//  text against the pattern: its named groups that matched, pointing into text.
static int s_regex(drv_node_t *node, parse_t *self, const char *text, size_t len, msgpack_object_kv **kv, size_t *n,
                   char *why, size_t whylen)
{
    int rc = pcre2_match(self->re, (PCRE2_SPTR)text, len, 0, 0, self->match, self->context);
    if (rc < 0) {
        PCRE2_UCHAR message[200];
        pcre2_get_error_message(rc, message, sizeof message);
        const char *what = rc == PCRE2_ERROR_NOMATCH          ? "no match"
                           : rc == PCRE2_ERROR_MATCHLIMIT     ? "the match limit was reached"
                           : rc == PCRE2_ERROR_JIT_STACKLIMIT ? "the match needed too much stack"
                           : rc == PCRE2_ERROR_HEAPLIMIT      ? "the match needed too much memory"
                           : rc == PCRE2_ERROR_DEPTHLIMIT     ? "the match nested too deep"
                                                              : "the match failed";
        snprintf(why, whylen, "regex: %s (%s)", what, (const char *)message);
        return -1;
    }
    PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(self->match);
    uint32_t pairs = pcre2_get_ovector_count(self->match);
    *kv = drv_node_alloc(node, (self->groups ? self->groups : 1) * sizeof **kv);
    *n = 0;
    for (uint32_t i = 0; i < self->groups; i++) {
        uint32_t group = self->group_numbers[i];
        if (group >= pairs || ovector[2 * group] == PCRE2_UNSET) {
            continue; // an optional group that did not take part
        }
        msgpack_object_kv *pair = &(*kv)[(*n)++];
        pair->key = self->group_keys[i];
        pair->val = (msgpack_object){.type = MSGPACK_OBJECT_STR};
        pair->val.via.str.ptr = text + ovector[2 * group];
        pair->val.via.str.size = (uint32_t)(ovector[2 * group + 1] - ovector[2 * group]);
    }
    return 0;
}

static msgpack_object s_map(msgpack_object_kv *kv, size_t n)
{
    msgpack_object map = {.type = MSGPACK_OBJECT_MAP};
    map.via.map.ptr = kv;
    map.via.map.size = (uint32_t)n;
    return map;
}

//  record with its field parsed into *out; -1 with why.
static int s_parse(drv_node_t *node, parse_t *self, const msgpack_object *record, msgpack_object *out, char *why,
                   size_t whylen)
{
    int at = record->type == MSGPACK_OBJECT_MAP
                 ? drv_record_find(record->via.map.ptr, record->via.map.size, &self->field)
                 : -1;
    const msgpack_object *value = at >= 0 ? &record->via.map.ptr[at].val : NULL;
    if (!value || value->type != MSGPACK_OBJECT_STR) {
        snprintf(why, whylen, "field %.*s %s", (int)self->field.via.str.size, self->field.via.str.ptr,
                 value ? "is not a string" : "is missing");
        return -1;
    }
    const char *text = value->via.str.ptr;
    size_t len = value->via.str.size;
    msgpack_object_kv *parsed;
    size_t count;
    int rc = self->format == FORMAT_JSON ? s_json(node, self, text, len, &parsed, &count, why, whylen)
             : self->format == FORMAT_REGEX
                 ? s_regex(node, self, text, len, &parsed, &count, why, whylen)
                 : drv_logfmt_parse(text, len, drv_node_zone(node), &parsed, &count, why, whylen);
    if (rc != 0) {
        return -1;
    }
    if (count > self->max_keys) {
        snprintf(why, whylen, "%s: %zu keys, more than max_keys (%zu)",
                 self->format == FORMAT_JSON     ? "json"
                 : self->format == FORMAT_LOGFMT ? "logfmt"
                                                 : "regex",
                 count, self->max_keys);
        return -1;
    }
    size_t n = record->via.map.size;
    msgpack_object_kv *kv = drv_node_alloc(node, (n + 1) * sizeof *kv);
    memcpy(kv, record->via.map.ptr, n * sizeof *kv);
    if (!self->keep_original) {
        drv_record_remove(kv, &n, at);
    }
    if (self->into_root) {
        kv = drv_record_merge(drv_node_zone(node), kv, n, parsed, count, &n);
        if (!kv) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        *out = s_map(kv, n);
        return 0;
    }
    int attributes = drv_record_find(kv, n, &self->attributes);
    if (attributes >= 0 && kv[attributes].val.type != MSGPACK_OBJECT_MAP) {
        snprintf(why, whylen, "attributes is not a map");
        return -1;
    }
    size_t merged;
    msgpack_object_kv *into = attributes >= 0 ? kv[attributes].val.via.map.ptr : NULL;
    into = drv_record_merge(drv_node_zone(node), into, attributes >= 0 ? kv[attributes].val.via.map.size : 0, parsed,
                            count, &merged);
    if (!into) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    if (attributes < 0) {
        kv[n].key = self->attributes;
        attributes = (int)n++;
    }
    kv[attributes].val = s_map(into, merged);
    *out = s_map(kv, n);
    return 0;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    parse_t *self = node->state;
    msgpack_object *out = drv_node_alloc(node, (n ? n : 1) * sizeof *out);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        char why[300];
        if (s_parse(node, self, &records[i], &out[kept], why, sizeof why) == 0) {
            kept++;
            continue;
        }
        drv_node_record_error(node, why);
        if (self->drop_on_error) {
            drv_node_count_dropped(node, 1);
        } else {
            out[kept++] = records[i];
        }
    }
    drv_node_forward(node, out, kept);
    json_array_clear(self->docs); // what was handed on was taken (copied or written) by now
}

const drv_node_kind_t drv_processor_parse = {
    .schema = &drv_schema_processor_parse,
    .init = s_init,
    .run = s_run,
    .destroy = s_destroy,
};
