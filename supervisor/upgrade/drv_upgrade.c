/*  drv_upgrade — see drv_upgrade.h.

    Like nginx's binary upgrade, but in place: nginx's USR2 starts a second
    master beside the first; droverd must keep its PID (PID 1 of a
    container, systemd's main PID), so it executes the new binary itself.
    Before that, the new binary is run once as a child (`droverd
    --upgrade-check`): it loads the config, checks that drover-worker and
    drover-broker beside it report its version, and says which handoff it
    reads. Only when it says yes does droverd execute it; an answer of no, a
    crash or silence leaves the running droverd as it was. */
#include "drv_upgrade.h"
#include "drv_watched.h"
#include "drv_handoff.h"
#include "drv_lifecycle.h"
#include "drv_events.h"
#include "drv_notify.h"
#include "drv_operations.h"
#include "drv_registry.h"
#include "drv_restore.h"
#include "drv_rollout.h"
#include "drv_state.h"
#include "drv_zygote_link.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"
#include "drover/drv_version.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK_TIMEOUT_MS 10000 // the new droverd's check: it loads the config, runs two --version
#define HEARD_WAIT_MS 5000     // after the execution: how long the adopted processes have to reconnect
#define CHECK_OUTPUT_MAX 2048

struct drv_upgrade_t {
    char by[32];
    char from_version[64];
    char to_version[64];
    int64_t started_at, finished_at; // wall ms
    char error[1200];
    drv_watched_t check;       // droverd --upgrade-check, its stdout and stderr
    int64_t heard_deadline_ms; // mono, after the execution (0: the rollouts were started)
    json_t *pipelines;         // [{group, pipeline, rollout_id, state}]
    json_t *config;            // the config file's hashes when the handed state was applied (or NULL)
};

static bool s_under_way(const drv_engine_t *engine)
{
    return engine->upgrade_state == DRV_UPGRADE_CHECKING || engine->upgrade_state == DRV_UPGRADE_ROLLING;
}

const char *drv_upgrade_state_name(drv_upgrade_state_t state)
{
    static const char *names[] = {"none", "checking", "rolling", "succeeded", "failed"};
    return state <= DRV_UPGRADE_FAILED ? names[state] : "?";
}

drv_upgrade_t *drv_upgrade_new(void)
{
    drv_upgrade_t *self = calloc(1, sizeof *self);
    if (!self) {
        abort();
    }
    self->check.fd = -1;
    self->pipelines = json_array();
    return self;
}

void drv_upgrade_destroy(drv_upgrade_t **self_p)
{
    if (self_p && *self_p) {
        drv_watched_release(&(*self_p)->check);
        json_decref((*self_p)->pipelines);
        json_decref((*self_p)->config);
        free(*self_p);
        *self_p = NULL;
    }
}

static void s_finish(drv_engine_t *engine, drv_upgrade_state_t state, const char *error)
{
    drv_upgrade_t *self = engine->upgrade;
    engine->upgrade_state = state;
    self->finished_at = drv_time_wall_ms();
    if (error) {
        snprintf(self->error, sizeof self->error, "%s", error);
    }
    if (state == DRV_UPGRADE_SUCCEEDED) {
        drv_info("upgraded from=%s to=%s pipelines=%zu", self->from_version, self->to_version,
                 json_array_size(self->pipelines));
        drv_events_publish(engine, "engine.upgraded", NULL, NULL,
                           json_pack("{s:s, s:s, s:s, s:O}", "from_version", self->from_version, "to_version",
                                     self->to_version, "by", self->by, "pipelines", self->pipelines));
    } else {
        drv_error("upgrade failed: %s", self->error);
        drv_events_publish(engine, "engine.upgrade_failed", NULL, NULL,
                           json_pack("{s:s, s:s, s:s, s:s}", "from_version", self->from_version, "to_version",
                                     self->to_version[0] ? self->to_version : "", "reason", self->error, "by",
                                     self->by));
    }
}

//  Why no upgrade may start now, or NULL.
static bool s_in_the_way(drv_engine_t *engine, char *why, size_t whylen)
{
    if (engine->shutting_down) {
        snprintf(why, whylen, "droverd is shutting down");
        return true;
    }
    if (s_under_way(engine)) {
        snprintf(why, whylen, "an upgrade is already in progress (%s); try again when it ends",
                 drv_upgrade_state_name(engine->upgrade_state));
        return true;
    }
    size_t count = 0;
    drv_pipeline_t **pipelines = drv_registry_pipelines(engine, &count);
    bool busy = false;
    for (size_t i = 0; i < count && !busy; i++) {
        drv_pipeline_t *p = pipelines[i];
        const char *id = p->active ? drv_rollout_id(p->active) : NULL;
        if (id || p->shutdown_active) {
            snprintf(why, whylen, "%s is in progress on %s; upgrade when it ends", id ? id : "a shutdown", p->key);
            busy = true;
        }
    }
    free(pipelines);
    return busy;
}

//  Runs `droverd --upgrade-check -c CONFIG` from the path droverd started
//  from, its output (stdout and stderr) into a pipe the loop reads.
static int s_start_check(drv_engine_t *engine, char *why, size_t whylen)
{
    drv_upgrade_t *self = engine->upgrade;
    drv_watched_release(&self->check); // the last one's
    char format[16];
    snprintf(format, sizeof format, "%d", DRV_HANDOFF_FORMAT);
    char *argv[] = {engine->exe_path, "--upgrade-check", format, "-c", (char *)engine->config->path, NULL};
    if (drv_watched_start(&self->check, engine->exe_path, argv, -1, true, CHECK_OUTPUT_MAX, CHECK_TIMEOUT_MS) != 0) {
        snprintf(why, whylen, "cannot run the new droverd %s: %s", engine->exe_path, strerror(errno));
        return -1;
    }
    return 0;
}

int drv_upgrade_request(drv_engine_t *engine, const char *by, char *why, size_t whylen)
{
    if (s_in_the_way(engine, why, whylen)) {
        return -1;
    }
    drv_upgrade_t *self = engine->upgrade;
    json_array_clear(self->pipelines);
    self->error[0] = 0;
    self->to_version[0] = 0;
    snprintf(self->by, sizeof self->by, "%s", by);
    snprintf(self->from_version, sizeof self->from_version, "%s", drv_version());
    self->started_at = drv_time_wall_ms();
    self->finished_at = 0;
    engine->upgrade_state = DRV_UPGRADE_CHECKING;
    drv_info("upgrade asked by=%s exe=%s: checking the new droverd", by, engine->exe_path);
    drv_events_publish(
        engine, "engine.upgrading", NULL, NULL,
        json_pack("{s:s, s:s, s:s}", "by", by, "from_version", self->from_version, "exe", engine->exe_path));
    char cannot[700];
    if (s_start_check(engine, cannot, sizeof cannot) != 0) {
        s_finish(engine, DRV_UPGRADE_FAILED, cannot); // a missing file fails like any other refusal
    }
    return 0;
}

int drv_upgrade_fd(drv_engine_t *engine)
{
    return engine->upgrade ? engine->upgrade->check.fd : -1;
}

void drv_upgrade_on_readable(drv_engine_t *engine)
{
    drv_watched_read(&engine->upgrade->check);
}

bool drv_upgrade_on_exit(drv_engine_t *engine, pid_t pid, int status)
{
    return engine->upgrade && drv_watched_reaped(&engine->upgrade->check, pid, status);
}

//  The check's verdict once it ended: 1 yes (to_version set), 0 no (error
//  set), -1 not yet.
static int s_check_verdict(drv_engine_t *engine)
{
    drv_upgrade_t *self = engine->upgrade;
    drv_watched_t *check = &self->check;
    if (drv_watched_expire(check, drv_time_mono_ms())) {
        snprintf(self->error, sizeof self->error, "the new droverd (%s --upgrade-check) did not answer within %d s",
                 engine->exe_path, CHECK_TIMEOUT_MS / 1000);
        return 0;
    }
    if (!drv_watched_over(check)) {
        return -1;
    }
    char *out = check->out;
    int format = 0;
    char version[64] = "";
    if (WIFEXITED(check->status) && WEXITSTATUS(check->status) == 0 &&
        sscanf(out, "droverd %63s handoff=%d", version, &format) == 2 && format == DRV_HANDOFF_FORMAT) {
        snprintf(self->to_version, sizeof self->to_version, "%s", version);
        return 1;
    }
    while (check->len > 0 && (out[check->len - 1] == '\n' || out[check->len - 1] == ' ')) {
        out[--check->len] = 0;
    }
    for (char *c = out; *c; c++) {
        *c = *c == '\n' ? ';' : *c;
    }
    if (WIFSIGNALED(check->status)) {
        snprintf(self->error, sizeof self->error, "the new droverd (%s) was killed by signal %d during its check%s%s",
                 engine->exe_path, WTERMSIG(check->status), out[0] ? ": " : "", out);
    } else {
        snprintf(self->error, sizeof self->error, "the new droverd (%s) refused to take over (exit %d): %s",
                 engine->exe_path, WIFEXITED(check->status) ? WEXITSTATUS(check->status) : -1,
                 out[0] ? out : "it said nothing");
    }
    return 0;
}

//  The check said yes: hand everything over and become the new droverd.
//  Returns only when the execution failed (the old one carries on).
static void s_execute(drv_engine_t *engine)
{
    drv_upgrade_t *self = engine->upgrade;
    char why[600];
    if (drv_state_save(engine, why, sizeof why) != 0) {
        drv_warn("upgrade: state file not saved before the execution (%s); the handoff carries it", why);
    }
    json_t *record = json_pack("{s:s, s:s, s:s, s:I}", "by", self->by, "from_version", self->from_version, "to_version",
                               self->to_version, "started_at", (json_int_t)self->started_at);
    drv_zygote_stop(engine); // the new droverd starts its own, from the new binary
    drv_notify_reloading(engine->notify, engine);
    drv_info("upgrade: executing %s (version %s) pid=%d", engine->exe_path, self->to_version, getpid());
    if (drv_handoff_exec(engine, record, why, sizeof why) != 0) {
        char error[700];
        snprintf(error, sizeof error, "executing %s failed: %s; this droverd carries on", engine->exe_path, why);
        s_finish(engine, DRV_UPGRADE_FAILED, error);
    }
    json_decref(record);
}

//  Every running pipeline is replaced by the new binaries, one rollout each.
static void s_start_rollouts(drv_engine_t *engine)
{
    drv_upgrade_t *self = engine->upgrade;
    size_t count = 0;
    drv_pipeline_t **pipelines = drv_registry_pipelines(engine, &count);
    for (size_t i = 0; i < count; i++) {
        drv_pipeline_t *p = pipelines[i];
        if (!p->running) {
            continue;
        }
        //  As a restart would: an entry of the config file changed since it was applied is taken now.
        json_t *changed =
            drv_source_kept(p->source) ? NULL : drv_restore_changed_in_file(engine, self->config, p->group, p->name);
        json_t *spec = json_incref(changed); // normalized when the file was loaded
        if (changed) {
            drv_info("upgrade: pipeline=%s takes its changed entry in the config file", p->key);
        }
        drv_change_t change = {.group = p->group,
                               .name = p->name,
                               .spec = spec ? spec : p->spec,
                               .source = spec ? DRV_SOURCE_CONFIG : p->source,
                               .opts = {.cause = "upgrade", .renew = true}};
        char why[600] = "";
        drv_rollout_t *rollout = NULL;
        drv_change_outcome_t outcome = drv_operations_apply(engine, &change, NULL, why, sizeof why, &rollout);
        json_array_append_new(self->pipelines,
                              json_pack("{s:s, s:s, s:s, s:s}", "group", p->group, "pipeline", p->name, "rollout_id",
                                        outcome == DRV_CHANGE_STARTED ? drv_rollout_id(rollout) : "", "state",
                                        outcome == DRV_CHANGE_STARTED ? "running" : "failed"));
        if (outcome != DRV_CHANGE_STARTED) {
            drv_error("upgrade: pipeline=%s not rolled: %s", p->key, why);
        }
        json_decref(spec);
    }
    free(pipelines);
}

//  Follows the rollouts; the upgrade ends with the last of them.
static void s_follow(drv_engine_t *engine)
{
    drv_upgrade_t *self = engine->upgrade;
    bool done = true, failed = false;
    char error[1000] = "";
    size_t i;
    json_t *entry;
    json_array_foreach(self->pipelines, i, entry)
    {
        const char *state = json_string_value(json_object_get(entry, "state"));
        if (!strcmp(state, "running")) {
            drv_pipeline_t *p = drv_registry_pipeline(engine, json_string_value(json_object_get(entry, "group")),
                                                      json_string_value(json_object_get(entry, "pipeline")));
            drv_rollout_t *r = p ? drv_rollout_find(p, json_string_value(json_object_get(entry, "rollout_id"))) : NULL;
            if (r && !drv_rollout_finished(r)) {
                done = false;
                continue;
            }
            state = r ? drv_rollout_state_name(drv_rollout_state(r)) : "failed";
            json_object_set_new(entry, "state", json_string(state));
        }
        if (strcmp(state, "succeeded") != 0) {
            failed = true;
            size_t len = strlen(error);
            snprintf(error + len, sizeof error - len, "%s%s/%s %s", len ? "; " : "",
                     json_string_value(json_object_get(entry, "group")),
                     json_string_value(json_object_get(entry, "pipeline")), state);
        }
    }
    if (done) {
        char why[1100];
        snprintf(why, sizeof why, "rollouts did not succeed: %s (those pipelines run the old binaries)", error);
        s_finish(engine, failed ? DRV_UPGRADE_FAILED : DRV_UPGRADE_SUCCEEDED, failed ? why : NULL);
    }
}

//  Whether every adopted instance's control connection is back: it spoke,
//  or a message to it could be sent (its taps, which it keeps as they are).
static bool s_all_heard(drv_engine_t *engine)
{
    size_t count = 0;
    drv_pipeline_t **pipelines = drv_registry_pipelines(engine, &count);
    bool heard = true;
    for (size_t i = 0; i < count && heard; i++) {
        zlistx_t *list = pipelines[i]->instances;
        for (drv_instance_t *inst = zlistx_first(list); inst && heard; inst = zlistx_next(list)) {
            inst->heard = inst->heard || (inst->adopted && inst->pid > 0 && drv_lifecycle_tell_taps(engine, inst));
            heard = !inst->adopted || inst->heard || inst->pid <= 0;
        }
    }
    free(pipelines);
    return heard;
}

int64_t drv_upgrade_tick(drv_engine_t *engine)
{
    drv_upgrade_t *self = engine->upgrade;
    if (!self || !s_under_way(engine)) {
        return -1;
    }
    if (engine->shutting_down) {
        s_finish(engine, DRV_UPGRADE_FAILED, "droverd is shutting down");
        return -1;
    }
    int64_t now = drv_time_mono_ms();
    if (engine->upgrade_state == DRV_UPGRADE_CHECKING) {
        int verdict = s_check_verdict(engine);
        if (verdict == 1) {
            s_execute(engine); // returns only when it failed
        } else if (verdict == 0) {
            s_finish(engine, DRV_UPGRADE_FAILED, NULL);
        }
        return verdict < 0 ? drv_watched_left_ms(&self->check, now) : -1;
    }
    if (self->heard_deadline_ms) {
        if (!s_all_heard(engine) && now < self->heard_deadline_ms) {
            return 20; // reconnecting: their heartbeats come at once
        }
        self->heard_deadline_ms = 0;
        s_start_rollouts(engine);
    }
    s_follow(engine);
    return s_under_way(engine) ? 100 : -1;
}

void drv_upgrade_resume(drv_engine_t *engine)
{
    json_t *record = drv_handoff_adopt(engine);
    if (!record) {
        return;
    }
    drv_upgrade_t *self = engine->upgrade;
    snprintf(self->by, sizeof self->by, "%s", json_string_value(json_object_get(record, "by")) ?: "?");
    snprintf(self->from_version, sizeof self->from_version, "%s",
             json_string_value(json_object_get(record, "from_version")) ?: "?");
    snprintf(self->to_version, sizeof self->to_version, "%s", drv_version());
    self->started_at = json_integer_value(json_object_get(record, "started_at"));
    json_decref(self->config);
    self->config = json_incref(json_object_get(record, "config"));
    engine->upgrade_state = DRV_UPGRADE_ROLLING;
    self->heard_deadline_ms = drv_time_mono_ms() + HEARD_WAIT_MS;
    json_decref(record);
    drv_info("upgrade: took over pid=%d from_version=%s to_version=%s", getpid(), self->from_version, self->to_version);
}

json_t *drv_upgrade_json(drv_engine_t *engine)
{
    drv_upgrade_t *self = engine->upgrade;
    if (!self || engine->upgrade_state == DRV_UPGRADE_NONE) {
        return json_pack("{s:s}", "state", "none");
    }
    return json_pack("{s:s, s:s, s:s, s:s?, s:I, s:o, s:s?, s:O}", "state",
                     drv_upgrade_state_name(engine->upgrade_state), "by", self->by, "from_version", self->from_version,
                     "to_version", self->to_version[0] ? self->to_version : NULL, "started_at",
                     (json_int_t)self->started_at, "finished_at",
                     self->finished_at ? json_integer(self->finished_at) : json_null(), "error",
                     self->error[0] ? self->error : NULL, "pipelines", self->pipelines);
}

const char *drv_upgrade_older_version(drv_engine_t *engine)
{
    drv_upgrade_t *self = engine->upgrade;
    return self && engine->upgrade_state >= DRV_UPGRADE_ROLLING && self->from_version[0] ? self->from_version
                                                                                         : drv_version();
}
