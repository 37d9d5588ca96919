/*  drv_ottl_edit — see drv_ottl_edit.h. The editors, as the Collector's
    transform processor documents them. */
#include "drv_ottl_edit.h"
#include "drv_ottl_value.h"
#include "drv_regex.h"
#include "drv_schemas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *s_copy(msgpack_zone *zone, const char *s, size_t len)
{
    char *out = msgpack_zone_malloc(zone, len ? len : 1);
    if (out && len) {
        memcpy(out, s, len);
    }
    return out;
}

//  A value as a msgpack object in zone (its text copied): false for nil or no memory.
static bool s_object(msgpack_zone *zone, drv_ottl_value_t v, msgpack_object *out)
{
    switch (v.type) {
    case DRV_OTTL_V_BOOL:
        *out = (msgpack_object){.type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = v.b};
        return true;
    case DRV_OTTL_V_INT:
        *out = v.i >= 0 ? (msgpack_object){.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = (uint64_t)v.i}
                        : (msgpack_object){.type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = v.i};
        return true;
    case DRV_OTTL_V_FLOAT:
        *out = (msgpack_object){.type = MSGPACK_OBJECT_FLOAT64, .via.f64 = v.f};
        return true;
    case DRV_OTTL_V_STR: {
        char *s = s_copy(zone, v.s, v.len);
        *out = (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)v.len, s}};
        return s != NULL;
    }
    case DRV_OTTL_V_MAP:
    case DRV_OTTL_V_LIST:
        *out = *v.o;
        return true;
    default:
        return false;
    }
}

static bool s_matches(drv_ottl_ctx_t *ctx, void *code, const char *s, size_t len)
{
    int rc = pcre2_match(code, (PCRE2_SPTR)s, len, 0, 0, ctx->data, ctx->match);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
        drv_ottl_fail(ctx, "%s", "a pattern's match went past its bounds (docs/security.md)");
    }
    return rc >= 0;
}

//  Every match of code in s replaced by replacement ($1, ${name}): the new
//  text in zone, or NULL (failed: ctx says why).
static const char *s_replace(drv_ottl_ctx_t *ctx, void *code, const char *s, size_t len,
                             const drv_ottl_node_t *replacement, size_t *out_len)
{
    size_t room = len + replacement->len + 64;
    for (int attempt = 0; attempt < 2; attempt++) {
        char *out = msgpack_zone_malloc(ctx->zone, room);
        PCRE2_SIZE got = room;
        int rc =
            out ? pcre2_substitute(code, (PCRE2_SPTR)s, len, 0,
                                   PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH, ctx->data, ctx->match,
                                   (PCRE2_SPTR)replacement->string, replacement->len, (PCRE2_UCHAR *)out, &got)
                : PCRE2_ERROR_NOMEMORY;
        if (rc >= 0) {
            *out_len = got;
            return out;
        }
        if (rc != PCRE2_ERROR_NOMEMORY || !out) {
            drv_ottl_fail(ctx, "%s",
                          rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT
                              ? "a pattern's match went past its bounds (docs/security.md)"
                              : "the replacement does not fit the pattern ($N past its groups?)");
            return NULL;
        }
        room = got; // what it needs
    }
    drv_ottl_fail(ctx, "%s", "out of memory");
    return NULL;
}

//  The map's entries that stay, for the map editors: keep_keys (in list),
//  delete_key, delete/keep_matching_keys; values rewritten by
//  truncate_all and replace_all_patterns.
static bool s_edit_map(drv_ottl_ctx_t *ctx, const drv_ottl_node_t *node, const msgpack_object *map, msgpack_object *out)
{
    uint32_t n = map->via.map.size, kept = 0;
    msgpack_object_kv *kv = msgpack_zone_malloc(ctx->zone, (n ? n : 1) * sizeof *kv);
    if (!kv) {
        drv_ottl_fail(ctx, "%s", "out of memory");
        return false;
    }
    drv_ottl_value_t arg = node->args[1]->kind == DRV_OTTL_LIST ? (drv_ottl_value_t){.type = DRV_OTTL_V_NIL}
                                                                : drv_ottl_value(ctx, node->args[1]);
    for (uint32_t i = 0; i < n && !ctx->failed; i++) {
        msgpack_object_kv entry = map->via.map.ptr[i];
        const char *key = entry.key.type == MSGPACK_OBJECT_STR ? entry.key.via.str.ptr : "";
        size_t klen = entry.key.type == MSGPACK_OBJECT_STR ? entry.key.via.str.size : 0;
        bool keep = true;
        switch (node->function) {
        case DRV_OTTL_DELETE_KEY:
            keep = !(arg.type == DRV_OTTL_V_STR && arg.len == klen && !memcmp(arg.s, key, klen));
            break;
        case DRV_OTTL_KEEP_KEYS: {
            keep = false;
            const drv_ottl_node_t *list = node->args[1];
            for (int k = 0; list->kind == DRV_OTTL_LIST && k < list->nargs && !keep; k++) {
                keep = list->args[k]->kind == DRV_OTTL_STRING && list->args[k]->len == klen &&
                       !memcmp(list->args[k]->string, key, klen);
            }
            break;
        }
        case DRV_OTTL_DELETE_MATCHING_KEYS:
        case DRV_OTTL_KEEP_MATCHING_KEYS:
            keep = s_matches(ctx, node->compiled, key, klen) == (node->function == DRV_OTTL_KEEP_MATCHING_KEYS);
            break;
        case DRV_OTTL_TRUNCATE_ALL:
            if (arg.type != DRV_OTTL_V_INT || arg.i < 0) {
                drv_ottl_fail(ctx, "%s", "truncate_all's limit must be a number of bytes, 0 or more");
            } else if (entry.val.type == MSGPACK_OBJECT_STR && entry.val.via.str.size > arg.i) {
                entry.val.via.str.size = (uint32_t)arg.i;
            }
            break;
        case DRV_OTTL_REPLACE_ALL_PATTERNS: { // (map, "value" | "key", pattern, replacement)
            bool keys = arg.type == DRV_OTTL_V_STR && arg.len == 3 && !memcmp(arg.s, "key", 3);
            msgpack_object *what = keys ? &entry.key : &entry.val;
            if (what->type == MSGPACK_OBJECT_STR &&
                s_matches(ctx, node->compiled, what->via.str.ptr, what->via.str.size)) {
                size_t len;
                const char *text =
                    s_replace(ctx, node->compiled, what->via.str.ptr, what->via.str.size, node->args[3], &len);
                if (text) {
                    *what = (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)len, text}};
                }
            }
            break;
        }
        default:
            break;
        }
        if (keep) {
            kv[kept++] = entry;
        }
    }
    *out = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {kept, kv}};
    return !ctx->failed;
}

//  merge_maps(target, source, strategy): insert adds the keys target lacks,
//  update replaces those it has, upsert both.
static bool s_merge(drv_ottl_ctx_t *ctx, const drv_ottl_node_t *node, const msgpack_object *target, msgpack_object *out)
{
    drv_ottl_value_t source = drv_ottl_value(ctx, node->args[1]), how = drv_ottl_value(ctx, node->args[2]);
    if (ctx->failed) {
        return false;
    }
    if (source.type != DRV_OTTL_V_MAP) {
        drv_ottl_fail(ctx, "%s", "merge_maps' source is not a map");
        return false;
    }
    bool insert = how.type == DRV_OTTL_V_STR &&
                  ((how.len == 6 && !memcmp(how.s, "insert", 6)) || (how.len == 6 && !memcmp(how.s, "upsert", 6)));
    bool update = how.type == DRV_OTTL_V_STR &&
                  ((how.len == 6 && !memcmp(how.s, "update", 6)) || (how.len == 6 && !memcmp(how.s, "upsert", 6)));
    if (!insert && !update) {
        drv_ottl_fail(ctx, "%s", "merge_maps' strategy is insert, update or upsert");
        return false;
    }
    uint32_t had = target ? target->via.map.size : 0, more = source.o->via.map.size, n = 0;
    msgpack_object_kv *kv = msgpack_zone_malloc(ctx->zone, (had + more + 1) * sizeof *kv);
    if (!kv) {
        drv_ottl_fail(ctx, "%s", "out of memory");
        return false;
    }
    for (uint32_t i = 0; i < had; i++) {
        kv[n++] = target->via.map.ptr[i];
    }
    for (uint32_t i = 0; i < more; i++) {
        const msgpack_object_kv *add = &source.o->via.map.ptr[i];
        uint32_t at = 0;
        while (at < had && !msgpack_object_equal(kv[at].key, add->key)) {
            at++;
        }
        if (at < had && update) {
            kv[at].val = add->val;
        } else if (at == had && insert) {
            kv[n++] = *add;
        }
    }
    *out = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {n, kv}};
    return true;
}

//  limit(map, limit, [priority keys]): at most limit entries, the priority
//  keys' first, then the others in their order.
static bool s_limit(drv_ottl_ctx_t *ctx, const drv_ottl_node_t *node, const msgpack_object *map, msgpack_object *out)
{
    drv_ottl_value_t limit = drv_ottl_value(ctx, node->args[1]);
    if (limit.type != DRV_OTTL_V_INT || limit.i < 0) {
        drv_ottl_fail(ctx, "%s", "limit's limit must be a number of entries, 0 or more");
        return false;
    }
    uint32_t n = map->via.map.size, kept = 0;
    msgpack_object_kv *kv = msgpack_zone_malloc(ctx->zone, (n ? n : 1) * sizeof *kv);
    bool *taken = msgpack_zone_malloc(ctx->zone, (n ? n : 1) * sizeof *taken);
    if (!kv || !taken) {
        drv_ottl_fail(ctx, "%s", "out of memory");
        return false;
    }
    memset(taken, 0, (n ? n : 1) * sizeof *taken);
    const drv_ottl_node_t *priority = node->nargs > 2 ? node->args[2] : NULL;
    for (int p = 0; priority && priority->kind == DRV_OTTL_LIST && p < priority->nargs; p++) {
        const drv_ottl_node_t *key = priority->args[p];
        for (uint32_t i = 0; key->kind == DRV_OTTL_STRING && i < n && kept < limit.i; i++) {
            const msgpack_object *k = &map->via.map.ptr[i].key;
            if (!taken[i] && k->type == MSGPACK_OBJECT_STR && k->via.str.size == key->len &&
                !memcmp(k->via.str.ptr, key->string, key->len)) {
                taken[i] = true;
                kv[kept++] = map->via.map.ptr[i];
            }
        }
    }
    for (uint32_t i = 0; i < n && kept < limit.i; i++) {
        if (!taken[i]) {
            kv[kept++] = map->via.map.ptr[i];
        }
    }
    *out = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {kept, kv}};
    return true;
}

static uint32_t s_count(const msgpack_object *o, int depth)
{
    if (depth <= 0 || (o->type != MSGPACK_OBJECT_MAP && o->type != MSGPACK_OBJECT_ARRAY)) {
        return 1;
    }
    uint32_t n = 0, size = o->type == MSGPACK_OBJECT_MAP ? o->via.map.size : o->via.array.size;
    for (uint32_t i = 0; i < size; i++) {
        n += s_count(o->type == MSGPACK_OBJECT_MAP ? &o->via.map.ptr[i].val : &o->via.array.ptr[i], depth - 1);
    }
    return n;
}

//  The entries of o under name (prefix.key, prefix.0), depth levels down, into kv.
static void s_flat(drv_ottl_ctx_t *ctx, const char *name, size_t len, const msgpack_object *o, int depth,
                   msgpack_object_kv *kv, uint32_t *n)
{
    if (depth <= 0 || (o->type != MSGPACK_OBJECT_MAP && o->type != MSGPACK_OBJECT_ARRAY) || ctx->failed) {
        kv[(*n)++] = (msgpack_object_kv){{.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)len, name}}, *o};
        return;
    }
    bool map = o->type == MSGPACK_OBJECT_MAP;
    uint32_t size = map ? o->via.map.size : o->via.array.size;
    for (uint32_t i = 0; i < size && !ctx->failed; i++) {
        char index[24];
        const char *key = index;
        size_t klen;
        if (map && o->via.map.ptr[i].key.type == MSGPACK_OBJECT_STR) {
            key = o->via.map.ptr[i].key.via.str.ptr, klen = o->via.map.ptr[i].key.via.str.size;
        } else {
            klen = (size_t)snprintf(index, sizeof index, "%u", i);
        }
        char *joined = msgpack_zone_malloc(ctx->zone, len + klen + 1);
        if (!joined) {
            drv_ottl_fail(ctx, "%s", "out of memory");
            return;
        }
        memcpy(joined, name, len);
        if (len) {
            joined[len] = '.';
        }
        memcpy(joined + len + (len ? 1 : 0), key, klen);
        s_flat(ctx, joined, len + klen + (len ? 1 : 0), map ? &o->via.map.ptr[i].val : &o->via.array.ptr[i], depth - 1,
               kv, n);
    }
}

//  flatten(map, prefix = "", depth = 100): nested maps and lists as keys joined with dots.
static bool s_flatten(drv_ottl_ctx_t *ctx, const drv_ottl_node_t *node, const msgpack_object *map, msgpack_object *out)
{
    drv_ottl_value_t prefix = node->nargs > 1 ? drv_ottl_value(ctx, node->args[1]) : (drv_ottl_value_t){0};
    drv_ottl_value_t depth = node->nargs > 2 ? drv_ottl_value(ctx, node->args[2]) : (drv_ottl_value_t){0};
    int levels = depth.type == DRV_OTTL_V_INT && depth.i >= 0 && depth.i < DRV_OTTL_MAX_DEPTH ? (int)depth.i + 1
                                                                                              : DRV_OTTL_MAX_DEPTH;
    uint32_t n = 0, count = s_count(map, levels);
    msgpack_object_kv *kv = msgpack_zone_malloc(ctx->zone, (count ? count : 1) * sizeof *kv);
    if (!kv) {
        drv_ottl_fail(ctx, "%s", "out of memory");
        return false;
    }
    const char *p = prefix.type == DRV_OTTL_V_STR ? prefix.s : "";
    size_t plen = prefix.type == DRV_OTTL_V_STR ? prefix.len : 0;
    s_flat(ctx, p, plen, map, levels, kv, &n);
    *out = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {n, kv}};
    return !ctx->failed;
}

int drv_ottl_statement_run(drv_ottl_statement_t *self, msgpack_zone *zone, msgpack_object *record,
                           msgpack_object *cache, char *why, size_t whylen)
{
    drv_ottl_ctx_t ctx = {.record = record,
                          .cache = cache,
                          .zone = zone,
                          .match = self->match,
                          .data = self->data,
                          .why = why,
                          .whylen = whylen};
    const drv_ottl_node_t *node = self->root;
    bool into_cache = node->args[0]->cache;
    msgpack_object *written = into_cache ? cache : record;
    if (!written) {
        snprintf(why, whylen, "cache[...] is the transform's statements' alone");
        return -1;
    }
    if (node->where && !drv_ottl_truth(&ctx, drv_ottl_value(&ctx, node->where), node->where)) {
        return ctx.failed ? -1 : 0;
    }
    const msgpack_object *target = drv_ottl_at(node->args[0], written);
    msgpack_object value;
    bool changed = false;
    switch (node->function) {
    case DRV_OTTL_SET:
        changed = s_object(zone, drv_ottl_value(&ctx, node->args[1]), &value);
        break;
    case DRV_OTTL_REPLACE_PATTERN:
        if (target && target->type == MSGPACK_OBJECT_STR &&
            s_matches(&ctx, node->compiled, target->via.str.ptr, target->via.str.size)) {
            size_t len;
            const char *text =
                s_replace(&ctx, node->compiled, target->via.str.ptr, target->via.str.size, node->args[2], &len);
            value = (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)len, text}};
            changed = text != NULL;
        }
        break;
    case DRV_OTTL_MERGE_MAPS:
        changed = (!target || target->type == MSGPACK_OBJECT_MAP) &&
                  s_merge(&ctx, node, target && target->type == MSGPACK_OBJECT_MAP ? target : NULL, &value);
        if (target && target->type != MSGPACK_OBJECT_MAP) {
            drv_ottl_fail(&ctx, "%s", "merge_maps' target is not a map");
        }
        break;
    case DRV_OTTL_LIMIT:
        changed = target && target->type == MSGPACK_OBJECT_MAP && s_limit(&ctx, node, target, &value);
        break;
    case DRV_OTTL_FLATTEN:
        changed = target && target->type == MSGPACK_OBJECT_MAP && s_flatten(&ctx, node, target, &value);
        break;
    default: // the map editors: nothing to do where there is no map
        changed = target && target->type == MSGPACK_OBJECT_MAP && s_edit_map(&ctx, node, target, &value);
    }
    if (ctx.failed) {
        return -1;
    }
    if (changed && self->target.depth == 0) {
        *written = value; // the whole cache
    } else if (changed && !drv_record_path_set(zone, written, &self->target, &value)) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 1;
}

int drv_ottl_statement_init(drv_ottl_statement_t *self, const char *text, char *err, size_t errlen)
{
    memset(self, 0, sizeof *self);
    if (drv_ottl_compile(text, true, &self->root, err, errlen) != 0) {
        return -1;
    }
    const drv_ottl_node_t *path = self->root->args[0];
    int first = path->cache ? 1 : 0;                                              // cache[...]: the keys into the cache
    for (int k = first; k < path->depth && k - first < DRV_PATH_MAX_DEPTH; k++) { // keys only: no [index]
        self->target.keys[k - first] =
            (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)path->keys[k].len, path->keys[k].key}};
    }
    self->target.depth = path->depth - first < DRV_PATH_MAX_DEPTH ? path->depth - first : DRV_PATH_MAX_DEPTH;
    self->match = drv_regex_context();
    self->data = pcre2_match_data_create(16, NULL);
    if (!self->match || !self->data) {
        snprintf(err, errlen, "out of memory");
        drv_ottl_statement_fini(self);
        return -1;
    }
    return 0;
}

void drv_ottl_statement_fini(drv_ottl_statement_t *self)
{
    drv_ottl_release(self->root);
    pcre2_match_context_free(self->match);
    pcre2_match_data_free(self->data);
    memset(self, 0, sizeof *self);
}
