/*  drv_opamp_report — what the agent tells the server about itself. The
    health tree is first made as text, and the effective config has a key
    (each running pipeline's spec hash): that is the fingerprint that says
    whether they changed since the server last heard them, so they are made
    and sent only then (and in a full report). */
#include "drv_opamp_internal.h"
#include "drv_registry.h"
#include "drv_status.h"

#include "drover/drv_spec.h"
#include "drover/drv_yaml.h"
#include "drover/drv_version.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

//  Everything the message points to, freed together.
struct drv_opamp_report_t {
    Opamp__Proto__AgentToServer msg;
    void **owned;
    size_t count, cap;
    bool failed;
};

static void *s_own(drv_opamp_report_t *r, void *ptr)
{
    if (!ptr || r->count == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        void **grown = ptr ? realloc(r->owned, cap * sizeof *grown) : NULL;
        if (!grown) {
            free(ptr);
            r->failed = true;
            return NULL;
        }
        r->owned = grown;
        r->cap = cap;
    }
    r->owned[r->count++] = ptr;
    return ptr;
}

static void *s_alloc(drv_opamp_report_t *r, size_t size)
{
    return s_own(r, calloc(1, size ? size : 1));
}

static char *s_str(drv_opamp_report_t *r, const char *text)
{
    return s_own(r, strdup(text ? text : ""));
}

static uint64_t s_nanos(int64_t wall_ms)
{
    return wall_ms > 0 ? (uint64_t)wall_ms * 1000000u : 0;
}

//  ---- the health tree: engine -> group:pipeline -> instance

static json_t *s_instance(const drv_instance_t *inst)
{
    const char *state = drv_inst_state_name(inst->state);
    return json_pack("{s:b, s:s, s:I, s:s}", "healthy", !strcmp(state, "ready") || !strcmp(state, "draining"), "status",
                     state, "start_ms", (json_int_t)inst->started_at, "last_error", inst->detail);
}

char *drv_opamp_health_text(drv_engine_t *engine)
{
    json_t *pipelines = json_object();
    bool all = true;
    size_t count;
    drv_pipeline_t **list = drv_registry_pipelines(engine, &count);
    for (size_t i = 0; i < count; i++) {
        drv_pipeline_t *p = list[i];
        const char *phase = drv_status_phase(p);
        bool healthy = strcmp(phase, "degraded") != 0 && strcmp(phase, "failed") != 0;
        all &= healthy;
        json_t *instances = json_object();
        for (drv_instance_t *inst = zlistx_first(p->instances); inst; inst = zlistx_next(p->instances)) {
            json_object_set_new(instances, inst->id, s_instance(inst));
        }
        json_object_set_new(pipelines, p->key,
                            json_pack("{s:b, s:s, s:I, s:o}", "healthy", healthy, "status", phase, "generation",
                                      (json_int_t)p->generation, "instances", instances));
    }
    free(list);
    json_t *doc = json_pack("{s:b, s:s, s:I, s:o}", "healthy", all, "status", all ? "running" : "degraded", "start_ms",
                            (json_int_t)engine->started_at, "pipelines", pipelines);
    char *text = json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(doc);
    return text;
}

static Opamp__Proto__ComponentHealth *s_component(drv_opamp_report_t *r, const json_t *c, const char *children)
{
    Opamp__Proto__ComponentHealth *h = s_alloc(r, sizeof *h);
    if (!h) {
        return NULL;
    }
    opamp__proto__component_health__init(h);
    h->healthy = json_is_true(json_object_get(c, "healthy"));
    h->status = s_str(r, json_string_value(json_object_get(c, "status")));
    h->last_error = s_str(r, json_string_value(json_object_get(c, "last_error")));
    h->start_time_unix_nano = s_nanos(json_integer_value(json_object_get(c, "start_ms")));
    json_t *kids = children ? json_object_get(c, children) : NULL;
    size_t n = json_object_size(kids);
    h->component_health_map = s_alloc(r, n * sizeof *h->component_health_map);
    const char *key;
    json_t *kid;
    json_object_foreach(kids, key, kid)
    {
        Opamp__Proto__ComponentHealth__ComponentHealthMapEntry *e = s_alloc(r, sizeof *e);
        if (!e || !h->component_health_map) {
            return h;
        }
        opamp__proto__component_health__component_health_map_entry__init(e);
        e->key = s_str(r, key);
        e->value = s_component(r, kid, json_object_get(kid, "instances") ? "instances" : NULL);
        h->component_health_map[h->n_component_health_map++] = e;
    }
    return h;
}

//  ---- the effective config: the declared groups (running or starting), as
//  the config file writes them, redacted

char *drv_opamp_effective_key(drv_engine_t *engine)
{
    size_t count, len = 0, cap = 256;
    char *key = malloc(cap);
    drv_pipeline_t **list = drv_registry_pipelines(engine, &count);
    for (size_t i = 0; key && i < count; i++) {
        drv_pipeline_t *p = list[i];
        if (!p->spec || !p->spec_hash) {
            continue;
        }
        size_t need = strlen(p->key) + strlen(p->spec_hash) + 3;
        if (len + need >= cap) {
            char *grown = realloc(key, cap = (len + need) * 2);
            if (!grown) {
                free(key);
                key = NULL;
                break;
            }
            key = grown;
        }
        len += (size_t)snprintf(key + len, cap - len, "%s=%s;", p->key, p->spec_hash);
    }
    free(list);
    if (key) {
        key[len] = 0;
    }
    return key;
}

char *drv_opamp_effective_text(drv_engine_t *engine)
{
    json_t *groups = json_object();
    size_t count;
    drv_pipeline_t **list = drv_registry_pipelines(engine, &count);
    for (size_t i = 0; i < count; i++) {
        drv_pipeline_t *p = list[i];
        if (!p->spec) {
            continue;
        }
        json_t *group = json_object_get(groups, p->group);
        if (!group) {
            group = json_pack("{s:{}}", "pipelines");
            json_object_set_new(groups, p->group, group);
        }
        //  Redacted as GET answers without a token: the server is not
        //  trusted with exporter headers or URL passwords (docs/security.md).
        json_object_set_new(json_object_get(group, "pipelines"), p->name, drv_spec_redact(p->spec));
    }
    free(list);
    json_t *doc = json_pack("{s:o}", "groups", groups);
    char *text = drv_yaml_emit(doc);
    json_decref(doc);
    return text;
}

//  ---- the description

static Opamp__Proto__KeyValue *s_kv(drv_opamp_report_t *r, const char *key, const char *value)
{
    Opamp__Proto__KeyValue *kv = s_alloc(r, sizeof *kv);
    Opamp__Proto__AnyValue *v = s_alloc(r, sizeof *v);
    if (!kv || !v) {
        return NULL;
    }
    opamp__proto__key_value__init(kv);
    opamp__proto__any_value__init(v);
    kv->key = s_str(r, key);
    v->value_case = OPAMP__PROTO__ANY_VALUE__VALUE_STRING_VALUE;
    v->string_value = s_str(r, value);
    kv->value = v;
    return kv;
}

static Opamp__Proto__AgentDescription *s_description(drv_opamp_report_t *r, const uint8_t uid[16])
{
    Opamp__Proto__AgentDescription *d = s_alloc(r, sizeof *d);
    if (!d) {
        return NULL;
    }
    opamp__proto__agent_description__init(d);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char uid_text[37];
    drv_opamp_uid_text(uid, uid_text);
    struct utsname uts;
    uname(&uts);
    d->identifying_attributes = s_alloc(r, 3 * sizeof *d->identifying_attributes);
    d->non_identifying_attributes = s_alloc(r, 3 * sizeof *d->non_identifying_attributes);
    if (d->identifying_attributes && d->non_identifying_attributes) {
        d->identifying_attributes[d->n_identifying_attributes++] = s_kv(r, "service.name", "drover");
        d->identifying_attributes[d->n_identifying_attributes++] = s_kv(r, "service.version", drv_version());
        d->identifying_attributes[d->n_identifying_attributes++] = s_kv(r, "service.instance.id", uid_text);
        d->non_identifying_attributes[d->n_non_identifying_attributes++] = s_kv(r, "host.name", host);
        d->non_identifying_attributes[d->n_non_identifying_attributes++] = s_kv(r, "os.type", "linux");
        d->non_identifying_attributes[d->n_non_identifying_attributes++] = s_kv(r, "host.arch", uts.machine);
    }
    return d;
}

//  ---- the message

drv_opamp_report_t *drv_opamp_report_build(drv_opamp_t *self, bool full)
{
    drv_opamp_report_t *r = calloc(1, sizeof *r);
    if (!r) {
        return NULL;
    }
    Opamp__Proto__AgentToServer *msg = &r->msg;
    opamp__proto__agent_to_server__init(msg);
    msg->instance_uid.data = self->uid;
    msg->instance_uid.len = 16;
    msg->sequence_num = ++self->sequence;
    msg->capabilities = DRV_OPAMP_CAPABILITIES;
    free(self->sending.health);
    free(self->sending.effective);
    self->sending = (drv_opamp_sent_t){0};
    //  Once acknowledged, the description stays described: every report
    //  after it says what the server has (it was forgotten every other poll).
    self->sending.description = true;
    if (full || !self->sent.description) {
        msg->agent_description = s_description(r, self->uid);
    }
    char *health = drv_opamp_health_text(self->engine);
    if (health && (full || !self->sent.health || strcmp(health, self->sent.health) != 0)) {
        json_t *tree = json_loads(health, 0, NULL);
        msg->health = s_component(r, tree, "pipelines");
        json_decref(tree);
    }
    self->sending.health = health;
    char *key = drv_opamp_effective_key(self->engine);
    char *effective = key && (full || !self->sent.effective || strcmp(key, self->sent.effective) != 0)
                          ? s_own(r, drv_opamp_effective_text(self->engine))
                          : NULL;
    if (effective) {
        Opamp__Proto__EffectiveConfig *ec = s_alloc(r, sizeof *ec);
        Opamp__Proto__AgentConfigMap *map = s_alloc(r, sizeof *map);
        Opamp__Proto__AgentConfigMap__ConfigMapEntry *entry = s_alloc(r, sizeof *entry);
        Opamp__Proto__AgentConfigMap__ConfigMapEntry **entries = s_alloc(r, sizeof *entries);
        Opamp__Proto__AgentConfigFile *file = s_alloc(r, sizeof *file);
        if (ec && map && entry && entries && file) {
            opamp__proto__effective_config__init(ec);
            opamp__proto__agent_config_map__init(map);
            opamp__proto__agent_config_map__config_map_entry__init(entry);
            opamp__proto__agent_config_file__init(file);
            file->body.data = (uint8_t *)effective;
            file->body.len = strlen(effective);
            file->content_type = "text/yaml";
            entry->key = "drover.yaml";
            entry->value = file;
            entries[0] = entry;
            map->config_map = entries;
            map->n_config_map = 1;
            ec->config_map = map;
            msg->effective_config = ec;
        }
    }
    self->sending.effective = key;
    if (r->failed) {
        drv_opamp_report_free(&r);
        return NULL;
    }
    return r;
}

Opamp__Proto__AgentToServer *drv_opamp_report_msg(drv_opamp_report_t *r)
{
    return &r->msg;
}

void drv_opamp_report_free(drv_opamp_report_t **r_p)
{
    drv_opamp_report_t *r = *r_p;
    if (!r) {
        return;
    }
    *r_p = NULL;
    for (size_t i = 0; i < r->count; i++) {
        free(r->owned[i]);
    }
    free(r->owned);
    free(r);
}
