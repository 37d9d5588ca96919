/*  drv_ctl_names — how droverctl names pipelines, everywhere: GROUP/PIPELINE
    (as the API's paths), GROUP:PIPELINE (as status and the logs print
    them), or a bare PIPELINE in group default; and, when the engine has no
    such pipeline, the closest ones it has. */
#include "drv_ctl_commands.h"

#include "drover/drv_suggest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUGGESTIONS 3

int drv_ctl_split_target(const char *arg, char *group, char *pipeline, size_t size)
{
    const char *cut = arg ? strpbrk(arg, "/:") : NULL;
    bool ok = arg && arg[0] && (!cut || (cut != arg && cut[1] && !strpbrk(cut + 1, "/:")));
    if (!ok) {
        fprintf(stderr,
                "droverctl: expected a pipeline as GROUP/PIPELINE, GROUP:PIPELINE or PIPELINE "
                "(group default), "
                "got \"%s\"\n",
                arg ? arg : "");
        return -1;
    }
    if (!cut) {
        snprintf(group, size, "default");
        snprintf(pipeline, size, "%s", arg);
        return 0;
    }
    snprintf(group, size, "%.*s", (int)(cut - arg), arg);
    snprintf(pipeline, size, "%s", cut + 1);
    return 0;
}

typedef struct {
    char name[160];
    size_t distance;
} guess_t;

void drv_ctl_suggest_pipelines(drv_ctl_t *ctl, const char *group, const char *pipeline)
{
    char err[300];
    json_t *body = NULL;
    if (drv_ctl_request(&ctl->options, "GET", "/status", NULL, NULL, &body, err, sizeof err) != 200) {
        json_decref(body);
        return;
    }
    char wanted[160];
    snprintf(wanted, sizeof wanted, "%s/%s", group, pipeline);
    guess_t best[SUGGESTIONS];
    size_t count = 0;
    const char *key;
    json_t *st;
    json_object_foreach(json_object_get(body, "pipelines"), key, st)
    {
        guess_t g;
        snprintf(g.name, sizeof g.name, "%s/%s", drv_ctl_str(st, "group"), drv_ctl_str(st, "pipeline"));
        //  Close as a whole, or the same pipeline name in another group.
        size_t whole = drv_edit_distance(wanted, g.name);
        size_t name = drv_edit_distance(pipeline, drv_ctl_str(st, "pipeline"));
        g.distance = name == 0 ? 1 : whole;
        size_t allowed = strlen(wanted) / 3 > 2 ? strlen(wanted) / 3 : 2;
        if (g.distance > allowed && !strstr(g.name, pipeline)) {
            continue;
        }
        size_t at;
        if (count < SUGGESTIONS) {
            at = count++;
        } else if (g.distance < best[SUGGESTIONS - 1].distance) {
            at = SUGGESTIONS - 1; // the farthest kept makes room
        } else {
            continue;
        }
        best[at] = g;
        for (; at > 0 && best[at].distance < best[at - 1].distance; at--) {
            guess_t swap = best[at];
            best[at] = best[at - 1];
            best[at - 1] = swap;
        }
    }
    json_decref(body);
    for (size_t i = 0; i < count; i++) {
        fprintf(stderr, "%s%s", i == 0 ? "droverctl: did you mean: " : ", ", best[i].name);
    }
    if (count > 0) {
        fprintf(stderr, "?\n");
    }
}
