/*  drv_spawn — fork and exec, the libuv way: the child does nothing but set
    itself up and exec; no ZeroMQ, no allocation. */
#include "drv_spawn.h"

#include "drover/drv_child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct {
    int stage; // 1 = pinning, 2 = exec
    int err;   // errno
} child_error_t;

static void s_child(int report_fd, const char *path, char *const argv[], int cpu, pid_t parent, const int *keep,
                    size_t nkeep)
{
    child_error_t failure;
    for (size_t i = 0; i < nkeep; i++) {
        fcntl(keep[i], F_SETFD, 0); // inherited over exec: a listening socket of droverd's
    }
    int rc = drv_child_first_steps(parent, cpu);
    if (rc == DRV_CHILD_ORPHANED) {
        _exit(111);
    }
    if (rc == DRV_CHILD_PIN_FAILED) {
        failure = (child_error_t){1, errno};
        ssize_t n = write(report_fd, &failure, sizeof failure);
        (void)n;
        _exit(111);
    }
    execv(path, argv);
    failure = (child_error_t){2, errno};
    ssize_t n = write(report_fd, &failure, sizeof failure);
    (void)n;
    _exit(127);
}

pid_t drv_spawn(const char *path, char *const argv[], int cpu, const int *keep, size_t nkeep, char *err, size_t errlen)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        close(pipefd[0]);
        s_child(pipefd[1], path, argv, cpu, parent, keep, nkeep);
    }
    close(pipefd[1]);
    child_error_t failure;
    ssize_t got;
    do {
        got = read(pipefd[0], &failure, sizeof failure);
    } while (got < 0 && errno == EINTR);
    close(pipefd[0]);
    if (got == (ssize_t)sizeof failure) {
        snprintf(err, errlen, "%s %s: %s", failure.stage == 1 ? "pin to CPU" : "exec", failure.stage == 1 ? "" : path,
                 strerror(failure.err));
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid; // EOF: exec succeeded and closed the pipe
}

int drv_spawn_exit_code(int status)
{
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return -1;
}

pid_t drv_spawn_piped(const char *path, char *const argv[], int stdin_fd, bool with_stderr, int *from_child)
{
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (stdin_fd >= 0) {
        posix_spawn_file_actions_adddup2(&actions, stdin_fd, STDIN_FILENO);
    }
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    if (with_stderr) {
        posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none); // droverd's blocked signals are its own
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    pid_t pid;
    int rc = posix_spawn(&pid, path, &actions, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(out[1]);
    if (rc != 0) {
        close(out[0]);
        errno = rc;
        return -1;
    }
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    *from_child = out[0];
    return pid;
}
