/*  droverctl upgrade and version — droverd replaced in place by the
    binaries on disk (POST /api/v1/engine/upgrade), followed to its end;
    the versions of the client, the engine and each of its processes. */
#include "drv_ctl_commands.h"

#include "drover/drv_version.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define UPGRADE_POLL_MS 200
#define UPGRADE_WAIT_MS (30 * 60 * 1000) // each pipeline's rollout has its own step deadlines

static const char *s_str(const json_t *doc, const char *key)
{
    return json_string_value(json_object_get(doc, key)) ?: "";
}

//  Prints what changed since the last look: the state, and each pipeline's rollout once it ended.
static void s_progress(const json_t *upgrade, char *last_state, size_t last_len, size_t *pipelines_said)
{
    const char *state = s_str(upgrade, "state");
    if (strcmp(state, last_state) != 0) {
        if (!strcmp(state, "rolling")) {
            printf("droverd %s took over from %s; rolling every pipeline onto the new binaries\n",
                   s_str(upgrade, "to_version"), s_str(upgrade, "from_version"));
        } else if (!strcmp(state, "checking")) {
            printf("upgrade: checking the binaries on disk\n");
        }
        snprintf(last_state, last_len, "%s", state);
    }
    json_t *pipelines = json_object_get(upgrade, "pipelines");
    for (size_t i = *pipelines_said; i < json_array_size(pipelines); i++) {
        json_t *p = json_array_get(pipelines, i);
        if (!strcmp(s_str(p, "state"), "running")) {
            break; // said once it ends, in order
        }
        printf("  %s/%s  %s  %s\n", s_str(p, "group"), s_str(p, "pipeline"), s_str(p, "rollout_id"), s_str(p, "state"));
        *pipelines_said = i + 1;
    }
    fflush(stdout);
}

int drv_ctl_upgrade(drv_ctl_t *ctl, int argc, char **argv)
{
    bool no_wait = false;
    for (int i = 1; i < argc; i++) {
        no_wait |= !strcmp(argv[i], "--no-wait");
    }
    json_t *body;
    json_t *request = json_object();
    int rc = drv_ctl_call(ctl, "POST", "/api/v1/engine/upgrade", NULL, request, &body);
    json_decref(request);
    if (rc) {
        return rc;
    }
    if (no_wait || ctl->json) {
        return drv_ctl_print_json(ctl, body);
    }
    char state[32] = "";
    size_t said = 0;
    s_progress(body, state, sizeof state, &said);
    json_decref(body);
    //  While droverd executes its new binary, the admin socket does not
    //  answer for a moment: a request that gets no answer is asked again.
    for (int waited = 0; waited < UPGRADE_WAIT_MS; waited += UPGRADE_POLL_MS) {
        usleep(UPGRADE_POLL_MS * 1000); // a client polling its server: pacing, not synchronisation
        char err[300];
        json_t *upgrade = NULL;
        drv_ctl_options_t options = ctl->options;
        options.timeout_ms = 2000;
        int status = drv_ctl_request(&options, "GET", "/api/v1/engine/upgrade", NULL, NULL, &upgrade, err, sizeof err);
        if (status != 200) {
            json_decref(upgrade);
            continue;
        }
        s_progress(upgrade, state, sizeof state, &said);
        bool succeeded = !strcmp(state, "succeeded");
        if (succeeded || !strcmp(state, "failed")) {
            if (succeeded) {
                printf("upgraded: droverd %s -> %s\n", s_str(upgrade, "from_version"), s_str(upgrade, "to_version"));
            } else {
                fprintf(stderr, "droverctl: upgrade failed: %s\n", s_str(upgrade, "error"));
            }
            json_decref(upgrade);
            return succeeded ? DRV_CTL_OK : DRV_CTL_SERVER_ERROR;
        }
        json_decref(upgrade);
    }
    fprintf(stderr, "droverctl: the upgrade did not end within %d minutes\n", UPGRADE_WAIT_MS / 60000);
    return DRV_CTL_UNREACHABLE;
}

int drv_ctl_version(drv_ctl_t *ctl, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    json_t *body;
    printf("droverctl %s\n", drv_version());
    int rc = drv_ctl_call(ctl, "GET", "/api/v1/engine", NULL, NULL, &body);
    if (rc) {
        return rc;
    }
    printf("droverd   %s (pid %lld, started %s, config %s)\n", s_str(body, "version"),
           (long long)json_integer_value(json_object_get(body, "pid")), s_str(body, "started_at"),
           s_str(body, "config"));
    json_t *upgrade = json_object_get(body, "upgrade");
    if (strcmp(s_str(upgrade, "state"), "none") != 0) {
        printf("upgrade   %s: %s -> %s%s%s\n", s_str(upgrade, "state"), s_str(upgrade, "from_version"),
               s_str(upgrade, "to_version"), s_str(upgrade, "error")[0] ? ": " : "", s_str(upgrade, "error"));
    }
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(body, "processes"), i, p)
    {
        if (strcmp(s_str(p, "role"), "droverd") != 0) {
            printf("  %-8s %-40s pid %-7lld %s\n", s_str(p, "role"), s_str(p, "id")[0] ? s_str(p, "id") : "-",
                   (long long)json_integer_value(json_object_get(p, "pid")), s_str(p, "version"));
        }
    }
    json_decref(body);
    return DRV_CTL_OK;
}
