/*  drv_state — see drv_state.h. The file is JSON:
      {"version": 1, "groups": {"g": {"pipelines": {"p": {"spec": {...}, "running": true, "generation": 3,
                                                           "rollout"?: {rollout_id, action, state, target_generation,
                                                                        step}}}}}}
    "rollout" is a change under way when it was written (not applied: "spec"
    is what runs until it succeeds). */
#include "drv_state.h"
#include "drv_events.h"
#include "drv_rollout.h"

#include "drover/drv_file.h"
#include "drover/drv_log.h"
#include "drover/drv_problems.h"
#include "drover/drv_spec.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RETRY_FIRST_MS 500
#define RETRY_MAX_MS 30000

json_t *drv_state_doc(drv_engine_t *engine)
{
    json_t *groups = json_object();
    for (drv_group_t *g = zhashx_first(engine->groups); g; g = zhashx_next(engine->groups)) {
        json_t *pipelines = json_object();
        for (drv_pipeline_t *p = zhashx_first(g->pipelines); p; p = zhashx_next(g->pipelines)) {
            if (!p->running && !p->shut_down) {
                continue; // never came up: nothing was applied
            }
            json_t *entry =
                json_pack("{s:O, s:b, s:I, s:I, s:o}", "spec", p->spec, "running", p->running && !p->shutdown_active,
                          "generation", (json_int_t)p->generation, "next_generation", (json_int_t)p->next_generation,
                          "rollouts", drv_rollout_history_saved(p));
            if (p->source != DRV_SOURCE_CONFIG) { // config: whatever the file declares at the next start
                static const char *const sources[] = DRV_SOURCE_NAMES;
                json_object_set_new(entry, "source", json_string(sources[p->source]));
            }
            if (p->source == DRV_SOURCE_KUBERNETES) {
                json_object_set_new(entry, "owner", json_string(p->owner));
            }
            if (p->active && drv_rollout_action(p->active) != DRV_ACTION_CREATE) {
                //  Not applied yet: what a restart says it gave up (it restores the spec above).
                json_t *r = drv_rollout_json(p->active);
                json_int_t next = json_integer_value(json_object_get(r, "step"));
                json_t *step = json_array_get(json_object_get(r, "plan"), (size_t)next);
                json_object_set_new(entry, "rollout",
                                    json_pack("{s:O, s:O, s:O, s:O, s:I, s:s}", "rollout_id",
                                              json_object_get(r, "rollout_id"), "action", json_object_get(r, "action"),
                                              "state", json_object_get(r, "state"), "target_generation",
                                              json_object_get(r, "target_generation"), "step", next + 1, "op",
                                              step ? json_string_value(json_object_get(step, "op")) : "none"));
                json_decref(r);
            }
            json_object_set_new(pipelines, p->name, entry);
        }
        json_object_set_new(groups, g->name, json_pack("{s:o}", "pipelines", pipelines));
    }
    //  What the config file declared, as hashes: at start, a pipeline whose
    //  entry changed since is taken from the file (drv_reload.c).
    json_t *config = json_object();
    const char *group;
    json_t *declared;
    json_object_foreach(engine->config->groups, group, declared)
    {
        json_t *hashes = json_object();
        const char *name;
        json_t *spec;
        json_object_foreach(declared, name, spec)
        {
            char *hash = drv_spec_hash(spec);
            json_object_set_new(hashes, name, json_string(hash ? hash : ""));
            free(hash);
        }
        json_object_set_new(config, group, hashes);
    }
    json_t *doc = json_pack("{s:i, s:o, s:o, s:I}", "version", 1, "groups", groups, "config", config, "next_rollout_id",
                            (json_int_t)engine->next_rollout_id);
    if (engine->opamp_saved) {
        json_object_set(doc, "opamp", engine->opamp_saved);
    }
    return doc;
}

int drv_state_save(drv_engine_t *engine, char *why, size_t whylen)
{
    const char *path = engine->config->state_file;
    why[0] = 0;
    if (!path) {
        return 0;
    }
    json_t *doc = drv_state_doc(engine);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int rc = -1;
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
    int fd = text ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
    if (!text) {
        snprintf(why, whylen, "cannot serialise the state");
    } else if (fd < 0) {
        snprintf(why, whylen, "cannot create %s: %s", tmp, strerror(errno));
    }
    if (fd >= 0) {
        bool written = drv_file_write_all(fd, text, strlen(text)) == 0;
        int saved_errno = written ? 0 : errno;
        if (written && fsync(fd) != 0) {
            saved_errno = errno;
        }
        if (close(fd) != 0 && !saved_errno) {
            saved_errno = errno;
        }
        fd = -1;
        if (!saved_errno && rename(tmp, path) != 0) {
            saved_errno = errno;
        }
        if (!saved_errno) {
            char dir[1100];
            snprintf(dir, sizeof dir, "%s", path);
            int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) {
                fsync(dfd);
                close(dfd);
            }
            rc = 0;
        } else {
            snprintf(why, whylen, "cannot write %s: %s", path, strerror(saved_errno));
        }
    }
    free(text);
    if (rc != 0) {
        unlink(tmp);
    }
    json_decref(doc);
    return rc;
}

drv_state_saver_t *drv_state_saver_new(void)
{
    drv_state_saver_t *self = calloc(1, sizeof *self);
    if (!self) {
        abort();
    }
    return self;
}

void drv_state_saver_destroy(drv_state_saver_t **self_p)
{
    if (self_p && *self_p) {
        free(*self_p);
        *self_p = NULL;
    }
}

int64_t drv_state_tick(drv_engine_t *engine)
{
    if (!engine->state_dirty || engine->shutting_down) {
        return -1; // not while stopping: what to restore is the state before SIGTERM
    }
    int64_t now = drv_time_mono_ms();
    if (now < engine->state->retry_at_ms) {
        return engine->state->retry_at_ms - now;
    }
    char why[600];
    if (drv_state_save(engine, why, sizeof why) == 0) {
        engine->state_dirty = false;
        engine->state->retry_ms = 0;
        engine->state->retry_at_ms = 0;
        if (engine->state->error[0]) {
            drv_info("state file saved again path=%s", engine->config->state_file);
            drv_events_publish(engine, "state.saved", NULL, NULL,
                               json_pack("{s:s}", "path", engine->config->state_file));
            engine->state->error[0] = 0;
        }
        return -1;
    }
    //  Kept dirty and retried with backoff: a full disk must not make the
    //  engine forget what was applied.
    engine->state->failures++;
    engine->state->retry_ms = engine->state->retry_ms ? engine->state->retry_ms * 2 : RETRY_FIRST_MS;
    if (engine->state->retry_ms > RETRY_MAX_MS) {
        engine->state->retry_ms = RETRY_MAX_MS;
    }
    engine->state->retry_at_ms = now + engine->state->retry_ms;
    snprintf(engine->state->error, sizeof engine->state->error, "%s", why);
    drv_error("state file not saved, retrying in %lld ms path=%s reason=\"%s\"", (long long)engine->state->retry_ms,
              engine->config->state_file, why);
    drv_events_publish(engine, "state.save_failed", NULL, NULL,
                       json_pack("{s:s, s:s, s:I}", "path", engine->config->state_file, "reason", why, "retry_in_ms",
                                 (json_int_t)engine->state->retry_ms));
    return engine->state->retry_ms;
}

json_t *drv_state_load(drv_engine_t *engine, json_t **config, char *err, size_t errlen)
{
    const char *path = engine->config->state_file;
    err[0] = 0;
    *config = NULL;
    if (!path || access(path, F_OK) != 0) {
        return NULL;
    }
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc) {
        snprintf(err, errlen, "%s: %s", path, jerr.text);
        return NULL;
    }
    json_t *result = drv_state_parse(engine, doc, path, config, err, errlen);
    json_decref(doc);
    return result;
}

json_t *drv_state_parse(drv_engine_t *engine, const json_t *doc, const char *path, json_t **config, char *err,
                        size_t errlen)
{
    err[0] = 0;
    *config = NULL;
    if (json_integer_value(json_object_get(doc, "version")) != 1 || !json_is_object(json_object_get(doc, "groups"))) {
        snprintf(err, errlen, "%s: not a version 1 state file", path);
        return NULL;
    }
    json_t *result = json_object();
    if (json_is_object(json_object_get(doc, "config"))) {
        *config = json_incref(json_object_get(doc, "config"));
    }
    json_int_t ids = json_integer_value(json_object_get(doc, "next_rollout_id"));
    if (ids > engine->next_rollout_id) {
        engine->next_rollout_id = ids; // rollout ids are unique for the engine's life, restarts included
    }
    if (json_is_object(json_object_get(doc, "opamp"))) {
        json_decref(engine->opamp_saved);
        engine->opamp_saved = json_incref(json_object_get(doc, "opamp"));
    }
    size_t count = 0;
    const char *group;
    json_t *g;
    json_object_foreach(json_object_get(doc, "groups"), group, g)
    {
        if (!drv_spec_valid_id(group)) {
            drv_error("state file: group skipped path=%s reason=\"group name must match [a-z0-9_-]{1,63}\"", path);
            continue;
        }
        json_t *pipelines = json_object();
        json_object_set_new(result, group, pipelines);
        const char *name;
        json_t *entry;
        json_object_foreach(json_object_get(g, "pipelines"), name, entry)
        {
            if (!drv_spec_valid_id(name)) {
                drv_error("state file: pipeline skipped path=%s group=%s reason=\"pipeline name must match "
                          "[a-z0-9_-]{1,63}\"",
                          path, group);
                continue;
            }
            drv_problems_t *problems = drv_problems_new();
            char prefix[200];
            snprintf(prefix, sizeof prefix, "groups.%s.pipelines.%s.spec", group, name);
            json_t *spec = drv_spec_normalize(json_object_get(entry, "spec"), &engine->spec_env, prefix, problems);
            if (spec && ++count > (size_t)engine->config->max_pipelines) {
                drv_error("state file: pipeline skipped path=%s pipeline=%s:%s reason=\"more than %d pipelines "
                          "(engine.limits.max_pipelines)\"",
                          path, group, name, engine->config->max_pipelines);
                json_decref(spec);
            } else if (!spec) {
                drv_error("state file: pipeline skipped path=%s field=%s reason=\"%s\"", path,
                          drv_problems_path(problems, 0), drv_problems_message(problems, 0));
            } else {
                json_t *restored = json_pack("{s:o, s:b, s:I}", "spec", spec, "running",
                                             json_is_true(json_object_get(entry, "running")), "generation",
                                             (json_int_t)json_integer_value(json_object_get(entry, "generation")));
                if (json_is_object(json_object_get(entry, "rollout"))) {
                    json_object_set(restored, "rollout", json_object_get(entry, "rollout"));
                }
                if (json_is_string(json_object_get(entry, "source"))) {
                    json_object_set(restored, "source", json_object_get(entry, "source"));
                }
                if (json_is_string(json_object_get(entry, "owner"))) {
                    json_object_set(restored, "owner", json_object_get(entry, "owner"));
                }
                if (json_is_integer(json_object_get(entry, "next_generation"))) {
                    json_object_set(restored, "next_generation", json_object_get(entry, "next_generation"));
                }
                if (json_is_array(json_object_get(entry, "rollouts"))) {
                    json_object_set(restored, "rollouts", json_object_get(entry, "rollouts"));
                }
                json_object_set_new(pipelines, name, restored);
            }
            drv_problems_destroy(&problems);
        }
    }
    return result;
}
