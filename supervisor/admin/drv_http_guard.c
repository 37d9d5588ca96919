/*  drv_http_guard — the HTTP admin's side of the one connection policy
    (drv_conn_policy): libmicrohttpd runs its own thread here, so the policy
    sits behind a lock and a sweeper thread keeps its deadlines. */
#include "drv_http_guard.h"

#include "drover/drv_conn_policy.h"
#include "drover/drv_time.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct drv_http_guard_t {
    pthread_mutex_t lock;         // connections are opened by MHD's thread, cut by the sweeper
    pthread_cond_t wake;          // the sweeper sleeps on it while there is nothing to time
    pthread_t sweeper;
    bool stop;
    drv_conn_policy_t *policy;    // the rules, shared with every listener (common/drv_conn_policy)
};

static void *s_sweeper(void *arg)
{
    drv_http_guard_t *self = arg;
    pthread_mutex_lock(&self->lock);
    while (!self->stop) {
        int64_t wait = drv_conn_policy_expire(self->policy, drv_time_mono_ms());
        if (wait >= 0) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += (wait < 250 ? wait + 1 : 250) * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&self->wake, &self->lock, &until);
        } else {
            pthread_cond_wait(&self->wake, &self->lock);
        }
    }
    pthread_mutex_unlock(&self->lock);
    return NULL;
}

drv_http_guard_t *drv_http_guard_new(int per_client, int total, size_t body_budget)
{
    drv_http_guard_t *self = calloc(1, sizeof *self);
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->wake, NULL);
    drv_conn_limits_t limits = {.per_address = per_client,
                                .total = total,
                                .request_ms = DRV_HTTP_REQUEST_SECS * 1000,
                                .idle_ms = DRV_HTTP_REQUEST_SECS * 1000,
                                .body_budget = body_budget};
    self->policy = drv_conn_policy_new(&limits, "http admin");
    if (pthread_create(&self->sweeper, NULL, s_sweeper, self) != 0) {
        drv_conn_policy_destroy(&self->policy);
        pthread_cond_destroy(&self->wake);
        pthread_mutex_destroy(&self->lock);
        free(self);
        return NULL;
    }
    return self;
}

void drv_http_guard_destroy(drv_http_guard_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_http_guard_t *self = *self_p;
    pthread_mutex_lock(&self->lock);
    self->stop = true;
    pthread_cond_signal(&self->wake);
    pthread_mutex_unlock(&self->lock);
    pthread_join(self->sweeper, NULL);
    drv_conn_policy_destroy(&self->policy);
    pthread_cond_destroy(&self->wake);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

drv_http_conn_t *drv_http_guard_open(drv_http_guard_t *self, int fd, const struct sockaddr *addr)
{
    pthread_mutex_lock(&self->lock);
    drv_conn_t *conn = drv_conn_policy_open(self->policy, fd, addr, drv_time_mono_ms());
    pthread_cond_signal(&self->wake);
    pthread_mutex_unlock(&self->lock);
    return (drv_http_conn_t *)conn;
}

void drv_http_guard_close(drv_http_guard_t *self, drv_http_conn_t *conn)
{
    pthread_mutex_lock(&self->lock);
    drv_conn_policy_close(self->policy, (drv_conn_t *)conn);
    pthread_mutex_unlock(&self->lock);
}

void drv_http_guard_dispatched(drv_http_guard_t *self, drv_http_conn_t *conn)
{
    pthread_mutex_lock(&self->lock);
    drv_conn_policy_engine(self->policy, (drv_conn_t *)conn);
    pthread_mutex_unlock(&self->lock);
}

void drv_http_guard_client_turn(drv_http_guard_t *self, drv_http_conn_t *conn)
{
    pthread_mutex_lock(&self->lock);
    drv_conn_policy_request(self->policy, (drv_conn_t *)conn, drv_time_mono_ms());
    pthread_cond_signal(&self->wake);
    pthread_mutex_unlock(&self->lock);
}

void drv_http_guard_streaming(drv_http_guard_t *self, drv_http_conn_t *conn)
{
    pthread_mutex_lock(&self->lock);
    drv_conn_policy_stream(self->policy, (drv_conn_t *)conn);
    pthread_mutex_unlock(&self->lock);
}

bool drv_http_guard_body_fits(drv_http_guard_t *self, size_t bytes)
{
    pthread_mutex_lock(&self->lock);
    bool fits = drv_conn_policy_body_fits(self->policy, bytes);
    pthread_mutex_unlock(&self->lock);
    return fits;
}

bool drv_http_guard_take_body(drv_http_guard_t *self, size_t bytes)
{
    pthread_mutex_lock(&self->lock);
    bool ok = drv_conn_policy_take_body(self->policy, bytes);
    pthread_mutex_unlock(&self->lock);
    return ok;
}

void drv_http_guard_give_body(drv_http_guard_t *self, size_t bytes)
{
    pthread_mutex_lock(&self->lock);
    drv_conn_policy_give_body(self->policy, bytes);
    pthread_mutex_unlock(&self->lock);
}

int64_t drv_http_guard_cut(drv_http_guard_t *self)
{
    pthread_mutex_lock(&self->lock);
    int64_t n = drv_conn_policy_cut_count(self->policy);
    pthread_mutex_unlock(&self->lock);
    return n;
}
