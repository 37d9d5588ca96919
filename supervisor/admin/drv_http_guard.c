/*  drv_http_guard — per-client and total connection budgets, per-request
    deadlines and the body budget of the HTTP admin. See the header for the
    rules; here is how they are kept. */
#include "drv_http_guard.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct drv_http_conn_t {
    drv_http_conn_t *prev, *next; // arrival order: the head is the oldest
    int fd;
    unsigned char addr[16];       // client address (IPv4 mapped into 16 bytes)
    int64_t deadline_ms;          // mono; 0 while the engine holds the request
    bool cut;                     // already shut down by us
};

struct drv_http_guard_t {
    pthread_mutex_t lock;         // connections are opened by MHD's thread, cut by the sweeper
    pthread_cond_t wake;          // the sweeper sleeps on it while there is nothing to time
    pthread_t sweeper;
    bool stop;
    drv_http_conn_t *head, *tail;
    int count;
    int per_client;
    int total;
    size_t body_budget;
    size_t body_used;
    int64_t cut_count;
};

static void s_cut(drv_http_guard_t *self, drv_http_conn_t *conn, const char *why)
{
    if (conn->cut) {
        return;
    }
    conn->cut = true;
    self->cut_count++;
    //  MHD owns the descriptor and closes it; shutting it down makes MHD's
    //  next read see the end of the stream.
    shutdown(conn->fd, SHUT_RDWR);
    drv_debug("http: connection cut (%s)", why);
}

static void *s_sweeper(void *arg)
{
    drv_http_guard_t *self = arg;
    pthread_mutex_lock(&self->lock);
    while (!self->stop) {
        int64_t now = drv_time_mono_ms();
        bool timing = false;
        for (drv_http_conn_t *c = self->head; c; c = c->next) {
            if (c->deadline_ms && !c->cut) {
                if (now >= c->deadline_ms) {
                    s_cut(self, c, "request took longer than " "10 s of the client's time");
                } else {
                    timing = true;
                }
            }
        }
        if (timing) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 250 * 1000000L;
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
    self->per_client = per_client;
    self->total = total;
    self->body_budget = body_budget;
    if (pthread_create(&self->sweeper, NULL, s_sweeper, self) != 0) {
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
    while (self->head) {
        drv_http_conn_t *next = self->head->next;
        free(self->head);
        self->head = next;
    }
    pthread_cond_destroy(&self->wake);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

static void s_address(const struct sockaddr *addr, unsigned char out[16])
{
    memset(out, 0, 16);
    if (addr && addr->sa_family == AF_INET) {
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &((const struct sockaddr_in *)addr)->sin_addr, 4);
    } else if (addr && addr->sa_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
    }
}

//  The oldest connection still sending its request (of addr, or of anyone
//  when addr is NULL), other than except.
static drv_http_conn_t *s_oldest_sending(drv_http_guard_t *self, const unsigned char *addr,
                                         const drv_http_conn_t *except)
{
    for (drv_http_conn_t *c = self->head; c; c = c->next) {
        if (c != except && c->deadline_ms && !c->cut && (!addr || memcmp(c->addr, addr, 16) == 0)) {
            return c;
        }
    }
    return NULL;
}

drv_http_conn_t *drv_http_guard_open(drv_http_guard_t *self, int fd, const struct sockaddr *addr)
{
    drv_http_conn_t *conn = calloc(1, sizeof *conn);
    conn->fd = fd;
    s_address(addr, conn->addr);
    pthread_mutex_lock(&self->lock);
    conn->deadline_ms = drv_time_mono_ms() + DRV_HTTP_REQUEST_SECS * 1000;
    conn->prev = self->tail;
    if (self->tail) {
        self->tail->next = conn;
    } else {
        self->head = conn;
    }
    self->tail = conn;
    self->count++;
    int same = 0;
    for (drv_http_conn_t *c = self->head; c; c = c->next) {
        same += !c->cut && memcmp(c->addr, conn->addr, 16) == 0;
    }
    int live = 0;
    for (drv_http_conn_t *c = self->head; c; c = c->next) {
        live += !c->cut;
    }
    if (same > self->per_client) {
        drv_http_conn_t *victim = s_oldest_sending(self, conn->addr, conn);
        s_cut(self, victim ? victim : conn, "too many connections from one client");
        live--;
    }
    if (live > self->total) {
        drv_http_conn_t *victim = s_oldest_sending(self, NULL, conn);
        s_cut(self, victim ? victim : conn, "too many connections");
    }
    pthread_cond_signal(&self->wake);
    pthread_mutex_unlock(&self->lock);
    return conn;
}

void drv_http_guard_close(drv_http_guard_t *self, drv_http_conn_t *conn)
{
    if (!conn) {
        return;
    }
    pthread_mutex_lock(&self->lock);
    if (conn->prev) {
        conn->prev->next = conn->next;
    } else {
        self->head = conn->next;
    }
    if (conn->next) {
        conn->next->prev = conn->prev;
    } else {
        self->tail = conn->prev;
    }
    self->count--;
    pthread_mutex_unlock(&self->lock);
    free(conn);
}

void drv_http_guard_dispatched(drv_http_guard_t *self, drv_http_conn_t *conn)
{
    if (conn) {
        pthread_mutex_lock(&self->lock);
        conn->deadline_ms = 0;
        pthread_mutex_unlock(&self->lock);
    }
}

void drv_http_guard_client_turn(drv_http_guard_t *self, drv_http_conn_t *conn)
{
    if (conn) {
        pthread_mutex_lock(&self->lock);
        conn->deadline_ms = drv_time_mono_ms() + DRV_HTTP_REQUEST_SECS * 1000;
        pthread_cond_signal(&self->wake);
        pthread_mutex_unlock(&self->lock);
    }
}

bool drv_http_guard_take_body(drv_http_guard_t *self, size_t bytes)
{
    pthread_mutex_lock(&self->lock);
    bool ok = self->body_used + bytes <= self->body_budget;
    if (ok) {
        self->body_used += bytes;
    }
    pthread_mutex_unlock(&self->lock);
    return ok;
}

void drv_http_guard_give_body(drv_http_guard_t *self, size_t bytes)
{
    pthread_mutex_lock(&self->lock);
    self->body_used = bytes > self->body_used ? 0 : self->body_used - bytes;
    pthread_mutex_unlock(&self->lock);
}

int64_t drv_http_guard_cut(drv_http_guard_t *self)
{
    pthread_mutex_lock(&self->lock);
    int64_t n = self->cut_count;
    pthread_mutex_unlock(&self->lock);
    return n;
}
