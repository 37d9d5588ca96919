/*  processor:kubernetes — a record's pod, found by a resource attribute
    (its uid, its IP), adds what the Kubernetes API knows of it to the
    record's resource (docs/kubernetes.md; the cache: worker/kube/drv_pod_cache.h).
    The new resource is built in the batch zone; the record is never
    changed in place. A record whose pod is not known passes as it is,
    counted in unmatched. */
#include "drv_node.h"
#include "drv_pod_cache.h"
#include "drv_pod_extract.h"
#include "drv_pod_memo.h"
#include "drv_record.h"
#include "drv_schemas.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ADDED 256 // attributes one record may get (labels and annotations included)

typedef struct {
    drv_pod_by_t by;
    msgpack_object attribute; // the resource attribute holding it
} associate_t;

//  The resource the record before had, and what it became (this batch's).
typedef struct {
    const msgpack_object_kv *attrs;
    msgpack_object_kv *merged;
    size_t count, merged_count;
    const drv_pod_attrs_t *hit;
} merged_t;

//  What the record before found (s_find).
typedef struct {
    bool valid;
    int64_t changes; // the cache's, then
    drv_pod_by_t by;
    char value[128], container[128];
    size_t len, clen;
    const drv_pod_attrs_t *hit; // NULL: no pod
} last_t;

typedef struct {
    drv_kube_t *kube;
    drv_pod_cache_t *cache;
    associate_t associate[8];
    size_t associate_count;
    drv_pod_extract_t *extract;
    msgpack_object resource_key, container_key;
    int64_t enriched, unmatched;
    int64_t wait_until_ms; // mono: the first records wait for the first list until then (0: no more)
    //  Filled per record while the cache is locked.
    drv_node_t *node;
    msgpack_object_kv added[MAX_ADDED];
    size_t added_count;
    drv_pod_memo_t *memo;
    const drv_pod_attrs_t *hit; // what the record's pod adds
    last_t last;
    merged_t prev;
    const msgpack_object *container; // the record's k8s.container.name, or NULL
} kube_t;

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    kube_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->node = node;
    const json_t *api = json_object_get(config, "api");
    drv_kube_config_t settings = {.server = json_string_value(json_object_get(api, "server")),
                                  .token_file = json_string_value(json_object_get(api, "token_file")),
                                  .ca_file = json_string_value(json_object_get(api, "ca_file"))};
    char why[300];
    if (!(self->kube = drv_kube_new(&settings, why, sizeof why))) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    size_t i;
    json_t *rule;
    json_array_foreach(json_object_get(config, "associate"), i, rule)
    {
        const char *from = json_string_value(json_object_get(rule, "from"));
        if (from && !strcmp(from, "connection")) {
            drv_node_ask_peer(node);
        }
        const char *attribute = from && !strcmp(from, "connection")
                                    ? "client.address" // where receivers put the sender's address
                                    : json_string_value(json_object_get(rule, "attribute"));
        if (self->associate_count < 8 && attribute) {
            associate_t *a = &self->associate[self->associate_count++];
            a->by = strcmp(attribute, "k8s.pod.uid") ? DRV_POD_BY_IP : DRV_POD_BY_UID;
            drv_node_string_object(node, attribute, &a->attribute);
        }
    }
    if (!(self->extract = drv_pod_extract_new(json_object_get(config, "extract"), why, sizeof why))) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    self->memo = drv_pod_memo_new((size_t)json_integer_value(json_object_get(config, "max_pods")) * 4 + 1024);
    drv_node_string_object(node, "resource", &self->resource_key);
    drv_node_string_object(node, "k8s.container.name", &self->container_key);
    if (drv_node_probe) {
        return 0; // nothing is watched for a check
    }
    const char *on = json_string_value(json_object_get(config, "node"));
    bool owners = drv_pod_extract_owners(self->extract);
    int64_t grace = json_integer_value(json_object_get(config, "deleted_grace_secs")) * 1000;
    self->cache =
        drv_pod_cache_new(self->kube, on, owners, grace, json_integer_value(json_object_get(config, "max_pods")));
    int64_t wait = json_integer_value(json_object_get(config, "wait_for_metadata_secs")) * 1000;
    self->wait_until_ms = wait > 0 ? drv_time_mono_ms() + wait : 0;
    drv_info("kubernetes: watching pods node=%s on=%s server=%s owners=%s", node->id, on && *on ? on : "(every node)",
             drv_kube_server(self->kube), owners ? "yes" : "no");
    return 0;
}

static void s_destroy(drv_node_t *node)
{
    kube_t *self = node->state;
    if (self) {
        drv_pod_cache_destroy(&self->cache);
        drv_pod_memo_destroy(&self->memo);
        drv_kube_destroy(&self->kube);
        drv_pod_extract_destroy(&self->extract);
        free(self);
    }
}

//  What pod adds to a record of self->container: made once per version of
//  the pod and container, then kept (drv_pod_memo.h).
static void s_visit(void *arg, const drv_pod_t *pod)
{
    kube_t *self = arg;
    const msgpack_object *c = self->container;
    const char *container = c ? c->via.str.ptr : NULL;
    size_t container_len = c ? c->via.str.size : 0;
    if ((self->hit = drv_pod_memo_find(self->memo, pod, container, container_len))) {
        return;
    }
    self->added_count = drv_pod_extract(self->extract, pod, container, container_len, drv_node_zone(self->node),
                                        self->added, MAX_ADDED);
    self->hit = drv_pod_memo_keep(self->memo, pod, container, container_len, self->added, self->added_count);
}

//  The pairs of base with add's after them, one of add replacing base's of
//  the same key: a few of each, so a linear walk (drv_record_merge past
//  MERGE_LINEAR).
#define MERGE_LINEAR 32
static msgpack_object_kv *s_merge(kube_t *self, const msgpack_object_kv *base, size_t n, const drv_pod_attrs_t *add,
                                  size_t *count)
{
    if (n > MERGE_LINEAR) {
        return drv_record_merge(drv_node_zone(self->node), base, n, add->kv, add->count, count);
    }
    msgpack_object_kv *kv = drv_node_alloc(self->node, (n + add->count) * sizeof *kv);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t k = 0; k < add->count && !replaced; k++) {
            replaced = drv_record_same_key(&base[i].key, &add->kv[k].key);
        }
        if (!replaced) {
            kv[at++] = base[i];
        }
    }
    memcpy(kv + at, add->kv, add->count * sizeof *kv);
    *count = at + add->count;
    return kv;
}

//  Two maps' pairs alike, key by key and value by value (strings, numbers,
//  booleans; anything else is taken as different).
static bool s_same_pairs(const msgpack_object_kv *a, const msgpack_object_kv *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *va = &a[i].val, *vb = &b[i].val;
        if (!drv_record_same_key(&a[i].key, &b[i].key) || va->type != vb->type) {
            return false;
        }
        bool same = va->type == MSGPACK_OBJECT_STR       ? drv_record_same_key(va, vb)
                    : va->type == MSGPACK_OBJECT_BOOLEAN ? va->via.boolean == vb->via.boolean
                    : va->type == MSGPACK_OBJECT_POSITIVE_INTEGER || va->type == MSGPACK_OBJECT_NEGATIVE_INTEGER
                        ? va->via.u64 == vb->via.u64
                        : false;
        if (!same) {
            return false;
        }
    }
    return true;
}

//  The pod of a record by one association: the one the record before found
//  when it names the same and nothing changed since (the records of a
//  batch are mostly one pod's).
static bool s_find(kube_t *self, const associate_t *a, const msgpack_object *value)
{
    const msgpack_object *c = self->container;
    int64_t changes = drv_pod_cache_changes(self->cache);
    last_t *last = &self->last;
    size_t len = value->via.str.size, clen = c ? c->via.str.size : 0;
    if (last->valid && last->changes == changes && last->by == a->by && last->len == len && last->clen == clen &&
        !memcmp(last->value, value->via.str.ptr, len) && (!clen || !memcmp(last->container, c->via.str.ptr, clen))) {
        self->hit = last->hit;
        return last->hit != NULL;
    }
    bool found = drv_pod_cache_visit(self->cache, a->by, value->via.str.ptr, len, s_visit, self);
    last->valid = len <= sizeof last->value && clen <= sizeof last->container;
    if (last->valid) {
        *last = (last_t){
            .valid = true, .changes = changes, .by = a->by, .len = len, .clen = clen, .hit = found ? self->hit : NULL};
        memcpy(last->value, value->via.str.ptr, len);
        memcpy(last->container, c ? c->via.str.ptr : "", clen);
    }
    return found;
}

//  The record with its pod's attributes in its resource, or false when no
//  association finds a pod.
static bool s_enrich(kube_t *self, const msgpack_object *record, msgpack_object *out)
{
    if (record->type != MSGPACK_OBJECT_MAP || !self->cache) {
        return false;
    }
    const msgpack_object_kv *kv = record->via.map.ptr;
    size_t n = record->via.map.size;
    int at = drv_record_find(kv, n, &self->resource_key);
    const msgpack_object *resource = at >= 0 && kv[at].val.type == MSGPACK_OBJECT_MAP ? &kv[at].val : NULL;
    if (!resource) {
        return false;
    }
    const msgpack_object_kv *attrs = resource->via.map.ptr;
    size_t attr_count = resource->via.map.size;
    int c = drv_record_find(attrs, attr_count, &self->container_key);
    self->container = c >= 0 && attrs[c].val.type == MSGPACK_OBJECT_STR ? &attrs[c].val : NULL;
    self->hit = NULL;
    bool found = false;
    for (size_t i = 0; i < self->associate_count && !found; i++) {
        int k = drv_record_find(attrs, attr_count, &self->associate[i].attribute);
        if (k >= 0 && attrs[k].val.type == MSGPACK_OBJECT_STR) {
            found = s_find(self, &self->associate[i], &attrs[k].val);
        }
    }
    if (!found || !self->hit) {
        return false;
    }
    //  The records of a file have the same resource: merged once per batch.
    merged_t *prev = &self->prev;
    if (!(prev->merged && prev->hit == self->hit && prev->count == attr_count &&
          (prev->attrs == attrs || s_same_pairs(prev->attrs, attrs, attr_count)))) {
        prev->merged = s_merge(self, attrs, attr_count, self->hit, &prev->merged_count);
        prev->hit = self->hit;
        prev->attrs = attrs;
        prev->count = attr_count;
    }
    msgpack_object_kv *merged = prev->merged;
    size_t merged_count = prev->merged_count;
    msgpack_object_kv *fields = drv_node_alloc(self->node, n * sizeof *fields);
    if (!merged || !fields) {
        return false;
    }
    memcpy(fields, kv, n * sizeof *fields);
    fields[at].val =
        (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {.ptr = merged, .size = (uint32_t)merged_count}};
    *out = (msgpack_object){.type = MSGPACK_OBJECT_MAP, .via.map = {.ptr = fields, .size = (uint32_t)n}};
    return true;
}

//  Until the pods were listed once (at most wait_for_metadata_secs after
//  the start) the node says it holds as much as it may: the pipeline pushes
//  back (HTTP 429, files and sockets not read), so that a node agent's
//  backlog at start gets its metadata too. The loop is never held: it
//  heartbeats and looks again at its next turn. Never again after.
static bool s_waiting(drv_node_t *node)
{
    kube_t *self = node->state;
    if (!self->wait_until_ms) {
        return false;
    }
    bool listed = drv_pod_cache_listed(self->cache);
    if (!listed && drv_time_mono_ms() < self->wait_until_ms) {
        return true;
    }
    if (!listed) {
        drv_warn("kubernetes: pods not listed in time node=%s: records pass without metadata until they are", node->id);
    }
    self->wait_until_ms = 0;
    return false;
}

static bool s_ready(drv_node_t *node)
{
    return !s_waiting(node);
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    kube_t *self = node->state;
    drv_pod_memo_collect(self->memo); // the batch before was handed on: nothing points into it now
    self->last.valid = false;         // what it found may be what was just freed
    self->prev.merged = NULL;         // in the batch zone, cleared since
    msgpack_object *out = drv_node_alloc(node, n * sizeof *out);
    for (size_t i = 0; i < n; i++) {
        if (s_enrich(self, &records[i], &out[i])) {
            self->enriched++;
        } else {
            out[i] = records[i];
            self->unmatched++;
        }
    }
    drv_node_forward(node, out, n);
}

static json_t *s_details(drv_node_t *node)
{
    kube_t *self = node->state;
    if (!self->cache) {
        return NULL;
    }
    drv_pod_cache_stats_t stats;
    drv_pod_cache_stats(self->cache, &stats);
    const drv_kube_watch_stats_t *w = &stats.watch[0];
    return json_pack("{s:{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s?}}", "kubernetes", "watch",
                     w->state ? w->state : "stopped", "relists", (json_int_t)w->relists, "watch_errors",
                     (json_int_t)(w->errors + stats.watch[1].errors + stats.watch[2].errors), "pods",
                     (json_int_t)stats.pods, "deleted_pods", (json_int_t)stats.deleted_pods, "owners",
                     (json_int_t)(stats.replicasets + stats.jobs), "pods_refused", (json_int_t)stats.pods_refused,
                     "enriched", (json_int_t)self->enriched, "unmatched", (json_int_t)self->unmatched, "last_error",
                     w->last_error[0] ? w->last_error : NULL);
}

const drv_node_kind_t drv_processor_kubernetes = {
    .schema = &drv_schema_processor_kubernetes,
    .init = s_init,
    .run = s_run,
    .details = s_details,
    .ready = s_ready,
    .backlogged = s_waiting,
    .destroy = s_destroy,
};
