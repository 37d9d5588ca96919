/*  drv_handoff — see drv_handoff.h. The document:
      {"format": 1, "version": "0.1.0", "upgrade": {by, from_version, to_version, started_at},
       "state": <the state file's document (operations/drv_state.c)>,
       "started_at": ms, "next_shutdown_id": n, "next_event_id": n, "http_fd": fd | -1, "broker": {"pid": n},
       "pipelines": [{"group", "pipeline", "created_at", "retired": [in, out, errors, replayed, dropped, corrupt],
                      "listeners": [{"endpoint", "fd"}],
                      "instances": [{"core", "generation", "pid", "started_at", "restarts"}]}]}
    Only ready instances are handed over: an upgrade starts when no rollout
    or shutdown is under way, so any other is a crashed one restarting,
    which the new droverd's rollout replaces anyway (it is stopped first). */
#include "drv_handoff.h"
#include "drv_broker_link.h"
#include "drv_lifecycle.h"
#include "drv_registry.h"
#include "drv_rollout.h"
#include "drv_sse.h"
#include "drv_state.h"

#include "drover/drv_file.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"
#include "drover/drv_version.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_KEPT_FDS 4096

static json_t *s_pipeline(drv_engine_t *engine, drv_pipeline_t *p, int *fds, size_t *nfds)
{
    (void)engine;
    json_t *listeners = json_array();
    for (drv_listener_t *l = zlistx_first(p->listeners); l; l = zlistx_next(p->listeners)) {
        json_array_append_new(listeners, json_pack("{s:s, s:i}", "endpoint", l->endpoint, "fd", l->fd));
        if (*nfds < MAX_KEPT_FDS) {
            fds[(*nfds)++] = l->fd;
        }
    }
    json_t *instances = json_array();
    for (drv_instance_t *inst = zlistx_first(p->instances); inst; inst = zlistx_next(p->instances)) {
        if (inst->state == DRV_INST_READY && inst->pid > 0) {
            json_array_append_new(instances,
                                  json_pack("{s:i, s:I, s:i, s:I, s:i}", "core", inst->core, "generation",
                                            (json_int_t)inst->generation, "pid", (int)inst->pid, "started_at",
                                            (json_int_t)inst->started_at, "restarts", inst->restarts));
        } else if (inst->pid > 0) {
            kill(inst->pid, SIGTERM); // not ready: the new droverd's rollout starts its core afresh
        }
    }
    return json_pack("{s:s, s:s, s:I, s:[I,I,I,I,I,I], s:o, s:o}", "group", p->group, "pipeline", p->name, "created_at",
                     (json_int_t)p->created_at, "retired", (json_int_t)p->retired_in, (json_int_t)p->retired_out,
                     (json_int_t)p->retired_errors, (json_int_t)p->retired_replayed, (json_int_t)p->retired_dropped,
                     (json_int_t)p->retired_corrupt, "listeners", listeners, "instances", instances);
}

#define HANDOFF_NAME "drover-handoff"
#define HANDOFF_SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
#define HANDOFF_MAX_BYTES (256 << 20)
#define NONCE_BYTES 16

//  A random nonce as hex (32 digits): 0, or -1.
static int s_nonce(char out[2 * NONCE_BYTES + 1])
{
    unsigned char bytes[NONCE_BYTES];
    if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes) {
        return -1;
    }
    for (size_t i = 0; i < sizeof bytes; i++) {
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
    }
    return 0;
}

static void s_cloexec(const int *fds, size_t nfds, bool on)
{
    for (size_t i = 0; i < nfds; i++) {
        fcntl(fds[i], F_SETFD, on ? FD_CLOEXEC : 0);
    }
}

int drv_handoff_exec(drv_engine_t *engine, const json_t *record, char *why, size_t whylen)
{
    static int fds[MAX_KEPT_FDS];
    size_t nfds = 0;
    json_t *pipelines = json_array();
    size_t count = 0;
    drv_pipeline_t **all = drv_registry_pipelines(engine, &count);
    for (size_t i = 0; i < count; i++) {
        json_array_append_new(pipelines, s_pipeline(engine, all[i], fds, &nfds));
    }
    free(all);
    if (engine->http_listen_fd >= 0) {
        fds[nfds++] = engine->http_listen_fd;
    }
    char nonce[2 * NONCE_BYTES + 1];
    if (s_nonce(nonce) != 0) {
        json_decref(pipelines);
        snprintf(why, whylen, "cannot make the handoff's nonce: %s", strerror(errno));
        return -1;
    }
    json_t *doc =
        json_pack("{s:i, s:s, s:O, s:o, s:I, s:I, s:I, s:i, s:{s:i}, s:o, s:s, s:i}", "format", DRV_HANDOFF_FORMAT,
                  "version", drv_version(), "upgrade", record, "state", drv_state_doc(engine), "started_at",
                  (json_int_t)engine->started_at, "next_shutdown_id", (json_int_t)engine->next_shutdown_id,
                  "next_event_id", (json_int_t)drv_sse_next_id(engine), "http_fd", engine->http_listen_fd, "broker",
                  "pid", (int)engine->broker->pid, "pipelines", pipelines, "nonce", nonce, "pid", (int)getpid());
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    //  No MFD_CLOEXEC: the new image reads it; sealed: nothing changes it after.
    int memfd = text ? memfd_create(HANDOFF_NAME, MFD_ALLOW_SEALING) : -1;
    if (!text || memfd < 0 || drv_file_write_all(memfd, text, strlen(text)) != 0 || lseek(memfd, 0, SEEK_SET) != 0 ||
        fcntl(memfd, F_ADD_SEALS, HANDOFF_SEALS) != 0) {
        snprintf(why, whylen, "cannot write the handoff: %s", text ? strerror(errno) : "out of memory");
        free(text);
        if (memfd >= 0) {
            close(memfd);
        }
        return -1;
    }
    free(text);
    char number[16];
    snprintf(number, sizeof number, "%d", memfd);
    setenv(DRV_HANDOFF_ENV, number, 1);
    setenv(DRV_HANDOFF_NONCE_ENV, nonce, 1);
    s_cloexec(fds, nfds, false);
    execv(engine->exe_path, engine->argv);
    int saved = errno;
    s_cloexec(fds, nfds, true);
    unsetenv(DRV_HANDOFF_ENV);
    unsetenv(DRV_HANDOFF_NONCE_ENV);
    close(memfd);
    snprintf(why, whylen, "%s", strerror(saved));
    return -1;
}

//  True when pid is a child of this process.
static bool s_child(json_int_t pid)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    FILE *f = pid > 0 && pid < INT32_MAX ? fopen(path, "re") : NULL;
    size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) {
        fclose(f);
    }
    text[got] = 0;
    const char *paren = strrchr(text, ')'); // the name may hold anything; the fields follow its last ')'
    int parent = 0;
    return paren && sscanf(paren + 1, " %*c %d", &parent) == 1 && parent == getpid();
}

//  Every process doc names is a child of this droverd.
static bool s_names_children(const json_t *doc)
{
    json_int_t broker = json_integer_value(json_object_get(json_object_get(doc, "broker"), "pid"));
    if (broker > 0 && !s_child(broker)) { // 0: none was running
        return false;
    }
    size_t i, k;
    json_t *pipeline, *instance;
    json_array_foreach(json_object_get(doc, "pipelines"), i, pipeline)
    {
        json_array_foreach(json_object_get(pipeline, "instances"), k, instance)
        {
            if (!s_child(json_integer_value(json_object_get(instance, "pid")))) {
                return false;
            }
        }
    }
    return true;
}

//  The document in the memory file fd, when it is droverd's own handoff
//  (see the header; nonce: NULL from a droverd before it): NULL with err
//  otherwise. Never blocks: what is not a memory file is not read.
static json_t *s_read(int fd, const char *nonce, char *err, size_t errlen)
{
    char link[64], target[128] = "";
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t got = readlink(link, target, sizeof target - 1);
    target[got > 0 ? got : 0] = 0;
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        strncmp(target, "/memfd:" HANDOFF_NAME " ", 8 + strlen(HANDOFF_NAME)) ||
        (nonce && (seals < 0 || (seals & HANDOFF_SEALS) != HANDOFF_SEALS))) {
        snprintf(err, errlen, "descriptor %d is not a handoff droverd wrote (%s)", fd, target[0] ? target : "closed");
        return NULL;
    }
    if (st.st_size <= 0 || st.st_size > HANDOFF_MAX_BYTES) {
        snprintf(err, errlen, "the handoff is %lld bytes (at most %d)", (long long)st.st_size, HANDOFF_MAX_BYTES);
        return NULL;
    }
    char *text = malloc((size_t)st.st_size);
    bool read = text && pread(fd, text, (size_t)st.st_size, 0) == st.st_size;
    json_error_t jerr;
    json_t *doc = read ? json_loadb(text, (size_t)st.st_size, 0, &jerr) : NULL;
    free(text);
    if (!doc) {
        snprintf(err, errlen, "the handoff cannot be read: %s", read ? jerr.text : strerror(errno));
        return NULL;
    }
    const char *said = json_string_value(json_object_get(doc, "nonce"));
    bool ours =
        nonce ? said && !strcmp(said, nonce) && json_integer_value(json_object_get(doc, "pid")) == getpid() : true;
    if (!ours || !s_names_children(doc)) {
        snprintf(err, errlen, "the handoff was not written for this droverd (%s)",
                 ours ? "it names processes that are not its children" : "its nonce or pid differs");
        json_decref(doc);
        return NULL;
    }
    return doc;
}

json_t *drv_handoff_take(char *err, size_t errlen)
{
    err[0] = 0;
    const char *value = getenv(DRV_HANDOFF_ENV), *said = getenv(DRV_HANDOFF_NONCE_ENV);
    char number[32] = "", nonce[2 * NONCE_BYTES + 1] = "";
    snprintf(number, sizeof number, "%s", value ? value : "");
    snprintf(nonce, sizeof nonce, "%s", said ? said : "");
    unsetenv(DRV_HANDOFF_ENV); // neither for the children
    unsetenv(DRV_HANDOFF_NONCE_ENV);
    if (!value) {
        return NULL;
    }
    char *end = NULL;
    long fd = strtol(number, &end, 10);
    if (!number[0] || *end || fd < 3 || fd > 1 << 20 || (said && strlen(said) != 2 * NONCE_BYTES)) {
        snprintf(err, errlen, "%s=%.20s is not a descriptor", DRV_HANDOFF_ENV, number);
        return NULL;
    }
    json_t *doc = s_read((int)fd, said ? nonce : NULL, err, errlen);
    if (doc) {
        close((int)fd); // a descriptor that was not a handoff is left as it was
    }
    return doc;
}

bool drv_handoff_understood(const json_t *doc, char *why, size_t whylen)
{
    json_int_t format = json_integer_value(json_object_get(doc, "format"));
    if (format != DRV_HANDOFF_FORMAT || !json_is_object(json_object_get(doc, "state")) ||
        !json_is_array(json_object_get(doc, "pipelines"))) {
        snprintf(why, whylen, "handoff format %lld is not the one this droverd reads (%d)", (long long)format,
                 DRV_HANDOFF_FORMAT);
        return false;
    }
    return true;
}

//  An inherited descriptor, if it is open; close-on-exec again.
static int s_inherited(const json_t *value)
{
    int fd = json_is_integer(value) ? (int)json_integer_value(value) : -1;
    if (fd < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        return -1;
    }
    return fd;
}

static void s_adopt_pipeline(drv_engine_t *engine, const json_t *restored, const json_t *handed)
{
    const char *group = json_string_value(json_object_get(handed, "group"));
    const char *name = json_string_value(json_object_get(handed, "pipeline"));
    json_t *entry = json_object_get(json_object_get(restored, group ?: ""), name ?: "");
    if (!entry) {
        return; // not in the state (never came up): nothing to adopt
    }
    drv_pipeline_t *p = drv_registry_add_pipeline(engine, group, name, json_object_get(entry, "spec"));
    p->source = drv_source_named(json_string_value(json_object_get(entry, "source")), DRV_SOURCE_CONFIG);
    drv_registry_set_owner(p, json_string_value(json_object_get(entry, "owner")));
    p->generation = json_integer_value(json_object_get(entry, "generation"));
    p->next_generation = json_integer_value(json_object_get(entry, "next_generation"));
    p->running = json_is_true(json_object_get(entry, "running"));
    p->shut_down = !p->running;
    p->created_at = json_integer_value(json_object_get(handed, "created_at"));
    json_t *past = json_object_get(entry, "rollouts");
    drv_rollout_set_past(p, past);
    json_t *retired = json_object_get(handed, "retired");
    int64_t *counts[] = {&p->retired_in,       &p->retired_out,     &p->retired_errors,
                         &p->retired_replayed, &p->retired_dropped, &p->retired_corrupt};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        *counts[i] = json_integer_value(json_array_get(retired, i));
    }
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(handed, "listeners"), i, l)
    {
        int fd = s_inherited(json_object_get(l, "fd"));
        const char *endpoint = json_string_value(json_object_get(l, "endpoint"));
        if (fd < 0 || !endpoint) {
            drv_warn("upgrade: pipeline=%s listening socket %s not handed over; the rollout binds it again", p->key,
                     endpoint ? endpoint : "?");
            continue;
        }
        drv_listener_t *listener = calloc(1, sizeof *listener);
        snprintf(listener->endpoint, sizeof listener->endpoint, "%s", endpoint);
        listener->fd = fd;
        zlistx_add_end(p->listeners, listener);
    }
    json_t *inst;
    json_array_foreach(json_object_get(handed, "instances"), i, inst)
    {
        pid_t pid = (pid_t)json_integer_value(json_object_get(inst, "pid"));
        int core = (int)json_integer_value(json_object_get(inst, "core"));
        int64_t generation = json_integer_value(json_object_get(inst, "generation"));
        if (pid <= 0 || generation != p->generation || kill(pid, 0) != 0) {
            continue; // gone while droverd was being executed: the rollout starts its core
        }
        drv_instance_t *adopted = drv_registry_add_instance(engine, p, core, generation, p->spec);
        adopted->restarts = (int)json_integer_value(json_object_get(inst, "restarts"));
        drv_lifecycle_adopt(engine, adopted, pid, json_integer_value(json_object_get(inst, "started_at")));
    }
}

json_t *drv_handoff_adopt(drv_engine_t *engine)
{
    json_t *doc = engine->handoff;
    engine->handoff = NULL;
    if (!doc) {
        return NULL;
    }
    char err[600];
    json_t *config = NULL;
    json_t *restored = drv_state_parse(engine, json_object_get(doc, "state"), "the handoff", &config, err, sizeof err);
    if (!restored) {
        drv_error("upgrade: %s", err); // checked before the execution: not expected
        restored = json_object();
    }
    size_t i;
    json_t *handed;
    json_array_foreach(json_object_get(doc, "pipelines"), i, handed)
    {
        s_adopt_pipeline(engine, restored, handed);
    }
    json_decref(restored);
    json_int_t started = json_integer_value(json_object_get(doc, "started_at"));
    engine->started_at = started > 0 ? started : engine->started_at;
    json_int_t shutdowns = json_integer_value(json_object_get(doc, "next_shutdown_id"));
    engine->next_shutdown_id = shutdowns > engine->next_shutdown_id ? shutdowns : engine->next_shutdown_id;
    pid_t broker = (pid_t)json_integer_value(json_object_get(json_object_get(doc, "broker"), "pid"));
    drv_broker_adopt(engine, broker > 0 && kill(broker, 0) == 0 ? broker : 0);
    json_t *record = json_is_object(json_object_get(doc, "upgrade")) ? json_deep_copy(json_object_get(doc, "upgrade"))
                                                                     : json_object();
    if (config) {
        json_object_set_new(record, "config", config); // what the file declared when the state was applied
    }
    json_decref(doc);
    return record;
}

int drv_handoff_http_fd(const json_t *doc)
{
    return s_inherited(json_object_get(doc, "http_fd"));
}
