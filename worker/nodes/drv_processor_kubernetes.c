/*  processor:kubernetes — a record's pod, found by a resource attribute
    (its uid, its IP), adds what the Kubernetes API knows of it to the
    record's resource (docs/kubernetes.md; the cache: worker/kube/drv_pod_cache.h).
    The new resource is built in the batch zone; the record is never
    changed in place. A record whose pod is not known passes as it is,
    counted in unmatched. */
#include "drv_node.h"
#include "drv_pod_cache.h"
#include "drv_pod_memo.h"
#include "drv_record.h"
#include "drv_schemas.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ADDED 256 // attributes one record may get (labels and annotations included)

enum {
    M_NAMESPACE,
    M_POD,
    M_UID,
    M_IP,
    M_START,
    M_NODE,
    M_DEPLOYMENT,
    M_REPLICASET,
    M_STATEFULSET,
    M_DAEMONSET,
    M_JOB,
    M_CRONJOB,
    M_IMAGE_NAME,
    M_IMAGE_TAG,
    M_COUNT
};

typedef struct {
    drv_pod_by_t by;
    msgpack_object attribute; // the resource attribute holding it
} associate_t;

typedef struct {
    char *key;         // exact, or NULL
    pcre2_code *regex; // key_regex, or NULL
    char *attribute;   // the name it gets, or NULL: k8s.pod.labels.<key>
} tag_rule_t;

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
    bool metadata[M_COUNT];
    tag_rule_t *labels, *annotations;
    size_t label_count, annotation_count;
    pcre2_match_data *match;
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

static int s_tags(kube_t *self, const json_t *list, tag_rule_t **out, size_t *count)
{
    *out = calloc(json_array_size(list) + 1, sizeof **out);
    size_t i;
    json_t *rule;
    json_array_foreach(list, i, rule)
    {
        tag_rule_t *r = &(*out)[(*count)++];
        const char *key = json_string_value(json_object_get(rule, "key"));
        const char *regex = json_string_value(json_object_get(rule, "key_regex"));
        const char *attribute = json_string_value(json_object_get(rule, "attribute"));
        r->key = key ? strdup(key) : NULL;
        r->attribute = attribute ? strdup(attribute) : NULL;
        if (regex) {
            int code;
            PCRE2_SIZE offset;
            r->regex = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code, &offset, NULL);
            if (!r->regex) {
                return -1;
            }
        }
    }
    (void)self;
    return 0;
}

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
    const json_t *extract = json_object_get(config, "extract");
    const json_t *metadata = json_object_get(extract, "metadata");
    for (int m = 0; m < M_COUNT; m++) {
        bool wanted = !metadata;
        json_t *name;
        json_array_foreach(metadata, i, name)
        {
            wanted = wanted || !strcmp(json_string_value(name), drv_kubernetes_metadata[m]);
        }
        self->metadata[m] = wanted;
    }
    if (s_tags(self, json_object_get(extract, "labels"), &self->labels, &self->label_count) != 0 ||
        s_tags(self, json_object_get(extract, "annotations"), &self->annotations, &self->annotation_count) != 0) {
        snprintf(err, errlen, "node %s: a key_regex does not compile", node->id);
        return -1;
    }
    self->match = pcre2_match_data_create(4, NULL);
    self->memo = drv_pod_memo_new((size_t)json_integer_value(json_object_get(config, "max_pods")) * 4 + 1024);
    drv_node_string_object(node, "resource", &self->resource_key);
    drv_node_string_object(node, "k8s.container.name", &self->container_key);
    if (drv_node_probe) {
        return 0; // nothing is watched for a check
    }
    const char *on = json_string_value(json_object_get(config, "node"));
    bool owners = self->metadata[M_DEPLOYMENT] || self->metadata[M_CRONJOB];
    int64_t grace = json_integer_value(json_object_get(config, "deleted_grace_secs")) * 1000;
    self->cache =
        drv_pod_cache_new(self->kube, on, owners, grace, json_integer_value(json_object_get(config, "max_pods")));
    int64_t wait = json_integer_value(json_object_get(config, "wait_for_metadata_secs")) * 1000;
    self->wait_until_ms = wait > 0 ? drv_time_mono_ms() + wait : 0;
    drv_info("kubernetes: watching pods node=%s on=%s server=%s owners=%s", node->id, on && *on ? on : "(every node)",
             drv_kube_server(self->kube), owners ? "yes" : "no");
    return 0;
}

static void s_free_tags(tag_rule_t *rules, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        free(rules[i].key);
        free(rules[i].attribute);
        pcre2_code_free(rules[i].regex);
    }
    free(rules);
}

static void s_destroy(drv_node_t *node)
{
    kube_t *self = node->state;
    if (self) {
        drv_pod_cache_destroy(&self->cache);
        drv_pod_memo_destroy(&self->memo);
        drv_kube_destroy(&self->kube);
        s_free_tags(self->labels, self->label_count);
        s_free_tags(self->annotations, self->annotation_count);
        pcre2_match_data_free(self->match);
        free(self);
    }
}

//  A string of len bytes copied into the batch zone.
static msgpack_object s_str(kube_t *self, const char *text, size_t len)
{
    char *copy = drv_node_alloc(self->node, len);
    memcpy(copy, text, len);
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {.ptr = copy, .size = (uint32_t)len}};
}

static void s_add(kube_t *self, const char *key, const char *value, size_t len)
{
    if (value && self->added_count < MAX_ADDED) {
        self->added[self->added_count++] =
            (msgpack_object_kv){.key = s_str(self, key, strlen(key)), .val = s_str(self, value, len)};
    }
}

static void s_add_str(kube_t *self, int which, const char *value)
{
    if (self->metadata[which] && value && *value) {
        s_add(self, drv_kubernetes_metadata[which], value, strlen(value));
    }
}

//  The owner of kind (a direct one, or the one above it) when there is one.
static const char *s_owned(const drv_pod_t *pod, const char *kind)
{
    if (pod->owner_kind && !strcmp(pod->owner_kind, kind)) {
        return pod->owner_name;
    }
    return pod->top_kind && !strcmp(pod->top_kind, kind) ? pod->top_name : NULL;
}

//  registry/name:tag@digest: name and tag ("latest" when none).
static void s_image(kube_t *self, const char *image)
{
    size_t len = strcspn(image, "@");
    const char *slash = memrchr(image, '/', len), *colon = memrchr(image, ':', len);
    size_t name_len = colon && (!slash || colon > slash) ? (size_t)(colon - image) : len;
    if (self->metadata[M_IMAGE_NAME]) {
        s_add(self, "container.image.name", image, name_len);
    }
    if (self->metadata[M_IMAGE_TAG]) {
        s_add(self, "container.image.tag", name_len < len ? image + name_len + 1 : "latest",
              name_len < len ? len - name_len - 1 : 6);
    }
}

static void s_tags_of(kube_t *self, const json_t *tags, const tag_rule_t *rules, size_t count, const char *prefix)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)tags, key, value)
    {
        for (size_t i = 0; i < count && json_is_string(value); i++) {
            const tag_rule_t *r = &rules[i];
            bool hit =
                r->key ? !strcmp(r->key, key)
                       : pcre2_match(r->regex, (PCRE2_SPTR)key, PCRE2_ZERO_TERMINATED, 0, 0, self->match, NULL) >= 0;
            if (hit) {
                char name[512];
                snprintf(name, sizeof name, "%s.%s", prefix, key);
                s_add(self, r->key && r->attribute ? r->attribute : name, json_string_value(value),
                      json_string_length(value));
                break;
            }
        }
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
    self->added_count = 0;
    s_add_str(self, M_NAMESPACE, pod->namespace_);
    s_add_str(self, M_POD, pod->name);
    s_add_str(self, M_UID, pod->uid);
    s_add_str(self, M_IP, pod->ip);
    s_add_str(self, M_START, pod->start_time);
    s_add_str(self, M_NODE, pod->node);
    s_add_str(self, M_REPLICASET, s_owned(pod, "ReplicaSet"));
    s_add_str(self, M_DEPLOYMENT, s_owned(pod, "Deployment"));
    s_add_str(self, M_STATEFULSET, s_owned(pod, "StatefulSet"));
    s_add_str(self, M_DAEMONSET, s_owned(pod, "DaemonSet"));
    s_add_str(self, M_JOB, s_owned(pod, "Job"));
    s_add_str(self, M_CRONJOB, s_owned(pod, "CronJob"));
    if (self->container && (self->metadata[M_IMAGE_NAME] || self->metadata[M_IMAGE_TAG])) {
        char name[256];
        const msgpack_object *c = self->container;
        snprintf(name, sizeof name, "%.*s", (int)c->via.str.size, c->via.str.ptr);
        const char *image = json_string_value(json_object_get(pod->images, name));
        if (image) {
            s_image(self, image);
        }
    }
    s_tags_of(self, pod->labels, self->labels, self->label_count, "k8s.pod.labels");
    s_tags_of(self, pod->annotations, self->annotations, self->annotation_count, "k8s.pod.annotations");
    self->hit = drv_pod_memo_keep(self->memo, pod, container, container_len, self->added, self->added_count);
}

//  The record with its pod's attributes in its resource, or false when no
//  association finds a pod.
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
//  the start), the first records wait: a node agent's backlog at start
//  gets its metadata too. Never again after.
static void s_wait_listed(drv_node_t *node, kube_t *self)
{
    if (self->wait_until_ms && !drv_pod_cache_wait_listed(self->cache, self->wait_until_ms)) {
        drv_warn("kubernetes: pods not listed in time node=%s: records pass without metadata until they are", node->id);
    }
    self->wait_until_ms = 0;
}

static bool s_ready(drv_node_t *node)
{
    kube_t *self = node->state;
    if (self->cache && self->wait_until_ms &&
        (drv_pod_cache_wait_listed(self->cache, 0) || drv_time_mono_ms() >= self->wait_until_ms)) {
        s_wait_listed(node, self);
    }
    return !self->wait_until_ms;
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    kube_t *self = node->state;
    if (self->cache && self->wait_until_ms) {
        s_wait_listed(node, self);
    }
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
    .destroy = s_destroy,
};
