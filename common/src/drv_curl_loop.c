/*  drv_curl_loop — see drv_curl_loop.h. */
#include "drover/drv_curl_loop.h"
#include "drover/drv_time.h"

#include <sys/epoll.h>
#include <unistd.h>

static int s_on_socket(CURL *easy, curl_socket_t fd, int what, void *arg, void *socket_arg)
{
    (void)easy;
    (void)socket_arg;
    drv_curl_loop_t *loop = arg;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    struct epoll_event event = {.data.fd = fd};
    event.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_MOD, fd, &event) != 0) {
        epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &event);
    }
    return 0;
}

static int s_on_timer(CURLM *multi, long timeout_ms, void *arg)
{
    (void)multi;
    drv_curl_loop_t *loop = arg;
    loop->due_ms = timeout_ms < 0 ? -1 : drv_time_mono_ms() + timeout_ms;
    return 0;
}

int drv_curl_loop_init(drv_curl_loop_t *loop)
{
    loop->due_ms = -1;
    loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    loop->multi = curl_multi_init();
    if (loop->epoll_fd < 0 || !loop->multi) {
        return -1;
    }
    curl_multi_setopt(loop->multi, CURLMOPT_SOCKETFUNCTION, s_on_socket);
    curl_multi_setopt(loop->multi, CURLMOPT_SOCKETDATA, loop);
    curl_multi_setopt(loop->multi, CURLMOPT_TIMERFUNCTION, s_on_timer);
    curl_multi_setopt(loop->multi, CURLMOPT_TIMERDATA, loop);
    return 0;
}

void drv_curl_loop_fini(drv_curl_loop_t *loop)
{
    if (loop->multi) {
        curl_multi_cleanup(loop->multi);
        loop->multi = NULL;
    }
    if (loop->epoll_fd >= 0) {
        close(loop->epoll_fd);
        loop->epoll_fd = -1;
    }
}

void drv_curl_loop_run(drv_curl_loop_t *loop)
{
    struct epoll_event events[32];
    int running = 0;
    int n = epoll_wait(loop->epoll_fd, events, 32, 0);
    for (int i = 0; i < n; i++) {
        int mask = (events[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                   (events[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                   (events[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(loop->multi, events[i].data.fd, mask, &running);
    }
    if (loop->due_ms >= 0 && drv_time_mono_ms() >= loop->due_ms) {
        loop->due_ms = -1;
        curl_multi_socket_action(loop->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
}
