/*  drv_pod_memo — see drv_pod_memo.h. An entry is one block: the pairs,
    then their strings. */
#include "drv_pod_memo.h"

#include <czmq.h>
#include <string.h>

typedef struct {
    drv_pod_attrs_t attrs;
    int64_t version;
    char *top; // the name of the owner above, as it was made with (NULL: none)
} entry_t;

struct drv_pod_memo_t {
    zhashx_t *entries; // "uid/container" -> entry_t
    zlistx_t *garbage; // entries replaced, freed by drv_pod_memo_collect
    size_t max_entries;
};

static void s_entry_free(void **item)
{
    entry_t *entry = *item;
    if (entry) {
        free(entry->top);
        free(entry);
    }
    *item = NULL;
}

drv_pod_memo_t *drv_pod_memo_new(size_t max_entries)
{
    drv_pod_memo_t *self = calloc(1, sizeof *self);
    self->entries = zhashx_new();
    self->garbage = zlistx_new();
    zlistx_set_destructor(self->garbage, s_entry_free);
    self->max_entries = max_entries ? max_entries : 1;
    return self;
}

void drv_pod_memo_destroy(drv_pod_memo_t **self_p)
{
    if (self_p && *self_p) {
        drv_pod_memo_t *self = *self_p;
        for (entry_t *e = zhashx_first(self->entries); e; e = zhashx_next(self->entries)) {
            zlistx_add_end(self->garbage, e);
        }
        zhashx_destroy(&self->entries);
        zlistx_destroy(&self->garbage);
        free(self);
        *self_p = NULL;
    }
}

static void s_key(const drv_pod_t *pod, const char *container, size_t len, char *key, size_t size)
{
    snprintf(key, size, "%s/%.*s", pod->uid ? pod->uid : "", (int)len, container ? container : "");
}

static bool s_same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

const drv_pod_attrs_t *drv_pod_memo_find(drv_pod_memo_t *self, const drv_pod_t *pod, const char *container, size_t len)
{
    char key[512];
    s_key(pod, container, len, key, sizeof key);
    entry_t *entry = zhashx_lookup(self->entries, key);
    return entry && entry->version == pod->version && s_same(entry->top, pod->top_name) ? &entry->attrs : NULL;
}

const drv_pod_attrs_t *drv_pod_memo_keep(drv_pod_memo_t *self, const drv_pod_t *pod, const char *container, size_t len,
                                         const msgpack_object_kv *kv, size_t count)
{
    size_t bytes = sizeof(entry_t) + count * sizeof *kv;
    for (size_t i = 0; i < count; i++) {
        bytes += kv[i].key.via.str.size + kv[i].val.via.str.size;
    }
    entry_t *entry = calloc(1, bytes);
    msgpack_object_kv *pairs = (msgpack_object_kv *)(entry + 1);
    char *at = (char *)(pairs + count);
    for (size_t i = 0; i < count; i++) {
        pairs[i] = kv[i];
        const msgpack_object *o[2] = {&kv[i].key, &kv[i].val};
        msgpack_object *copy[2] = {&pairs[i].key, &pairs[i].val};
        for (int k = 0; k < 2; k++) { // strings both: what drv_processor_kubernetes adds
            memcpy(at, o[k]->via.str.ptr, o[k]->via.str.size);
            copy[k]->via.str.ptr = at;
            at += o[k]->via.str.size;
        }
    }
    entry->attrs = (drv_pod_attrs_t){pairs, count};
    entry->version = pod->version;
    entry->top = pod->top_name ? strdup(pod->top_name) : NULL;
    char key[512];
    s_key(pod, container, len, key, sizeof key);
    entry_t *old = zhashx_lookup(self->entries, key);
    if (old) {
        zlistx_add_end(self->garbage, old);
    } else if (zhashx_size(self->entries) >= self->max_entries) {
        for (entry_t *e = zhashx_first(self->entries); e; e = zhashx_next(self->entries)) {
            zlistx_add_end(self->garbage, e);
        }
        zhashx_purge(self->entries);
    }
    zhashx_update(self->entries, key, entry);
    return &entry->attrs;
}

void drv_pod_memo_collect(drv_pod_memo_t *self)
{
    zlistx_purge(self->garbage);
}
