/*  drv_script_check — a script's syntax checked by drover-worker, for the
    programs that do not link Lua (droverd, droverctl; drv_node_schema.h).
    The worker reads the script on its stdin and says what is wrong on its
    stdout (worker/main.c, --check-script): a child for each check, a few
    milliseconds, bounded by SCRIPT_CHECK_MS. */
#include "drover/drv_node_schema.h"

#include <errno.h>
#include <libgen.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCRIPT_CHECK_MS 10000

extern char **environ;

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

//  Writes the script and reads the answer, both at once (the script may be
//  larger than a pipe holds): the answer in out. 0, or -1 past the deadline.
static int s_talk(int in_fd, int out_fd, const char *text, size_t length, char *out, size_t outlen)
{
    size_t sent = 0, got = 0;
    int64_t deadline = s_now_ms() + SCRIPT_CHECK_MS;
    bool reading = true;
    while (reading) {
        struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {in_fd, POLLOUT, 0}};
        int count = in_fd >= 0 ? 2 : 1;
        int64_t left = deadline - s_now_ms();
        if (left <= 0) {
            return -1;
        }
        if (poll(fds, (nfds_t)count, (int)left) < 0 && errno != EINTR) {
            return -1;
        }
        if (count == 2 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = write(in_fd, text + sent, length - sent);
            sent += n > 0 ? (size_t)n : 0;
            if (n < 0 && errno != EAGAIN && errno != EINTR) {
                sent = length; // it stopped reading: what it says tells why
            }
            if (sent == length) {
                close(in_fd);
                in_fd = -1;
            }
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            char buf[512];
            ssize_t n = read(out_fd, buf, sizeof buf);
            if (n > 0 && got + 1 < outlen) {
                size_t take = (size_t)n < outlen - 1 - got ? (size_t)n : outlen - 1 - got;
                memcpy(out + got, buf, take);
                got += take;
            }
            reading = n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
        }
    }
    if (in_fd >= 0) {
        close(in_fd);
    }
    out[got] = '\0';
    while (got > 0 && out[got - 1] == '\n') {
        out[--got] = '\0';
    }
    return 0;
}

int drv_script_check_exec(void *arg, const char *text, size_t length, char *err, size_t errlen)
{
    const char *worker = arg;
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot check the script: %s", strerror(errno));
        return -1;
    }
    if (pipe2(from_child, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot check the script: %s", strerror(errno));
        close(to_child[0]);
        close(to_child[1]);
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    char *argv[] = {"drover-worker", "--check-script", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, worker, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(to_child[0]);
    close(from_child[1]);
    if (rc != 0) {
        snprintf(err, errlen, "cannot check the script: %s: %s", worker, strerror(rc));
        close(to_child[1]);
        close(from_child[0]);
        return -1;
    }
    fcntl(to_child[1], F_SETFL, O_NONBLOCK);
    void (*old)(int) = signal(SIGPIPE, SIG_IGN); // it may stop reading early
    char said[400];
    int talked = s_talk(to_child[1], from_child[0], text, length, said, sizeof said);
    signal(SIGPIPE, old);
    close(from_child[0]);
    if (talked != 0) {
        kill(pid, SIGKILL);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (talked != 0) {
        snprintf(err, errlen, "cannot check the script: %s took more than %d ms", worker, SCRIPT_CHECK_MS);
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return 0;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && said[0]) {
        snprintf(err, errlen, "%s", said);
        return -1;
    }
    snprintf(err, errlen, "cannot check the script: %s --check-script ended with status %d%s%s", worker, status,
             said[0] ? ": " : "", said);
    return -1;
}

bool drv_script_check_use_worker(void)
{
    static char worker[1100];
    char exe[1024];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        return false;
    }
    exe[len] = '\0';
    snprintf(worker, sizeof worker, "%s/drover-worker", dirname(exe));
    if (access(worker, X_OK) != 0) {
        return false;
    }
    drv_spec_set_script_check(drv_script_check_exec, worker);
    return true;
}
