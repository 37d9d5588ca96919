/*  drv_curl_loop — libcurl's multi interface driven by its owner's loop:
    curl says which sockets it waits on (kept in one epoll descriptor the
    owner polls) and when it wants a timeout; the owner calls run when
    either is due, then reads what finished (curl_multi_info_read). The
    exporters (worker/export) and droverd's OpAMP agent post this way. */
#ifndef DRV_CURL_LOOP_H
#define DRV_CURL_LOOP_H

#include <curl/curl.h>
#include <stdint.h>

typedef struct {
    CURLM *multi;
    int epoll_fd;   // poll it for reading
    int64_t due_ms; // mono ms curl wants its timeout (-1: never)
} drv_curl_loop_t;

//  0, or -1 (no descriptor, no memory): fini it either way.
int drv_curl_loop_init(drv_curl_loop_t *loop);
void drv_curl_loop_fini(drv_curl_loop_t *loop);
//  Hands curl what is ready on its sockets, and its timeout when due.
void drv_curl_loop_run(drv_curl_loop_t *loop);

#endif
