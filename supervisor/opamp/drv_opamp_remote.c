/*  drv_opamp_remote — a remote config from the OpAMP server: its
    drover.yaml entry (groups:, as in the config file) checked under the
    running engine's settings and applied as a reload is
    (drv_reload_apply_groups: each pipeline's difference a health-gated
    rollout, with its canary policy, rolled back when it fails). Reported
    APPLYING while those rollouts run, then APPLIED, or FAILED with the
    reasons: the validation's problems (nothing touched), a pipeline
    admission refused, a rollout that failed and rolled back (the old
    generation serves). The last config's hash and outcome are kept in the
    state file, so a restart neither applies it again nor forgets it. */
#include "drv_opamp_internal.h"
#include "drv_registry.h"
#include "drv_reload.h"
#include "drv_rollout.h"

#include "drover/drv_config.h"
#include "drover/drv_log.h"
#include "drover/drv_utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_names[] = {"UNSET", "APPLIED", "APPLYING", "FAILED"};

//  The outcome, kept (state file) and to be reported.
static void s_status(drv_opamp_t *self, int status, const char *error)
{
    self->remote.status = status;
    drv_utf8_snprintf(self->remote.error, sizeof self->remote.error, "%s", error ? error : "");
    self->remote.version++;
    json_decref(self->engine->opamp_saved);
    self->engine->opamp_saved = json_pack("{s:s, s:s, s:s}", "remote_config_hash", self->remote.hash, "status",
                                          s_names[status], "error", self->remote.error);
    self->engine->state_dirty = true;
    self->next_ms = 0; // tell the server at once
    if (status == DRV_OPAMP_APPLIED) {
        drv_info("opamp: remote config applied hash=%s", self->remote.hash);
    } else if (status == DRV_OPAMP_FAILED) {
        drv_warn("opamp: remote config failed hash=%s reason=\"%s\"", self->remote.hash, self->remote.error);
    }
}

//  Appends "; text" (or text) to the error being made, as far as it fits.
static void s_add(char *error, size_t size, const char *text)
{
    size_t at = strlen(error);
    if (at + 3 < size) {
        drv_utf8_snprintf(error + at, size - at, "%s%s", at ? "; " : "", text);
    }
}

void drv_opamp_remote_restore(drv_opamp_t *self)
{
    json_t *saved = self->engine->opamp_saved;
    const char *hash = json_string_value(json_object_get(saved, "remote_config_hash"));
    const char *status = json_string_value(json_object_get(saved, "status"));
    if (!hash || !status) {
        return;
    }
    drv_utf8_snprintf(self->remote.hash, sizeof self->remote.hash, "%s", hash);
    for (int i = 1; i < 4; i++) {
        if (!strcmp(status, s_names[i])) {
            self->remote.status = i;
        }
    }
    drv_utf8_snprintf(self->remote.error, sizeof self->remote.error, "%s",
                      json_string_value(json_object_get(saved, "error")) ?: "");
    if (self->remote.status == DRV_OPAMP_APPLYING) {
        //  droverd stopped while its rollouts ran: they were rolled back at start.
        s_status(self, DRV_OPAMP_FAILED,
                 "droverd restarted while it was being applied; its rollouts were rolled "
                 "back (send it again to retry)");
    }
    self->remote.version++;
}

//  The hash the server gave, in hex; or one of the body when it gave none.
static void s_hash(const Opamp__Proto__AgentRemoteConfig *config, const ProtobufCBinaryData *body, char *out,
                   size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    if (config->config_hash.len > 0) {
        size_t n = 0;
        for (size_t i = 0; i < config->config_hash.len && n + 3 < outlen; i++) {
            out[n++] = hex[config->config_hash.data[i] >> 4];
            out[n++] = hex[config->config_hash.data[i] & 15];
        }
        out[n] = 0;
        return;
    }
    uint64_t h = 14695981039346656037ULL; // FNV-1a
    for (size_t i = 0; body && i < body->len; i++) {
        h = (h ^ body->data[i]) * 1099511628211ULL;
    }
    drv_utf8_snprintf(out, outlen, "body-%016llx", (unsigned long long)h);
}

void drv_opamp_remote_offer(drv_opamp_t *self, const Opamp__Proto__AgentRemoteConfig *config)
{
    const Opamp__Proto__AgentConfigFile *file = NULL;
    char names[300] = "";
    for (size_t i = 0; config->config && i < config->config->n_config_map; i++) {
        const Opamp__Proto__AgentConfigMap__ConfigMapEntry *e = config->config->config_map[i];
        if (e->key && !strcmp(e->key, "drover.yaml")) {
            file = e->value;
        }
        s_add(names, sizeof names, e->key ? e->key : "");
    }
    char hash[DRV_OPAMP_HASH_MAX];
    s_hash(config, file ? &file->body : NULL, hash, sizeof hash);
    if (!strcmp(hash, self->remote.hash)) {
        return; // this one was applied (or refused) already: never twice
    }
    drv_utf8_snprintf(self->remote.hash, sizeof self->remote.hash, "%s", hash);
    json_decref(self->remote.tracking);
    self->remote.tracking = NULL;
    char error[sizeof self->remote.error] = "";
    if (!file) {
        drv_utf8_snprintf(error, sizeof error, "the remote config has no drover.yaml entry (it has: %s)",
                          names[0] ? names : "nothing");
        s_status(self, DRV_OPAMP_FAILED, error);
        return;
    }
    drv_problems_t *problems = drv_problems_new();
    json_t *groups = drv_config_groups_parse(self->engine->config, (const char *)file->body.data, file->body.len,
                                             &self->engine->cpus, problems);
    if (!groups) {
        size_t count = drv_problems_count(problems);
        drv_utf8_snprintf(error, sizeof error, "drover.yaml is not valid (%zu problem%s), nothing was changed", count,
                          count == 1 ? "" : "s");
        for (size_t i = 0; i < count && i < 20; i++) {
            char line[600];
            drv_utf8_snprintf(line, sizeof line, "%s: %s",
                              drv_problems_path(problems, i)[0] ? drv_problems_path(problems, i) : "(document)",
                              drv_problems_message(problems, i));
            s_add(error, sizeof error, line);
        }
        drv_problems_destroy(&problems);
        s_status(self, DRV_OPAMP_FAILED, error);
        return;
    }
    drv_problems_destroy(&problems);
    drv_info("opamp: applying remote config hash=%s", hash);
    json_t *result = drv_reload_apply_groups(self->engine, groups, self->remote.groups, DRV_SOURCE_OPAMP);
    json_decref(self->remote.groups);
    self->remote.groups = groups; // what the next one is told apart from
    size_t i;
    json_t *skip;
    json_array_foreach(json_object_get(result, "skipped"), i, skip)
    {
        char line[600];
        drv_utf8_snprintf(line, sizeof line, "%s:%s not applied: %s", json_string_value(json_object_get(skip, "group")),
                          json_string_value(json_object_get(skip, "pipeline")),
                          json_string_value(json_object_get(skip, "reason")));
        s_add(self->remote.skipped, sizeof self->remote.skipped, line);
    }
    self->remote.tracking = json_incref(json_object_get(result, "applied"));
    json_decref(result);
    s_status(self, DRV_OPAMP_APPLYING, NULL);
}

void drv_opamp_remote_tick(drv_opamp_t *self)
{
    if (self->remote.status != DRV_OPAMP_APPLYING || !self->remote.tracking ||
        self->sent.remote != self->remote.version) {
        return; // the server hears APPLYING first, however soon the rollouts end
    }
    char error[sizeof self->remote.error];
    drv_utf8_snprintf(error, sizeof error, "%s", self->remote.skipped);
    size_t i;
    json_t *entry;
    json_array_foreach(self->remote.tracking, i, entry)
    {
        const char *group = json_string_value(json_object_get(entry, "group"));
        const char *name = json_string_value(json_object_get(entry, "pipeline"));
        const char *id = json_string_value(json_object_get(entry, "rollout_id"));
        drv_pipeline_t *p = drv_registry_pipeline(self->engine, group, name);
        drv_rollout_t *rollout = p && p->active && id && !strcmp(drv_rollout_id(p->active), id) ? p->active
                                 : p && id ? drv_rollout_find(p, id)
                                           : NULL;
        if (rollout && !drv_rollout_finished(rollout)) {
            return; // still under way
        }
        if (rollout && drv_rollout_state(rollout) != DRV_RO_SUCCEEDED) {
            char line[800];
            drv_utf8_snprintf(line, sizeof line, "%s:%s: %s failed: %s", group, name, id, drv_rollout_failure(rollout));
            s_add(error, sizeof error, line);
        }
    }
    json_decref(self->remote.tracking);
    self->remote.tracking = NULL;
    self->remote.skipped[0] = 0;
    s_status(self, error[0] ? DRV_OPAMP_FAILED : DRV_OPAMP_APPLIED, error);
}

bool drv_opamp_remote_report(drv_opamp_t *self, Opamp__Proto__RemoteConfigStatus *status, uint8_t *hash, size_t hashlen)
{
    if (self->remote.status == DRV_OPAMP_UNSET) {
        return false;
    }
    opamp__proto__remote_config_status__init(status);
    //  The hash as the server gave it: hex back to bytes (one made of the body goes as its text).
    size_t n = 0;
    const char *h = self->remote.hash;
    if (strncmp(h, "body-", 5) != 0) {
        for (; h[2 * n] && h[2 * n + 1] && n < hashlen; n++) {
            char byte[3] = {h[2 * n], h[2 * n + 1], 0};
            hash[n] = (uint8_t)strtoul(byte, NULL, 16);
        }
    } else {
        n = strlen(h) < hashlen ? strlen(h) : hashlen;
        memcpy(hash, h, n);
    }
    status->last_remote_config_hash.data = hash;
    status->last_remote_config_hash.len = n;
    status->status = (uint32_t)self->remote.status;
    status->error_message = self->remote.error;
    return true;
}

const char *drv_opamp_remote_status_name(int status)
{
    return s_names[status >= 0 && status < 4 ? status : 0];
}
