/*  drv_pod_extract — see drv_pod_extract.h. */
#include "drv_pod_extract.h"
#include "drv_schemas.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    char *key;         // exact, or NULL
    pcre2_code *regex; // key_regex, or NULL
    char *attribute;   // the name it gets, or NULL: k8s.pod.labels.<key>
} tag_rule_t;

struct drv_pod_extract_t {
    bool metadata[M_COUNT];
    tag_rule_t *labels, *annotations;
    size_t label_count, annotation_count;
    pcre2_match_data *match;
    //  While one extract is made.
    msgpack_zone *zone;
    msgpack_object_kv *out;
    size_t count, max;
};

static int s_tags(const json_t *list, tag_rule_t **out, size_t *count)
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

drv_pod_extract_t *drv_pod_extract_new(const json_t *extract, char *err, size_t errlen)
{
    drv_pod_extract_t *self = calloc(1, sizeof *self);
    const json_t *metadata = json_object_get(extract, "metadata");
    for (int m = 0; m < M_COUNT; m++) {
        bool wanted = !metadata;
        size_t i;
        json_t *name;
        json_array_foreach(metadata, i, name)
        {
            wanted = wanted || !strcmp(json_string_value(name), drv_kubernetes_metadata[m]);
        }
        self->metadata[m] = wanted;
    }
    self->match = pcre2_match_data_create(4, NULL);
    if (s_tags(json_object_get(extract, "labels"), &self->labels, &self->label_count) != 0 ||
        s_tags(json_object_get(extract, "annotations"), &self->annotations, &self->annotation_count) != 0) {
        snprintf(err, errlen, "a key_regex does not compile");
        drv_pod_extract_destroy(&self);
    }
    return self;
}

void drv_pod_extract_destroy(drv_pod_extract_t **self_p)
{
    if (self_p && *self_p) {
        drv_pod_extract_t *self = *self_p;
        s_free_tags(self->labels, self->label_count);
        s_free_tags(self->annotations, self->annotation_count);
        pcre2_match_data_free(self->match);
        free(self);
        *self_p = NULL;
    }
}

bool drv_pod_extract_owners(const drv_pod_extract_t *self)
{
    return self->metadata[M_DEPLOYMENT] || self->metadata[M_CRONJOB];
}

//  A string of len bytes copied into the zone.
static msgpack_object s_str(drv_pod_extract_t *self, const char *text, size_t len)
{
    char *copy = msgpack_zone_malloc(self->zone, len ? len : 1);
    memcpy(copy, text, len);
    return (msgpack_object){.type = MSGPACK_OBJECT_STR, .via.str = {.ptr = copy, .size = (uint32_t)len}};
}

static void s_add(drv_pod_extract_t *self, const char *key, const char *value, size_t len)
{
    if (value && self->count < self->max) {
        self->out[self->count++] =
            (msgpack_object_kv){.key = s_str(self, key, strlen(key)), .val = s_str(self, value, len)};
    }
}

static void s_add_str(drv_pod_extract_t *self, int which, const char *value)
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
static void s_image(drv_pod_extract_t *self, const char *image)
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

static void s_tags_of(drv_pod_extract_t *self, const json_t *tags, const tag_rule_t *rules, size_t count,
                      const char *prefix)
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
                s_add(self, r->attribute ? r->attribute : name, json_string_value(value), json_string_length(value));
                break;
            }
        }
    }
}

size_t drv_pod_extract(drv_pod_extract_t *self, const drv_pod_t *pod, const char *container, size_t len,
                       msgpack_zone *zone, msgpack_object_kv *out, size_t max)
{
    self->zone = zone;
    self->out = out;
    self->max = max;
    self->count = 0;
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
    if (container && (self->metadata[M_IMAGE_NAME] || self->metadata[M_IMAGE_TAG])) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)len, container);
        const char *image = json_string_value(json_object_get(pod->images, name));
        if (image) {
            s_image(self, image);
        }
    }
    s_tags_of(self, pod->labels, self->labels, self->label_count, "k8s.pod.labels");
    s_tags_of(self, pod->annotations, self->annotations, self->annotation_count, "k8s.pod.annotations");
    return self->count;
}
