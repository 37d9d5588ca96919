/*  receiver:syslog — RFC 5424 and RFC 3164 messages over UDP, one record per
    datagram, or over TCP, one per octet-counted frame or line
    (drv_syslog_tcp.h); drv_syslog.c says what a message becomes.

    The socket is droverd's: bound when the pipeline is created, kept for its
    whole life and inherited by every instance of every generation, so
    nothing is refused while instances change. An instance finds its copy by
    the address it is bound to; it reads until it is asked to drain, and the
    datagrams it leaves are read by the instances that stay. */
#include "drv_node.h"
#include "drv_schemas.h"
#include "drv_record.h"
#include "drv_syslog.h"
#include "drv_syslog_frame.h"
#include "drv_syslog_tcp.h"

#include "drover/drv_conn_policy.h"
#include "drover/drv_listen.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DATAGRAMS 64       // read at once (one batch)
#define DATAGRAM_MAX 65536 // the largest UDP payload

typedef struct {
    int fd;                  // UDP
    drv_syslog_tcp_t *tcp;   // TCP
    char *buffers;           // UDP: DATAGRAMS x DATAGRAM_MAX
    msgpack_zone *zone;      // the batch zone the records are built in
    msgpack_object *records; // the batch's records (a TCP read may cut more than DATAGRAMS messages)
    size_t cap;
    uint32_t count;
    bool failed; // out of memory building one: counted as an error
    int refused; // TCP frames past max_message_bytes in this read (each an error)
    drv_node_t *node;
} syslog_t;

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    syslog_t *self = calloc(1, sizeof *self);
    node->state = self;
    self->node = node;
    self->fd = -1;
    const char *endpoint = json_string_value(json_object_get(config, "endpoint"));
    char why[200];
    self->fd = drv_listen_inherited(endpoint, why, sizeof why);
    if (self->fd < 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    if (!strncmp(endpoint, "tcp://", 6)) {
        int fd = self->fd;
        self->fd = -1;
        drv_conn_limits_t limits = {.per_address = DRV_SYSLOG_TCP_PER_ADDRESS,
                                    .total = DRV_SYSLOG_TCP_CONNECTIONS,
                                    .idle_ms = DRV_SYSLOG_TCP_IDLE_SECS * 1000};
        if (drv_conn_limits_config(json_object_get(config, "connections"), &limits, why, sizeof why) != 0) {
            snprintf(err, errlen, "node %s: %s", node->id, why);
            close(fd);
            return -1;
        }
        limits.request_ms = limits.idle_ms; // a sender has no requests: silence is all its clock measures
        self->tcp = drv_syslog_tcp_new(fd, (size_t)json_integer_value(json_object_get(config, "max_message_bytes")),
                                       &limits, why, sizeof why);
        if (!self->tcp) {
            snprintf(err, errlen, "node %s: %s", node->id, why);
            return -1;
        }
        return 0;
    }
    self->buffers = malloc((size_t)DATAGRAMS * DATAGRAM_MAX);
    if (!self->buffers) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    return 0;
}

static int s_fd(drv_node_t *node)
{
    syslog_t *self = node->state;
    return !self ? -1 : self->tcp ? drv_syslog_tcp_fd(self->tcp) : self->fd;
}

//  One message into the batch: its record built in the batch zone (with
//  the sender's address in its resource when the DAG wants it, docs/kubernetes.md).
static void s_take(syslog_t *self, const char *text, size_t len, int64_t now_ms, const char *peer)
{
    drv_syslog_msg_t msg;
    drv_syslog_parse(text, len, now_ms, &msg);
    msg.observed_ns = drv_time_wall_ns();
    if (self->count == self->cap) {
        size_t cap = self->cap ? 2 * self->cap : DATAGRAMS;
        msgpack_object *grown = realloc(self->records, cap * sizeof *grown);
        if (!grown) {
            self->failed = true;
            return;
        }
        self->records = grown;
        self->cap = cap;
    }
    msgpack_object *record = &self->records[self->count];
    if (drv_syslog_object(&msg, self->zone, record) == 0) {
        drv_node_put_peer(self->node, record, 1, peer, peer ? strlen(peer) : 0);
        self->count++;
    } else {
        self->failed = true;
    }
}

static void s_on_message(void *arg, const char *text, size_t len, const char *peer)
{
    s_take(arg, text, len, drv_time_wall_ms(), peer);
}

static void s_on_refused(void *arg)
{
    ((syslog_t *)arg)->refused++;
}

//  Hands the batch on (records are counted in; one that could not be built is an error).
static int s_emit(drv_node_t *node, syslog_t *self)
{
    if (self->failed) {
        drv_node_count_refused(node);
    }
    for (; self->refused > 0; self->refused--) {
        drv_node_count_refused(node);
    }
    if (self->count > 0 && !drv_node_emit_objects(node, self->records, self->count)) {
        drv_node_count_dropped(node, self->count); // a full disk buffer: the socket is paused, this was read before
        return 0;
    }
    return (int)self->count;
}

static void s_begin(drv_node_t *node, syslog_t *self)
{
    self->zone = drv_node_batch_zone(node);
    self->count = 0;
    self->failed = false;
}

static int s_readable(drv_node_t *node)
{
    syslog_t *self = node->state;
    if (self->tcp) {
        s_begin(node, self);
        drv_syslog_tcp_run(self->tcp, DATAGRAMS, s_on_message, s_on_refused, self);
        return s_emit(node, self);
    }
    struct mmsghdr msgs[DATAGRAMS];
    struct iovec iovs[DATAGRAMS];
    struct sockaddr_storage from[DATAGRAMS];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < DATAGRAMS; i++) {
        iovs[i] = (struct iovec){self->buffers + (size_t)i * DATAGRAM_MAX, DATAGRAM_MAX};
        msgs[i].msg_hdr.msg_iov = &iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &from[i];
        msgs[i].msg_hdr.msg_namelen = sizeof from[i];
    }
    int n = recvmmsg(self->fd, msgs, DATAGRAMS, MSG_DONTWAIT, NULL);
    if (n <= 0) {
        return 0; // another instance took them, or nothing yet
    }
    s_begin(node, self);
    int64_t now_ms = drv_time_wall_ms();
    bool peers = drv_node_wants_peer(node);
    for (int i = 0; i < n; i++) {
        char peer[64] = "";
        if (peers) {
            drv_conn_addr_text((struct sockaddr *)&from[i], peer, sizeof peer);
        }
        s_take(self, iovs[i].iov_base, msgs[i].msg_len, now_ms, peer);
    }
    return s_emit(node, self);
}

static int64_t s_timeout_ms(drv_node_t *node)
{
    syslog_t *self = node->state;
    return self->tcp ? drv_syslog_tcp_timeout_ms(self->tcp) : -1;
}

//  UDP: what this instance leaves in the socket is read by the instances
//  that stay. TCP: see drv_syslog_tcp.h.
static void s_drain(drv_node_t *node)
{
    syslog_t *self = node->state;
    if (self->tcp) {
        drv_syslog_tcp_drain(self->tcp);
    }
    if (self->fd >= 0) {
        close(self->fd);
        self->fd = -1;
    }
}

static void s_destroy(drv_node_t *node)
{
    syslog_t *self = node->state;
    if (!self) {
        return;
    }
    if (self->fd >= 0) {
        close(self->fd); // this instance's copy; droverd keeps the socket
    }
    drv_syslog_tcp_destroy(&self->tcp);
    free(self->records);
    free(self->buffers);
    free(self);
}

const drv_node_kind_t drv_receiver_syslog = {
    .schema = &drv_schema_receiver_syslog,
    .init = s_init,
    .fd = s_fd,
    .readable = s_readable,
    .timeout_ms = s_timeout_ms,
    .drain = s_drain,
    .destroy = s_destroy,
    .pauses_when_backlogged = true,
};
