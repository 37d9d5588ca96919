/*  drv_kube_source — see drv_kube_source.h. What each resource asked for
    and what came of it is kept per resource ("tracked"), so that the loop
    acts on a resource only when its generation changed or what it asked
    for is not what runs: a relist after a 410 or a restart that finds
    every pipeline as its resource says changes nothing, and a rollout
    that failed is not tried again until the resource changes. */
#include "drv_kube_source.h"
#include "drv_kube_report.h"
#include "drv_events.h"
#include "drv_operations.h"
#include "drv_registry.h"
#include "drv_rollout.h"
#include "drv_shutdown.h"
#include "drv_status.h"

#include "drover/drv_kube.h"
#include "drover/drv_log.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"
#include "drover/drv_utf8.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define SETTLING_MS 500 // how soon to look again while a pipeline changes
#define IDLE_MS 5000    // and otherwise: statuses follow instances that come and go

struct drv_kube_source_t {
    drv_engine_t *engine;
    drv_kube_t *kube;
    drv_kube_watch_t *watch;
    drv_kube_report_t *report;
    char name[256]; // this droverd's entry in each status
    int fd;         // eventfd: the watch brought news
    pthread_mutex_t lock;
    json_t *resources; // guarded: "namespace/name" -> the object as last told
    json_t *listing;   // guarded: keys named since a list began (NULL: none going on)
    bool synced;       // guarded: a list ended, so what the API holds is known
    bool news;         // guarded
    //  The loop's own.
    json_t *objects; // the resources as last converged on
    json_t *tracked; // "namespace/name" -> {generation, hash, failed, invalid, rollout, reported}
    int64_t next_ms; // mono: when to look again without news
};

//  "namespace/name" of an object, or false.
static bool s_key(const json_t *object, char *key, size_t size)
{
    const json_t *meta = json_object_get(object, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    return ns && name && (size_t)snprintf(key, size, "%s/%s", ns, name) < size;
}

//  In the watch's thread: what the API holds, kept; the loop woken.
static void s_on_event(void *arg, drv_kube_event_t event, const json_t *object)
{
    drv_kube_source_t *self = arg;
    char key[600];
    pthread_mutex_lock(&self->lock);
    if (event == DRV_KUBE_LISTED) {
        json_decref(self->listing);
        self->listing = json_object();
    } else if (event == DRV_KUBE_SYNCED && self->listing) {
        const char *k;
        json_t *value;
        void *tmp;
        json_object_foreach_safe(self->resources, tmp, k, value)
        {
            if (!json_object_get(self->listing, k)) {
                json_object_del(self->resources, k);
            }
        }
        json_decref(self->listing);
        self->listing = NULL;
        self->synced = true;
    } else if ((event == DRV_KUBE_ADDED || event == DRV_KUBE_MODIFIED) && s_key(object, key, sizeof key)) {
        json_object_set_new(self->resources, key, json_deep_copy(object));
        if (self->listing) {
            json_object_set_new(self->listing, key, json_true());
        }
    } else if (event == DRV_KUBE_DELETED && s_key(object, key, sizeof key)) {
        json_object_del(self->resources, key);
    }
    self->news = true;
    pthread_mutex_unlock(&self->lock);
    uint64_t one = 1;
    ssize_t written = write(self->fd, &one, sizeof one);
    (void)written; // a full counter wakes the loop all the same
}

//  The message the admin API's 422 gives, as one line.
static void s_problems_text(drv_problems_t *problems, char *out, size_t size)
{
    size_t at = (size_t)snprintf(out, size, "invalid PipelineSpec:");
    for (size_t i = 0; i < drv_problems_count(problems) && i < 5 && at < size; i++) {
        at += (size_t)drv_utf8_snprintf(out + at, size - at, "%s %s: %s", i ? ";" : "", drv_problems_path(problems, i),
                                        drv_problems_message(problems, i));
    }
}

static const char *s_text(const json_t *record, const char *key)
{
    return json_string_value(json_object_get(record, key));
}

static bool s_same(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

//  Acts on one resource when what it asks for is not what runs; its
//  pipeline in *pipeline, what stands in the way in message.
static void s_converge(drv_kube_source_t *self, const char *key, const json_t *object, json_t *t, const char *group,
                       const char *name, drv_pipeline_t **pipeline, char *message, size_t size)
{
    drv_engine_t *engine = self->engine;
    drv_pipeline_t *p = *pipeline;
    json_int_t generation = json_integer_value(json_object_get(json_object_get(object, "metadata"), "generation"));
    bool same = json_integer_value(json_object_get(t, "generation")) == generation && json_object_get(t, "generation");
    bool owned = p && p->source == DRV_SOURCE_KUBERNETES && !strcmp(p->owner, key);
    if (same && s_text(t, "invalid")) {
        snprintf(message, size, "%s", s_text(t, "invalid"));
        return;
    }
    if (same && owned && p->running && !p->active && !p->shutdown_active && s_same(p->spec_hash, s_text(t, "hash"))) {
        return; // as asked
    }
    if (same && s_same(s_text(t, "failed"), s_text(t, "hash"))) {
        snprintf(message, size, "%s", s_text(t, "failure") ?: "the rollout failed");
        return; // not tried again until the resource changes
    }
    if (p && (p->active || p->shutdown_active)) {
        self->next_ms = drv_time_mono_ms() + SETTLING_MS; // its turn comes once that ends
        return;
    }
    drv_problems_t *problems = drv_problems_new();
    json_t *spec = drv_spec_normalize(json_object_get(json_object_get(object, "spec"), "pipeline"), &engine->spec_env,
                                      "spec.pipeline", problems);
    char *hash = spec ? drv_spec_hash(spec) : NULL;
    json_object_set_new(t, "generation", json_integer(generation));
    json_object_del(t, "invalid");
    if (!spec) {
        s_problems_text(problems, message, size);
        json_object_set_new(t, "invalid", json_string(message));
        drv_warn("kubernetes: DroverPipeline %s generation %lld refused reason=\"%s\"", key, (long long)generation,
                 message);
    } else if (owned && p->running && s_same(p->spec_hash, hash)) {
        json_object_set_new(t, "hash", json_string(hash)); // what runs already (a restart, a relist)
    } else {
        char why[400] = "";
        drv_rollout_t *rollout = NULL;
        drv_registry_group(engine, group, true);
        drv_change_t change = {.group = group,
                               .name = name,
                               .spec = spec,
                               .source = DRV_SOURCE_KUBERNETES,
                               .owner = key,
                               .admit = true,
                               .opts = {.cause = "kubernetes"}};
        drv_change_outcome_t outcome = drv_operations_apply(engine, &change, problems, why, sizeof why, &rollout);
        if (outcome == DRV_CHANGE_STARTED) {
            json_object_set_new(t, "hash", json_string(hash));
            json_object_set_new(t, "rollout", json_string(drv_rollout_id(rollout)));
            json_object_del(t, "failed");
            drv_info("kubernetes: DroverPipeline %s generation %lld: rollout %s (%s) of pipeline %s:%s", key,
                     (long long)generation, drv_rollout_id(rollout), drv_action_name(drv_rollout_action(rollout)),
                     group, name);
            self->next_ms = drv_time_mono_ms() + SETTLING_MS;
        } else if (outcome == DRV_CHANGE_INVALID) {
            s_problems_text(problems, message, size);
            json_object_set_new(t, "invalid", json_string(message));
        } else {
            snprintf(message, size, "%s", why); // refused for now (a limit): tried again
            json_object_del(t, "generation");
            self->next_ms = drv_time_mono_ms() + IDLE_MS;
        }
        *pipeline = drv_registry_pipeline(engine, group, name);
    }
    free(hash);
    json_decref(spec);
    drv_problems_destroy(&problems);
}

//  This droverd's entry in the resource's status, written when it changed.
static void s_status(drv_kube_source_t *self, const json_t *object, json_t *t, drv_pipeline_t *p, const char *message,
                     const char *phase)
{
    const char *id = s_text(t, "rollout");
    drv_rollout_t *rollout = p && id ? drv_rollout_find(p, id) : NULL;
    json_t *past = p && id && !rollout ? drv_rollout_find_past(p, id) : NULL;
    const char *state = rollout ? drv_rollout_state_name(drv_rollout_state(rollout)) : s_text(past, "state");
    json_t *entry =
        json_pack("{s:O?, s:I, s:s, s:i, s:o, s:s}", "observedGeneration", json_object_get(t, "generation"),
                  "generation", (json_int_t)(p ? p->generation : 0), "phase",
                  phase ? phase
                  : p   ? drv_status_phase(p)
                        : "pending",
                  "readyInstances", p ? drv_status_ready_instances(p) : 0, "rollout",
                  id && state ? json_pack("{s:s, s:s}", "id", id, "state", state) : json_null(), "message", message);
    json_decref(past);
    char *text = json_dumps(entry, JSON_COMPACT | JSON_SORT_KEYS);
    if (text && !s_same(text, s_text(t, "reported"))) {
        json_object_set_new(t, "reported", json_string(text));
        char stamp[40];
        drv_time_rfc3339(drv_time_wall_ms(), stamp, sizeof stamp);
        json_object_set_new(entry, "updatedAt", json_string(stamp));
        const json_t *meta = json_object_get(object, "metadata");
        drv_kube_report_status(self->report, json_string_value(json_object_get(meta, "namespace")),
                               json_string_value(json_object_get(meta, "name")), json_incref(entry));
    }
    free(text);
    json_decref(entry);
}

static void s_reconcile(drv_kube_source_t *self, const char *key, const json_t *object)
{
    json_t *t = json_object_get(self->tracked, key);
    if (!t) {
        json_object_set_new(self->tracked, key, t = json_object());
    }
    const char *name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
    const json_t *spec = json_object_get(object, "spec");
    const char *group = json_string_value(json_object_get(spec, "group")) ?: "default";
    char message[1024] = "";
    const char *phase = NULL;
    drv_pipeline_t *p = NULL;
    if (!json_is_object(spec) || !json_is_object(json_object_get(spec, "pipeline"))) {
        snprintf(message, sizeof message, "spec.pipeline must be a PipelineSpec (a map)");
        phase = "invalid";
    } else if (!drv_spec_valid_id(name) || !drv_spec_valid_id(group)) {
        snprintf(message, sizeof message, "metadata.name and spec.group must match [a-z0-9_-]{1,63}");
        phase = "invalid";
    } else if ((p = drv_registry_pipeline(self->engine, group, name)) && p->source == DRV_SOURCE_KUBERNETES &&
               strcmp(p->owner, key)) {
        snprintf(message, sizeof message, "pipeline %s is owned by DroverPipeline %s", p->key, p->owner);
        phase = "conflict";
        p = NULL;
    } else {
        s_converge(self, key, object, t, group, name, &p, message, sizeof message);
        phase = s_text(t, "invalid") ? "invalid" : NULL;
    }
    s_status(self, object, t, p, message, phase);
}

//  Whether the resource (if any) still names pipeline p: its group and name.
static bool s_still_names(const json_t *object, const drv_pipeline_t *p)
{
    const char *name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
    const char *group = json_string_value(json_object_get(json_object_get(object, "spec"), "group")) ?: "default";
    return object && s_same(name, p->name) && s_same(group, p->group);
}

//  Pipelines whose resource is gone (once a list said so), or names
//  another group now, are shut down.
static void s_remove_gone(drv_kube_source_t *self)
{
    size_t count;
    drv_pipeline_t **all = drv_registry_pipelines(self->engine, &count);
    for (size_t i = 0; i < count; i++) {
        drv_pipeline_t *p = all[i];
        const json_t *object = json_object_get(self->objects, p->owner);
        if (p->source != DRV_SOURCE_KUBERNETES || s_still_names(object, p) || p->shutdown_active) {
            continue;
        }
        if (p->active) {
            self->next_ms = drv_time_mono_ms() + SETTLING_MS;
            continue;
        }
        drv_info("kubernetes: DroverPipeline %s %s: shutting pipeline %s down", p->owner,
                 object ? "names another group now" : "is gone", p->key);
        drv_shutdown_start(self->engine, p, 0, true);
    }
    free(all);
}

int64_t drv_kube_source_tick(drv_kube_source_t *self)
{
    if (!self) {
        return -1;
    }
    uint64_t counter;
    ssize_t got = read(self->fd, &counter, sizeof counter);
    (void)got;
    pthread_mutex_lock(&self->lock);
    bool news = self->news, synced = self->synced;
    self->news = false;
    json_t *objects = news ? json_copy(self->resources) : NULL; // the objects are shared, never changed
    pthread_mutex_unlock(&self->lock);
    int64_t now = drv_time_mono_ms();
    if (!news && now < self->next_ms) {
        return self->next_ms - now;
    }
    if (objects) {
        json_decref(self->objects);
        self->objects = objects;
    }
    self->next_ms = now + IDLE_MS;
    const char *key;
    json_t *object;
    void *tmp;
    json_object_foreach(self->objects, key, object)
    {
        s_reconcile(self, key, object);
    }
    json_object_foreach_safe(self->tracked, tmp, key, object)
    {
        if (!json_object_get(self->objects, key)) {
            json_object_del(self->tracked, key);
        }
    }
    if (synced) {
        s_remove_gone(self);
    }
    now = drv_time_mono_ms();
    return self->next_ms > now ? self->next_ms - now : 0;
}

//  Rollouts of pipelines a resource owns, as Kubernetes Events; the
//  resource's status looked at again at once.
static void s_on_engine_event(drv_engine_t *engine, const char *topic, const json_t *event)
{
    static const char *const reasons[][3] = {
        {"rollout.running", "Normal", "RolloutStarted"},          {"rollout.succeeded", "Normal", "RolloutSucceeded"},
        {"rollout.failed", "Warning", "RolloutFailed"},           {"rollout.rolling_back", "Warning", "RollingBack"},
        {"rollout.rollback_failed", "Warning", "RollbackFailed"}, {"rollout.paused", "Normal", "RolloutPaused"}};
    drv_kube_source_t *self = engine->kube_source;
    drv_pipeline_t *p = drv_registry_pipeline(engine, json_string_value(json_object_get(event, "group")) ?: "",
                                              json_string_value(json_object_get(event, "pipeline")) ?: "");
    const json_t *object = p && p->source == DRV_SOURCE_KUBERNETES ? json_object_get(self->objects, p->owner) : NULL;
    for (size_t i = 0; object && i < sizeof reasons / sizeof reasons[0]; i++) {
        if (strcmp(topic, reasons[i][0])) {
            continue;
        }
        const char *id = json_string_value(json_object_get(event, "rollout_id")) ?: "";
        const char *failure = json_string_value(json_object_get(event, "failure_reason"));
        json_int_t target = json_integer_value(json_object_get(event, "target_generation"));
        char message[1024];
        drv_utf8_snprintf(message, sizeof message, "rollout %s (%s) of pipeline %s to generation %lld: %s%s%s", id,
                          json_string_value(json_object_get(event, "action")) ?: "", p->key, (long long)target,
                          topic + strlen("rollout."), failure ? ": " : "", failure ? failure : "");
        drv_kube_report_event(self->report, object, reasons[i][1], reasons[i][2], message);
        json_t *t = json_object_get(self->tracked, p->owner);
        if (!strcmp(topic, "rollout.failed") && t && s_same(s_text(t, "rollout"), id)) {
            json_object_set(t, "failed", json_object_get(t, "hash"));
            json_object_set_new(t, "failure", json_string(message));
        }
        self->next_ms = 0; // the status says so at the next turn
    }
}

drv_kube_source_t *drv_kube_source_new(drv_engine_t *engine, char *err, size_t errlen)
{
    err[0] = 0;
    const json_t *config = engine->config->kubernetes;
    if (!config) {
        return NULL;
    }
    const json_t *api = json_object_get(config, "api");
    drv_kube_config_t settings = {.server = json_string_value(json_object_get(api, "server")),
                                  .token_file = json_string_value(json_object_get(api, "token_file")),
                                  .ca_file = json_string_value(json_object_get(api, "ca_file"))};
    char why[400];
    drv_kube_t *kube = drv_kube_new(&settings, why, sizeof why);
    if (!kube) {
        snprintf(err, errlen, "engine.kubernetes: %s", why);
        return NULL;
    }
    drv_kube_source_t *self = calloc(1, sizeof *self);
    self->engine = engine;
    self->kube = kube;
    const char *pod = getenv("POD_NAME");
    if (pod && *pod) {
        snprintf(self->name, sizeof self->name, "%s", pod);
    } else if (gethostname(self->name, sizeof self->name - 1) != 0) {
        snprintf(self->name, sizeof self->name, "droverd");
    }
    self->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&self->lock, NULL);
    self->resources = json_object();
    self->objects = json_object();
    self->tracked = json_object();
    self->report = drv_kube_report_new(kube, self->name);
    engine->kube_source = self;
    engine->resource_listener = s_on_engine_event;
    const json_t *watch = json_object_get(config, "watch");
    const char *ns = json_string_value(json_object_get(watch, "namespace"));
    char path[300];
    snprintf(path, sizeof path, "/apis/drover.dev/v1alpha1%s%s/droverpipelines", ns && *ns ? "/namespaces/" : "",
             ns && *ns ? ns : "");
    const char *selector = json_string_value(json_object_get(watch, "label_selector"));
    self->watch = drv_kube_watch_start(kube, path, NULL, selector, s_on_event, self);
    drv_info("kubernetes: watching DroverPipelines server=%s path=%s label_selector=\"%s\" engine=%s",
             drv_kube_server(kube), path, selector ? selector : "", self->name);
    return self;
}

void drv_kube_source_destroy(drv_kube_source_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_kube_source_t *self = *self_p;
    drv_kube_watch_stop(&self->watch); // first: its thread calls s_on_event
    drv_kube_report_destroy(&self->report);
    if (self->engine->kube_source == self) {
        self->engine->kube_source = NULL;
        self->engine->resource_listener = NULL;
    }
    drv_kube_destroy(&self->kube);
    close(self->fd);
    pthread_mutex_destroy(&self->lock);
    json_decref(self->resources);
    json_decref(self->listing);
    json_decref(self->objects);
    json_decref(self->tracked);
    free(self);
    *self_p = NULL;
}

int drv_kube_source_fd(drv_kube_source_t *self)
{
    return self ? self->fd : -1;
}

json_t *drv_kube_source_json(drv_kube_source_t *self)
{
    if (!self) {
        return NULL;
    }
    drv_kube_watch_stats_t stats;
    drv_kube_watch_stats(self->watch, &stats);
    int64_t status_failures, event_failures;
    drv_kube_report_failures(self->report, &status_failures, &event_failures);
    size_t owned = 0, count;
    drv_pipeline_t **all = drv_registry_pipelines(self->engine, &count);
    for (size_t i = 0; i < count; i++) {
        owned += all[i]->source == DRV_SOURCE_KUBERNETES;
    }
    free(all);
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:I, s:I, s:I, s:I}", "server", drv_kube_server(self->kube),
                     "engine", self->name, "watch", stats.state, "relists", (json_int_t)stats.relists, "watch_errors",
                     (json_int_t)stats.errors, "last_error", stats.last_error, "resources",
                     (json_int_t)json_object_size(self->objects), "pipelines", (json_int_t)owned, "status_failures",
                     (json_int_t)status_failures, "event_failures", (json_int_t)event_failures);
}
