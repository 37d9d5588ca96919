/*  drv_shutdown — see drv_shutdown.h. The broker closes the pipeline's front
    doors first (forwarding what it already accepted), then each instance gets
    its DRAIN marker after its last batch; an instance that does not exit by
    drain_timeout_secs gets SIGTERM, and SIGKILL 5 s later (drv_lifecycle). */
#include "drv_shutdown.h"
#include "drv_waiters.h"
#include "drv_lifecycle.h"
#include "drv_broker_link.h"
#include "drv_events.h"

#include "drover/drv_log.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <string.h>

typedef enum { CORE_REQUESTED = 0, CORE_DRAINING, CORE_EXITED, CORE_KILLED } core_state_t;
static const char *s_core_names[] = {"shutdown_requested", "draining", "exited", "killed"};

typedef struct {
    char instance[DRV_ID_MAX];
    int core;
    int64_t generation;
    core_state_t state;
    char detail[120];
} shutdown_core_t;

struct drv_shutdown_t {
    char id[32];
    char group[64];
    char pipeline[64];
    drv_pipeline_t *owner;
    bool forget;                // DELETE: remove the pipeline at the end
    bool done;
    int64_t started_at, updated_at;
    shutdown_core_t *cores;     // one per instance it stops, owned
    int core_count;
    drv_waiters_t *waiters;     // requests waiting for the outcome
};

static json_t *s_time(int64_t ms)
{
    char buf[40];
    drv_time_rfc3339(ms, buf, sizeof buf);
    return json_string(buf);
}

static void s_shutdown_free(void **item)
{
    drv_shutdown_destroy((drv_shutdown_t **)item);
}

drv_shutdown_t *drv_shutdown_start(drv_engine_t *engine, drv_pipeline_t *pipeline, int64_t drain_timeout_secs,
                                   bool forget)
{
    drv_shutdown_t *self = calloc(1, sizeof *self);
    snprintf(self->id, sizeof self->id, "shutdown-%lld", (long long)++engine->next_shutdown_id);
    snprintf(self->group, sizeof self->group, "%s", pipeline->group);
    snprintf(self->pipeline, sizeof self->pipeline, "%s", pipeline->name);
    self->owner = pipeline;
    self->forget = forget;
    self->waiters = drv_waiters_new();
    self->started_at = self->updated_at = drv_time_wall_ms();
    if (drain_timeout_secs <= 0) {
        drain_timeout_secs = drv_spec_policy(pipeline->spec, "rollout", "drain_timeout_secs");
    }
    zlistx_set_destructor(pipeline->shutdowns, s_shutdown_free); // the history owns its shutdowns
    zlistx_add_end(pipeline->shutdowns, self);
    while (zlistx_size(pipeline->shutdowns) > DRV_SHUTDOWN_HISTORY) {
        zlistx_first(pipeline->shutdowns); // the oldest, finished: one runs at a time
        zlistx_delete(pipeline->shutdowns, zlistx_cursor(pipeline->shutdowns));
    }
    pipeline->shutdown_active = self;
    pipeline->stopping = true;
    drv_info("pipeline shutdown started pipeline=%s id=%s forget=%s", pipeline->key, self->id,
             forget ? "yes" : "no");
    if (pipeline->has_zmq) {
        drv_broker_pipeline_del(engine, pipeline);
    }
    //  Snapshot first: retiring an instance that is not running removes it.
    size_t n = 0;
    drv_instance_t **all = calloc(zlistx_size(pipeline->instances) + 1, sizeof *all);
    self->cores = calloc(zlistx_size(pipeline->instances) + 1, sizeof *self->cores);
    for (drv_instance_t *inst = zlistx_first(pipeline->instances); inst; inst = zlistx_next(pipeline->instances)) {
        all[n++] = inst;
    }
    for (size_t i = 0; i < n; i++) {
        shutdown_core_t *c = &self->cores[self->core_count++];
        snprintf(c->instance, sizeof c->instance, "%s", all[i]->id);
        c->core = all[i]->core;
        c->generation = all[i]->generation;
        c->state = all[i]->pid > 0 ? CORE_DRAINING : CORE_EXITED;
        snprintf(c->detail, sizeof c->detail, "%s", all[i]->pid > 0 ? "draining" : "was not running");
        drv_lifecycle_retire(engine, all[i], drain_timeout_secs * 1000);
    }
    free(all);
    drv_events_publish(engine, "shutdown.running", pipeline->group, pipeline->name,
                       json_pack("{s:s}", "shutdown_id", self->id));
    return self;
}

void drv_shutdown_destroy(drv_shutdown_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_shutdown_t *self = *self_p;
    drv_waiters_destroy(&self->waiters, "the shutdown record was discarded");
    free(self->cores);
    free(self);
    *self_p = NULL;
}

const char *drv_shutdown_id(const drv_shutdown_t *self)
{
    return self->id;
}

bool drv_shutdown_finished(const drv_shutdown_t *self)
{
    return self->done;
}

drv_shutdown_t *drv_shutdown_find(drv_pipeline_t *pipeline, const char *id)
{
    for (drv_shutdown_t *s = zlistx_first(pipeline->shutdowns); s; s = zlistx_next(pipeline->shutdowns)) {
        if (!strcmp(s->id, id)) {
            return s;
        }
    }
    return NULL;
}

json_t *drv_shutdown_json(const drv_shutdown_t *self)
{
    json_t *cores = json_array();
    for (int i = 0; i < self->core_count; i++) {
        const shutdown_core_t *c = &self->cores[i];
        json_array_append_new(cores, json_pack("{s:i, s:I, s:s, s:s, s:s}", "core", c->core, "generation",
                                               (json_int_t)c->generation, "instance", c->instance, "state",
                                               s_core_names[c->state], "detail", c->detail));
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:n, s:o, s:b}", "shutdown_id", self->id, "group",
                     self->group, "pipeline", self->pipeline, "state", self->done ? "succeeded" : "running",
                     "started_at", s_time(self->started_at), "updated_at", s_time(self->updated_at),
                     "failure_reason", "cores", cores, "forget", self->forget);
}

void drv_shutdown_on_instance(drv_engine_t *engine, drv_instance_t *inst, drv_inst_event_t event, int code)
{
    (void)engine;
    drv_shutdown_t *self = inst->pipeline->shutdown_active;
    if (!self || event != DRV_INST_EV_EXITED) {
        return;
    }
    for (int i = 0; i < self->core_count; i++) {
        shutdown_core_t *c = &self->cores[i];
        if (!strcmp(c->instance, inst->id)) {
            c->state = code == 128 + 9 ? CORE_KILLED : CORE_EXITED;
            if (code > 128) {
                snprintf(c->detail, sizeof c->detail, "killed by signal %d", code - 128);
            } else {
                snprintf(c->detail, sizeof c->detail, "exited with code %d", code);
            }
            self->updated_at = drv_time_wall_ms();
        }
    }
}

//  A waiting request's answer: 200 once stopped, 504 if its time ran out first.
static void s_outcome(void *arg, bool finished, drv_admin_response_t *response)
{
    drv_shutdown_t *self = arg;
    response->status = finished && self->done ? 200 : 504;
    response->json = drv_shutdown_json(self);
}

void drv_shutdown_wait(drv_shutdown_t *self, drv_admin_request_t *request, int64_t timeout_ms)
{
    drv_waiters_add(self->waiters, request, timeout_ms);
    if (self->done) {
        drv_waiters_answer(self->waiters, true, s_outcome, self);
    }
}

//  Checks one pipeline's shutdown; true when the pipeline itself was removed.
static bool s_progress(drv_engine_t *engine, drv_group_t *group, drv_pipeline_t *p)
{
    drv_shutdown_t *self = p->shutdown_active;
    if (!self || zlistx_size(p->instances) > 0) {
        return false;
    }
    self->done = true;
    self->updated_at = drv_time_wall_ms();
    p->shutdown_active = NULL;
    p->stopping = false;
    p->running = false;
    p->shut_down = true;
    engine->state_dirty = true;
    drv_info("pipeline shutdown succeeded pipeline=%s id=%s", p->key, self->id);
    drv_events_publish(engine, "shutdown.succeeded", p->group, p->name, json_pack("{s:s}", "shutdown_id", self->id));
    drv_waiters_answer(self->waiters, true, s_outcome, self);
    if (self->forget) {
        drv_info("pipeline deleted pipeline=%s", p->key);
        drv_events_publish(engine, "pipeline.deleted", p->group, p->name, NULL);
        zhashx_delete(group->pipelines, p->name);
        return true;
    }
    return false;
}

int64_t drv_shutdown_tick(drv_engine_t *engine)
{
    int64_t next = -1;
    if (!engine->groups) {
        return -1;
    }
    for (drv_group_t *g = zhashx_first(engine->groups); g; g = zhashx_next(engine->groups)) {
        //  Deleting from the hash while walking it is not safe: collect first.
        drv_pipeline_t *list[256];
        int n = 0;
        for (drv_pipeline_t *p = zhashx_first(g->pipelines); p && n < 256; p = zhashx_next(g->pipelines)) {
            list[n++] = p;
        }
        for (int i = 0; i < n; i++) {
            drv_pipeline_t *p = list[i];
            for (drv_shutdown_t *s = zlistx_first(p->shutdowns); s; s = zlistx_next(p->shutdowns)) {
                if (drv_waiters_size(s->waiters) > 0 && !s->done) {
                    drv_waiters_answer(s->waiters, false, s_outcome, s); // those whose time is up
                    int64_t wait = drv_waiters_next(s->waiters);
                    next = wait >= 0 && (next < 0 || wait < next) ? wait : next;
                }
            }
            s_progress(engine, g, p);
        }
    }
    return next;
}

void drv_shutdown_abandon_waiters(drv_engine_t *engine)
{
    if (!engine->groups) {
        return;
    }
    for (drv_group_t *g = zhashx_first(engine->groups); g; g = zhashx_next(engine->groups)) {
        for (drv_pipeline_t *p = zhashx_first(g->pipelines); p; p = zhashx_next(g->pipelines)) {
            for (drv_shutdown_t *s = zlistx_first(p->shutdowns); s; s = zlistx_next(p->shutdowns)) {
                drv_waiters_abandon(s->waiters, "droverd is shutting down");
            }
        }
    }
}
