/*  drv_zygote — see drv_zygote.h and drover/drv_zygote.h for why.

    One request: fork a helper; the helper forks the instance, sends droverd
    its pid and exits; the zygote reaps the helper. The instance, orphaned,
    is reparented to droverd (a subreaper), and only then takes the
    parent-death signal, so that it is droverd's death that ends it, not the
    helper's. Everything after that is what an exec'd worker does, minus
    loading the libraries. */
#include "drv_zygote.h"
#include "drv_worker.h"

#include "drover/drv_child.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"
#include "drover/drv_zygote.h"

#include <czmq.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define REPARENT_WAIT_MS 1000

//  The process title: the bytes of main()'s argv, which /proc/PID/cmdline
//  shows. droverd starts the zygote with a blank argument wide enough for
//  any instance id; a title is written over the whole area, NUL-padded, so
//  that cmdline reads exactly the title (as an exec'd worker's argv[0]).
//  Not libbsd's setproctitle: it appends a space to a title exactly as long
//  as the original argv[0], which breaks tools matching the instance id.
static char *s_title;
static size_t s_title_size;

static void s_title_init(int argc, char **argv)
{
    char *end = argv[0];
    for (int i = 0; i < argc && argv[i] == end; i++) {
        end = argv[i] + strlen(argv[i]) + 1; // contiguous, as the kernel lays them out
    }
    s_title = argv[0];
    s_title_size = (size_t)(end - argv[0]);
}

static void s_set_title(const char *title)
{
    size_t n = strlen(title) < s_title_size ? strlen(title) : s_title_size - 1;
    memcpy(s_title, title, n);
    memset(s_title + n, 0, s_title_size - n);
}

static void s_reply(int fd, pid_t pid, int err, const char *reason)
{
    drv_zygote_reply_t reply = {.pid = pid, .err = err};
    snprintf(reply.reason, sizeof reply.reason, "%s", reason ? reason : "");
    ssize_t rc = send(fd, &reply, sizeof reply, MSG_NOSIGNAL);
    (void)rc;
}

//  The instance: becomes droverd's, then runs as drover-worker would.
static void s_instance(const drv_zygote_request_t *req, pid_t helper, pid_t droverd, int64_t forked_us)
{
    //  The helper exits right after it has told droverd our pid.
    int64_t deadline = drv_time_mono_ms() + REPARENT_WAIT_MS;
    while (getppid() == helper && drv_time_mono_ms() < deadline) {
        usleep(20);
    }
    if (drv_child_first_steps(droverd, req->core) != DRV_CHILD_OK) {
        _exit(DRV_WORKER_EXIT_SYSTEM); // droverd died meanwhile (we were not reparented to it), or pinning failed
    }
    s_set_title(req->instance);
    char component[240];
    snprintf(component, sizeof component, "worker[%s]", req->instance);
    drv_log_init(component);
    zsys_handler_set(NULL);
    zsys_init();
    int rc = drv_worker_run(req->control, req->instance, forked_us);
    zsys_shutdown();
    exit(rc);
}

//  One request, and the sockets droverd attached to it (SCM_RIGHTS).
static ssize_t s_recv(int fd, drv_zygote_request_t *req, int *fds, size_t *nfds)
{
    struct iovec iov = {req, sizeof *req};
    union {
        char buf[CMSG_SPACE(sizeof(int) * DRV_ZYGOTE_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf};
    ssize_t got = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    *nfds = 0;
    for (struct cmsghdr *c = got > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < n && *nfds < DRV_ZYGOTE_MAX_FDS; i++) {
                memcpy(&fds[(*nfds)++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            }
        }
    }
    return got;
}

static void s_close_all(const int *fds, size_t nfds)
{
    for (size_t i = 0; i < nfds; i++) {
        close(fds[i]);
    }
}

int drv_zygote_run(int fd, int argc, char **argv)
{
    s_title_init(argc, argv);
    s_set_title("drover-zygote");
    drv_log_init("zygote");
    pid_t droverd = getppid();
    drv_info("ready pid=%d", getpid());
    for (;;) {
        drv_zygote_request_t req;
        int fds[DRV_ZYGOTE_MAX_FDS];
        size_t nfds;
        ssize_t got = s_recv(fd, &req, fds, &nfds);
        if (got == 0) {
            return DRV_WORKER_EXIT_OK; // droverd closed its end
        }
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            drv_error("recv failed: %s", strerror(errno));
            return DRV_WORKER_EXIT_SYSTEM;
        }
        if (got != (ssize_t)sizeof req || !memchr(req.instance, 0, sizeof req.instance) ||
            !memchr(req.control, 0, sizeof req.control)) {
            s_reply(fd, 0, EINVAL, "malformed request");
            s_close_all(fds, nfds);
            continue;
        }
        int64_t forked_us = drv_time_mono_us();
        pid_t helper = fork();
        if (helper < 0) {
            s_reply(fd, 0, errno, "fork");
            s_close_all(fds, nfds);
            continue;
        }
        if (helper == 0) {
            pid_t me = getpid();
            pid_t instance = fork();
            if (instance == 0) {
                close(fd);
                s_instance(&req, me, droverd, forked_us);
            }
            s_reply(fd, instance > 0 ? instance : 0, instance > 0 ? 0 : errno, instance > 0 ? NULL : "fork");
            _exit(0);
        }
        s_close_all(fds, nfds); // the instance has its own copies
        while (waitpid(helper, NULL, 0) < 0 && errno == EINTR) {
        }
    }
}
