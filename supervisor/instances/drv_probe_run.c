/*  drv_probe_run — see drv_probe_run.h. The worker is spawned directly (not
    by the zygote: it is not an instance), with the spec on its stdin and
    its answer on its stdout, and waited for here, within a deadline. */
#include "drv_probe_run.h"
#include "drv_listeners.h"

#include "drover/drv_file.h"
#include "drover/drv_log.h"
#include "drover/drv_problems.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ANSWER_MAX (1024 * 1024)

extern char **environ;

//  Spawns drover-worker --probe with pipes on stdin and stdout.
static pid_t s_spawn(drv_engine_t *engine, int *to_child, int *from_child)
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) {
        return -1;
    }
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none); // droverd's blocked signals are its own
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    char path[1100];
    snprintf(path, sizeof path, "%s/drover-worker", engine->bin_dir);
    char *argv[] = {path, "--probe", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, path, &actions, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        close(in[1]);
        close(out[0]);
        errno = rc;
        return -1;
    }
    *to_child = in[1];
    *from_child = out[0];
    return pid;
}

//  Reads until end of file or the deadline; returns the text (owned) or NULL at the deadline.
static char *s_read_until(int fd, int64_t deadline_ms, size_t *len)
{
    char *buf = malloc(ANSWER_MAX + 1);
    *len = 0;
    for (;;) {
        int64_t left = deadline_ms - drv_time_mono_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) == 0) {
            free(buf);
            return NULL;
        }
        ssize_t n = read(fd, buf + *len, ANSWER_MAX - *len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n <= 0 || *len + (size_t)n >= ANSWER_MAX) {
            *len += n > 0 ? (size_t)n : 0;
            break;
        }
        *len += (size_t)n;
    }
    buf[*len] = 0;
    return buf;
}

void drv_probe_run(drv_engine_t *engine, drv_pipeline_t *pipeline, const char *group, const char *name,
                   const json_t *spec, int64_t generation, drv_problems_t *problems)
{
    drv_listeners_probe(pipeline, spec, problems);
    int to_child = -1, from_child = -1;
    pid_t pid = s_spawn(engine, &to_child, &from_child);
    if (pid < 0) {
        drv_problems_add(problems, "", "cannot start a probe instance (%s/drover-worker): %s", engine->bin_dir,
                         strerror(errno));
        return;
    }
    json_t *input = json_pack("{s:O, s:s, s:s, s:I, s:i}", "spec", spec, "group", group, "pipeline", name,
                              "generation", (json_int_t)generation, "core", 0);
    char *text = json_dumps(input, JSON_COMPACT);
    json_decref(input);
    drv_file_write_all(to_child, text ? text : "{}", strlen(text ? text : "{}")); // a probe that died early: EPIPE
    close(to_child);
    free(text);
    size_t len;
    char *answer = s_read_until(from_child, drv_time_mono_ms() + DRV_PROBE_TIMEOUT_MS, &len);
    close(from_child);
    if (!answer) {
        kill(pid, SIGKILL);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    json_error_t err;
    json_t *doc = answer ? json_loadb(answer, len, 0, &err) : NULL;
    json_t *found = json_object_get(doc, "problems");
    if (!answer) {
        drv_problems_add(problems, "", "the probe instance did not finish building the pipeline within %d ms",
                         DRV_PROBE_TIMEOUT_MS);
    } else if (!json_is_array(found)) {
        drv_problems_add(problems, "", "the probe instance ended without an answer (%s %d)",
                         WIFSIGNALED(status) ? "signal" : "exit code",
                         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
    size_t i;
    json_t *problem;
    json_array_foreach(found, i, problem)
    {
        drv_problems_add(problems, json_string_value(json_object_get(problem, "path")), "%s",
                         json_string_value(json_object_get(problem, "message")));
    }
    drv_info("instantiate dry run pipeline=%s:%s problems=%zu", group, name, drv_problems_count(problems));
    json_decref(doc);
    free(answer);
}
