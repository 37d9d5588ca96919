/*  drv_probe_run — see drv_probe_run.h. The worker is spawned directly (not
    by the zygote: it is not an instance), with the spec on its stdin and
    its answer on its stdout. A probe ends when both its pipe closed and its
    process was reaped; then its answer is judged and its done called. */
#include "drv_probe_run.h"
#include "drv_listeners.h"
#include "drv_watched.h"

#include "drover/drv_file.h"
#include "drover/drv_log.h"
#include "drover/drv_problems.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define ANSWER_MAX (1024 * 1024)

typedef struct {
    drv_watched_t child; // drover-worker --probe, its answer on its stdout
    char group[64], name[64];
    drv_problems_t *problems; // the listeners' problems, then the probe's
    drv_probe_done_fn *done;
    void *arg;
} probe_t;

struct drv_probe_runs_t {
    probe_t *probe[DRV_PROBE_MAX]; // NULL: a free slot
};

//  A memory file holding text, at offset 0: the child's stdin.
static int s_memfile(const char *text)
{
    int fd = memfd_create("drover-probe-spec", MFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (drv_file_write_all(fd, text, strlen(text)) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

//  Starts drover-worker --probe reading input, its answer into child.
static int s_spawn(drv_engine_t *engine, const char *input, drv_watched_t *child)
{
    int in = s_memfile(input);
    if (in < 0) {
        return -1;
    }
    char path[1100];
    snprintf(path, sizeof path, "%s/drover-worker", engine->bin_dir);
    char *argv[] = {path, "--probe", NULL};
    int rc = drv_watched_start(child, path, argv, in, false, ANSWER_MAX, DRV_PROBE_TIMEOUT_MS);
    int saved = errno;
    close(in);
    errno = saved;
    return rc;
}

int drv_probe_run_start(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *group, const char *name,
                        const json_t *spec, int64_t generation, drv_probe_done_fn *done, void *arg, char *why,
                        size_t whylen)
{
    if (!engine->probes) {
        engine->probes = calloc(1, sizeof *engine->probes);
    }
    int slot = 0;
    while (slot < DRV_PROBE_MAX && engine->probes->probe[slot]) {
        slot++;
    }
    if (slot == DRV_PROBE_MAX) {
        snprintf(why, whylen, "%d instantiate dry runs are under way; retry when one has ended", DRV_PROBE_MAX);
        return -1;
    }
    json_t *input = json_pack("{s:O, s:s, s:s, s:I, s:i}", "spec", spec, "group", group, "pipeline", name, "generation",
                              (json_int_t)generation, "core", 0);
    char *text = json_dumps(input, JSON_COMPACT);
    json_decref(input);
    probe_t *probe = calloc(1, sizeof *probe);
    int rc = text ? s_spawn(engine, text, &probe->child) : -1;
    free(text);
    if (rc != 0) {
        snprintf(why, whylen, "cannot start a probe instance (%s/drover-worker): %s", engine->bin_dir, strerror(errno));
        free(probe);
        return -1;
    }
    snprintf(probe->group, sizeof probe->group, "%s", group);
    snprintf(probe->name, sizeof probe->name, "%s", name);
    probe->problems = drv_problems_new();
    probe->done = done;
    probe->arg = arg;
    engine->probes->probe[slot] = probe;
    drv_listeners_probe(pipeline, spec, probe->problems); // binds and closes at once: never blocks
    return 0;
}

//  What the probe said (or that it said nothing), into its problems.
static void s_judge(probe_t *probe)
{
    drv_problems_t *problems = probe->problems;
    const drv_watched_t *child = &probe->child;
    json_error_t err;
    //  What did not fit is not an answer.
    json_t *doc = child->killed || child->truncated ? NULL : json_loadb(child->out, child->len, 0, &err);
    json_t *found = json_object_get(doc, "problems");
    if (child->killed) {
        drv_problems_add(problems, "",
                         "the probe instance did not finish building the pipeline within %d ms (a script's top "
                         "level that does not end? a file that blocks when opened?)",
                         DRV_PROBE_TIMEOUT_MS);
    } else if (!json_is_array(found)) {
        drv_problems_add(problems, "", "the probe instance ended without an answer (%s %d)",
                         WIFSIGNALED(child->status) ? "signal" : "exit code",
                         WIFSIGNALED(child->status) ? WTERMSIG(child->status) : WEXITSTATUS(child->status));
    }
    size_t i;
    json_t *problem;
    json_array_foreach(found, i, problem)
    {
        drv_problems_add(problems, json_string_value(json_object_get(problem, "path")), "%s",
                         json_string_value(json_object_get(problem, "message")));
    }
    json_decref(doc);
}

static void s_free(probe_t **probe_p)
{
    probe_t *probe = *probe_p;
    drv_watched_release(&probe->child);
    drv_problems_destroy(&probe->problems);
    free(probe);
    *probe_p = NULL;
}

//  A probe whose pipe closed and whose process was reaped is over.
static void s_maybe_end(drv_engine_t *engine, int slot)
{
    probe_t *probe = engine->probes->probe[slot];
    if (!drv_watched_over(&probe->child)) {
        return;
    }
    s_judge(probe);
    drv_info("instantiate dry run pipeline=%s:%s problems=%zu", probe->group, probe->name,
             drv_problems_count(probe->problems));
    engine->probes->probe[slot] = NULL; // free before done: done may start another
    probe->done(engine, probe->arg, probe->problems);
    s_free(&probe);
}

int64_t drv_probe_runs_tick(drv_engine_t *engine)
{
    if (!engine->probes) {
        return -1;
    }
    int64_t now = drv_time_mono_ms(), next = -1;
    for (int i = 0; i < DRV_PROBE_MAX; i++) {
        probe_t *probe = engine->probes->probe[i];
        if (probe && drv_watched_expire(&probe->child, now)) {
            drv_warn("instantiate dry run pipeline=%s:%s: the probe instance did not finish within %d ms; killed",
                     probe->group, probe->name, DRV_PROBE_TIMEOUT_MS);
        }
        if (probe && drv_watched_over(&probe->child)) { // it ended, and a grandchild held its output
            s_maybe_end(engine, i);
            probe = engine->probes->probe[i]; // done may have started another
        }
        int64_t left = probe ? drv_watched_left_ms(&probe->child, now) : -1;
        next = left >= 0 && (next < 0 || left < next) ? left : next;
    }
    return next;
}

int drv_probe_runs_poll_items(drv_engine_t *engine, zmq_pollitem_t *items)
{
    int count = 0;
    for (int i = 0; engine->probes && i < DRV_PROBE_MAX; i++) {
        probe_t *probe = engine->probes->probe[i];
        if (probe && probe->child.fd >= 0) {
            items[count++] = (zmq_pollitem_t){NULL, probe->child.fd, ZMQ_POLLIN, 0};
        }
    }
    return count;
}

void drv_probe_runs_on_readable(drv_engine_t *engine, const zmq_pollitem_t *items, int count)
{
    for (int k = 0; k < count; k++) {
        if (!(items[k].revents & (ZMQ_POLLIN | ZMQ_POLLERR))) {
            continue;
        }
        for (int i = 0; engine->probes && i < DRV_PROBE_MAX; i++) {
            probe_t *probe = engine->probes->probe[i];
            if (!probe || probe->child.fd != items[k].fd) {
                continue;
            }
            drv_watched_read(&probe->child);
            s_maybe_end(engine, i);
            break;
        }
    }
}

bool drv_probe_runs_on_exit(drv_engine_t *engine, pid_t pid, int status)
{
    for (int i = 0; engine->probes && i < DRV_PROBE_MAX; i++) {
        probe_t *probe = engine->probes->probe[i];
        if (probe && drv_watched_reaped(&probe->child, pid, status)) {
            s_maybe_end(engine, i);
            return true;
        }
    }
    return false;
}

void drv_probe_runs_stop(drv_engine_t *engine)
{
    for (int i = 0; engine->probes && i < DRV_PROBE_MAX; i++) {
        probe_t *probe = engine->probes->probe[i];
        if (probe) {
            engine->probes->probe[i] = NULL; // its child is killed and reaped with droverd's other children
            probe->done(engine, probe->arg, NULL);
            s_free(&probe);
        }
    }
    free(engine->probes);
    engine->probes = NULL;
}
