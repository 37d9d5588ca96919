/*  drv_zygote (droverd's side) — starts the worker zygote and asks it for
    instances; see drover/drv_zygote.h for why. When the zygote is not there
    (not started yet, crashed, or droverd is stopping), instances are started
    by fork+exec as before, and the zygote is started again at most once a
    second. */
#include "drv_zygote_link.h"
#include "drv_spawn.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"
#include "drover/drv_zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ZYGOTE_REPLY_MS 2000 // the first reply includes the zygote's own start
#define ZYGOTE_RESTART_MS 1000

struct drv_zygote_link_t {
    pid_t pid;          // 0 while not running
    int fd;             // droverd's end of the socketpair, -1 when none
    int64_t started_ms; // mono, of the last start attempt or death (restarts wait ZYGOTE_RESTART_MS after)
};

drv_zygote_link_t *drv_zygote_link_new(void)
{
    drv_zygote_link_t *self = calloc(1, sizeof *self);
    if (!self) {
        abort();
    }
    self->fd = -1;
    return self;
}

void drv_zygote_link_destroy(drv_zygote_link_t **self_p)
{
    if (self_p && *self_p) {
        if ((*self_p)->fd >= 0) {
            close((*self_p)->fd);
        }
        free(*self_p);
        *self_p = NULL;
    }
}

bool drv_zygote_is(drv_engine_t *engine, pid_t pid)
{
    return pid > 0 && engine->zygote && pid == engine->zygote->pid;
}

void drv_zygote_kill(drv_engine_t *engine)
{
    if (engine->zygote && engine->zygote->pid > 0) {
        kill(engine->zygote->pid, SIGKILL);
    }
}

void drv_zygote_start(drv_engine_t *engine)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
        drv_warn("zygote unavailable: socketpair: %s", strerror(errno));
        return;
    }
    //  The zygote's end survives its exec (and only its exec: droverd closes
    //  it right after).
    fcntl(fds[1], F_SETFD, 0);
    char path[1024], fd_arg[16];
    snprintf(path, sizeof path, "%s/drover-worker", engine->bin_dir);
    snprintf(fd_arg, sizeof fd_arg, "%d", fds[1]);
    //  Room for the instances' process titles (ids are < DRV_ID_MAX).
    char blank[DRV_ID_MAX + 1];
    memset(blank, ' ', DRV_ID_MAX);
    blank[DRV_ID_MAX] = 0;
    char *argv[] = {"drover-zygote", "--zygote", fd_arg, blank, NULL};
    char err[300];
    engine->zygote->started_ms = drv_time_mono_ms();
    pid_t pid = drv_spawn(path, argv, -1, NULL, 0, err, sizeof err);
    close(fds[1]);
    if (pid < 0) {
        drv_warn("zygote unavailable: %s", err);
        close(fds[0]);
        return;
    }
    engine->zygote->pid = pid;
    engine->zygote->fd = fds[0];
    drv_info("zygote started pid=%d", pid);
}

static void s_close(drv_engine_t *engine)
{
    if (engine->zygote->fd >= 0) {
        close(engine->zygote->fd);
    }
    engine->zygote->fd = -1;
}

void drv_zygote_stop(drv_engine_t *engine)
{
    s_close(engine); // EOF: the zygote exits
    if (engine->zygote->pid > 0) {
        kill(engine->zygote->pid, SIGTERM);
    }
}

void drv_zygote_on_exit(drv_engine_t *engine, int status)
{
    if (!engine->shutting_down) {
        drv_warn("zygote exited exit=%d; instances start by exec until it is back", drv_spawn_exit_code(status));
    }
    engine->zygote->pid = 0;
    //  Started again a second after its death at the soonest, so a zygote
    //  that dies at once is not restarted in a tight loop.
    engine->zygote->started_ms = drv_time_mono_ms();
    s_close(engine);
}

//  Sends the request, with fds attached (SCM_RIGHTS): the zygote's child,
//  the instance, holds them from its first instruction.
static bool s_send(int sock, const drv_zygote_request_t *req, const int *fds, size_t nfds)
{
    struct iovec iov = {(void *)req, sizeof *req};
    union {
        char buf[CMSG_SPACE(sizeof(int) * DRV_ZYGOTE_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        memset(&control, 0, sizeof control);
        msg.msg_control = control.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * nfds);
    }
    return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof *req;
}

pid_t drv_zygote_spawn(drv_engine_t *engine, const char *instance, int core, const int *fds, size_t nfds, char *err,
                       size_t errlen)
{
    if (nfds > DRV_ZYGOTE_MAX_FDS) {
        snprintf(err, errlen, "more than %d sockets to pass", DRV_ZYGOTE_MAX_FDS);
        return -1;
    }
    if (engine->zygote->fd < 0 && engine->zygote->pid == 0 && !engine->shutting_down &&
        drv_time_mono_ms() - engine->zygote->started_ms >= ZYGOTE_RESTART_MS) {
        drv_zygote_start(engine);
    }
    if (engine->zygote->fd < 0) {
        snprintf(err, errlen, "no zygote");
        return -1;
    }
    drv_zygote_request_t req = {.core = core};
    snprintf(req.instance, sizeof req.instance, "%s", instance);
    snprintf(req.control, sizeof req.control, "%s", engine->control_endpoint);
    drv_zygote_reply_t reply;
    struct pollfd item = {engine->zygote->fd, POLLIN, 0};
    ssize_t got = -1;
    if (s_send(engine->zygote->fd, &req, fds, nfds) && poll(&item, 1, ZYGOTE_REPLY_MS) == 1) {
        got = recv(engine->zygote->fd, &reply, sizeof reply, 0);
    }
    if (got != (ssize_t)sizeof reply) {
        //  Dead or wedged: stop using it (it is reaped, or killed, like any child).
        snprintf(err, errlen, "zygote did not answer");
        drv_warn("zygote did not answer; instances start by exec until it is back pid=%d", engine->zygote->pid);
        drv_zygote_stop(engine);
        return -1;
    }
    if (reply.pid <= 0) {
        snprintf(err, errlen, "zygote: %.*s: %s", (int)sizeof reply.reason, reply.reason, strerror(reply.err));
        return -1;
    }
    return reply.pid;
}
