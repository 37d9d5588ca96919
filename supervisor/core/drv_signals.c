/*  drv_signals — signalfd, as tini and s6 do: signals are events in the loop,
    never asynchronous handlers. */
#include "drv_signals.h"

#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

int drv_signals_open(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGUSR2); // an upgrade in place, as nginx's
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        return -1;
    }
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int drv_signals_read(int fd)
{
    struct signalfd_siginfo info;
    ssize_t got = read(fd, &info, sizeof info);
    if (got == (ssize_t)sizeof info) {
        return (int)info.ssi_signo;
    }
    return got < 0 && errno == EAGAIN ? 0 : -1;
}
