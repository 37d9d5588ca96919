/*  drv_conn_policy — see the header for the rules; here is how they are
    kept. Connections sit in arrival order (the head is the oldest), which
    is also the order evictions look in. The earliest deadline is cached so
    that a loop asking on every wake-up walks the list only when something
    may be due. */
#include "drover/drv_conn_policy.h"

#include "drover/drv_log.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { CLOCK_CLIENT_REQUEST, CLOCK_CLIENT_IDLE, CLOCK_ENGINE, CLOCK_STREAM } clock_t_;

struct drv_conn_t {
    drv_conn_t *prev, *next;
    int fd;
    unsigned char addr[16]; // client address (IPv4 mapped into 16 bytes)
    clock_t_ clock;
    int64_t deadline_ms; // mono, while on the client's clock
    bool cut;            // already shut down by us
    size_t body;         // body bytes it holds (charged through it)
};

struct drv_conn_policy_t {
    drv_conn_limits_t limits;
    char name[48]; // for the log: "http admin", "receiver in"...
    drv_conn_t *head, *tail;
    int count;
    int64_t next_due_ms; // no deadline is earlier than this (0: none known)
    size_t body_used;
    int64_t cut_count;
};

int drv_conn_limits_config(const json_t *connections, drv_conn_limits_t *limits, char *err, size_t errlen)
{
    if (!connections || json_is_null(connections)) {
        return 0;
    }
    if (!json_is_object(connections)) {
        snprintf(err, errlen, "connections: must be a map of per_address, total, idle_secs, request_secs");
        return -1;
    }
    static const struct {
        const char *key;
        int64_t max;
    } keys[] = {{"per_address", 100000}, {"total", 100000}, {"idle_secs", 86400}, {"request_secs", 86400}};
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)connections, key, value)
    {
        size_t k = 0;
        while (k < 4 && strcmp(keys[k].key, key)) {
            k++;
        }
        if (k == 4) {
            snprintf(err, errlen, "connections: unknown key \"%s\" (allowed: per_address total idle_secs request_secs)",
                     key);
            return -1;
        }
        json_int_t n = json_integer_value(value);
        if (!json_is_integer(value) || n < 1 || n > keys[k].max) {
            snprintf(err, errlen, "connections.%s: must be an integer from 1 to %lld", key, (long long)keys[k].max);
            return -1;
        }
        if (k == 0) {
            limits->per_address = (int)n;
        } else if (k == 1) {
            limits->total = (int)n;
        } else if (k == 2) {
            limits->idle_ms = (int64_t)n * 1000;
        } else {
            limits->request_ms = (int64_t)n * 1000;
        }
    }
    return 0;
}

drv_conn_policy_t *drv_conn_policy_new(const drv_conn_limits_t *limits, const char *name)
{
    drv_conn_policy_t *self = calloc(1, sizeof *self);
    self->limits = *limits;
    snprintf(self->name, sizeof self->name, "%s", name);
    return self;
}

void drv_conn_policy_destroy(drv_conn_policy_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_conn_policy_t *self = *self_p;
    while (self->head) {
        drv_conn_t *next = self->head->next;
        free(self->head);
        self->head = next;
    }
    free(self);
    *self_p = NULL;
}

static void s_cut(drv_conn_policy_t *self, drv_conn_t *conn, const char *why)
{
    if (conn->cut) {
        return;
    }
    conn->cut = true;
    self->cut_count++;
    shutdown(conn->fd, SHUT_RDWR); // the owner's next read sees the end of the stream
    drv_debug("%s: connection cut (%s)", self->name, why);
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

//  An address as the policy keeps it (16 bytes, IPv4 mapped) as text.
static void s_text(const unsigned char addr[16], char *out, size_t size)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, none[16] = {0};
    out[0] = 0;
    if (!memcmp(addr, mapped, 12)) {
        inet_ntop(AF_INET, addr + 12, out, (socklen_t)size);
    } else if (memcmp(addr, none, 16)) {
        inet_ntop(AF_INET6, addr, out, (socklen_t)size);
    }
}

void drv_conn_peer(const drv_conn_t *conn, char *out, size_t size)
{
    if (conn) {
        s_text(conn->addr, out, size);
    } else {
        out[0] = 0;
    }
}

void drv_conn_addr_text(const struct sockaddr *addr, char *out, size_t size)
{
    unsigned char bytes[16];
    s_address(addr, bytes);
    s_text(bytes, out, size);
}

static void s_set_deadline(drv_conn_policy_t *self, drv_conn_t *conn, clock_t_ clock, int64_t deadline_ms)
{
    conn->clock = clock;
    conn->deadline_ms = deadline_ms;
    if (deadline_ms && (!self->next_due_ms || deadline_ms < self->next_due_ms)) {
        self->next_due_ms = deadline_ms;
    }
}

//  The oldest connection on the client's clock (of addr, or of anyone when
//  addr is NULL), other than except; else the oldest stream.
static drv_conn_t *s_oldest_waiting(drv_conn_policy_t *self, const unsigned char *addr, const drv_conn_t *except)
{
    drv_conn_t *stream = NULL;
    for (drv_conn_t *c = self->head; c; c = c->next) {
        if (c == except || c->cut || (addr && memcmp(c->addr, addr, 16) != 0)) {
            continue;
        }
        if (c->clock == CLOCK_STREAM) {
            stream = stream ? stream : c;
        } else if (c->clock != CLOCK_ENGINE) {
            return c;
        }
    }
    return stream;
}

drv_conn_t *drv_conn_policy_open(drv_conn_policy_t *self, int fd, const struct sockaddr *addr, int64_t now_ms)
{
    drv_conn_t *conn = calloc(1, sizeof *conn);
    conn->fd = fd;
    s_address(addr, conn->addr);
    conn->prev = self->tail;
    if (self->tail) {
        self->tail->next = conn;
    } else {
        self->head = conn;
    }
    self->tail = conn;
    self->count++;
    s_set_deadline(self, conn, CLOCK_CLIENT_REQUEST, now_ms + self->limits.request_ms);
    int same = 0, live = 0;
    for (drv_conn_t *c = self->head; c; c = c->next) {
        live += !c->cut;
        same += !c->cut && memcmp(c->addr, conn->addr, 16) == 0;
    }
    if (same > self->limits.per_address) {
        drv_conn_t *victim = s_oldest_waiting(self, conn->addr, conn);
        s_cut(self, victim ? victim : conn, "too many connections from one address");
        live--;
    }
    if (live > self->limits.total) {
        drv_conn_t *victim = s_oldest_waiting(self, NULL, conn);
        s_cut(self, victim ? victim : conn, "too many connections");
    }
    return conn;
}

void drv_conn_policy_close(drv_conn_policy_t *self, drv_conn_t *conn)
{
    if (!conn) {
        return;
    }
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
    free(conn);
}

void drv_conn_policy_request(drv_conn_policy_t *self, drv_conn_t *conn, int64_t now_ms)
{
    if (conn) {
        s_set_deadline(self, conn, CLOCK_CLIENT_REQUEST, now_ms + self->limits.request_ms);
    }
}

void drv_conn_policy_engine(drv_conn_policy_t *self, drv_conn_t *conn)
{
    if (conn) {
        s_set_deadline(self, conn, CLOCK_ENGINE, 0);
    }
}

void drv_conn_policy_stream(drv_conn_policy_t *self, drv_conn_t *conn)
{
    if (conn) {
        s_set_deadline(self, conn, CLOCK_STREAM, 0);
    }
}

void drv_conn_policy_idle(drv_conn_policy_t *self, drv_conn_t *conn, int64_t now_ms)
{
    if (conn) {
        s_set_deadline(self, conn, CLOCK_CLIENT_IDLE, now_ms + self->limits.idle_ms);
    }
}

bool drv_conn_policy_was_cut(const drv_conn_t *conn)
{
    return conn && conn->cut;
}

int64_t drv_conn_policy_expire(drv_conn_policy_t *self, int64_t now_ms)
{
    if (!self->next_due_ms) {
        return -1;
    }
    if (now_ms < self->next_due_ms) {
        return self->next_due_ms - now_ms;
    }
    self->next_due_ms = 0;
    for (drv_conn_t *c = self->head; c; c = c->next) {
        if (c->cut || c->clock == CLOCK_ENGINE || c->clock == CLOCK_STREAM) {
            continue;
        }
        if (now_ms >= c->deadline_ms) {
            s_cut(self, c, c->clock == CLOCK_CLIENT_IDLE ? "silent for too long" : "a request took too long");
        } else if (!self->next_due_ms || c->deadline_ms < self->next_due_ms) {
            self->next_due_ms = c->deadline_ms;
        }
    }
    return self->next_due_ms ? self->next_due_ms - now_ms : -1;
}

bool drv_conn_policy_body_fits(const drv_conn_policy_t *self, size_t bytes)
{
    return self->body_used + bytes <= self->limits.body_budget;
}

#define RECLAIM_ADDRESSES 64 // told apart when the budget is full (the others hold little each)

//  The budget is full and `asking` was refused: the address holding the
//  most, if it is another and holds more than its share (the budget over
//  the addresses holding any), loses its oldest connection that still owes
//  us bytes. Its bytes come back when its owner closes it, so the refused
//  sender's retry gets in: no address keeps the others out for long.
static void s_reclaim(drv_conn_policy_t *self, const drv_conn_t *asking)
{
    struct {
        const unsigned char *addr;
        size_t held;
    } seen[RECLAIM_ADDRESSES];
    size_t addresses = 0, greediest = 0;
    for (const drv_conn_t *c = self->head; c; c = c->next) {
        if (c->body == 0) {
            continue;
        }
        size_t i = 0;
        while (i < addresses && memcmp(seen[i].addr, c->addr, 16) != 0) {
            i++;
        }
        if (i == addresses) {
            if (addresses == RECLAIM_ADDRESSES) {
                continue;
            }
            seen[addresses++] = (typeof(seen[0])){c->addr, 0};
        }
        seen[i].held += c->body;
        greediest = seen[i].held > seen[greediest].held ? i : greediest;
    }
    bool newcomer = asking && asking->body == 0;
    if (addresses == 0 || (asking && memcmp(seen[greediest].addr, asking->addr, 16) == 0) ||
        seen[greediest].held <= self->limits.body_budget / (addresses + newcomer)) {
        return;
    }
    for (drv_conn_t *c = self->head; c; c = c->next) {
        if (!c->cut && c->body > 0 && c->clock == CLOCK_CLIENT_REQUEST && !memcmp(c->addr, seen[greediest].addr, 16)) {
            s_cut(self, c, "one address held more than its share of the body budget");
            return;
        }
    }
}

bool drv_conn_policy_take_body(drv_conn_policy_t *self, drv_conn_t *conn, size_t bytes)
{
    if (self->body_used + bytes > self->limits.body_budget) {
        s_reclaim(self, conn);
        return false;
    }
    self->body_used += bytes;
    if (conn) {
        conn->body += bytes;
    }
    return true;
}

void drv_conn_policy_give_body(drv_conn_policy_t *self, drv_conn_t *conn, size_t bytes)
{
    self->body_used = bytes > self->body_used ? 0 : self->body_used - bytes;
    if (conn) {
        conn->body = bytes > conn->body ? 0 : conn->body - bytes;
    }
}

size_t drv_conn_policy_body_used(const drv_conn_policy_t *self)
{
    return self->body_used;
}

int64_t drv_conn_policy_cut_count(const drv_conn_policy_t *self)
{
    return self->cut_count;
}

int drv_conn_policy_open_count(const drv_conn_policy_t *self)
{
    return self->count;
}
