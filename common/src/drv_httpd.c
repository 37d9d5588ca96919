/*  drv_httpd — see the header. MHD's "external polling" with epoll: one
    descriptor for the owner's poll, MHD_run when it is readable or a
    timeout is due. A connection MHD resumes is processed by the next run,
    so a resume (an answer given later, a stream woken) makes the next
    timeout 0: the loop must not sleep on it until some other event. */
#include "drover/drv_httpd.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define DRAIN_IDLE_SECS 1 // once draining, an idle keep-alive connection has this long

typedef struct conn_t conn_t;
struct conn_t {
    struct MHD_Connection *connection;
    drv_conn_t *policy; // its record in the connection policy
    bool busy;          // between a request's head and its end
    conn_t *prev, *next;
};

struct drv_httpd_req_t {
    drv_httpd_t *httpd;
    struct MHD_Connection *connection;
    conn_t *conn;
    char method[16];
    char *url;
    drv_http_upload_t body;
    void *user;
    bool in_callback; // inside on_head/on_body: an answer is queued at once
    bool body_done;   // on_body was called
    bool answered;
    bool streaming;
    bool suspended;             // waiting for its answer (held) or parked by a stream reader
    struct MHD_Response *later; // an answer given while suspended, queued by the next run
    unsigned int later_status;
    drv_httpd_req_t *prev, *next;
};

struct drv_httpd_t {
    struct MHD_Daemon *daemon;
    drv_httpd_config_t config;
    int listen_fd; // ours until quiesced (an inherited socket)
    int epoll_fd;
    drv_conn_policy_t *policy;
    conn_t *conns;
    size_t conn_count;
    drv_httpd_req_t *reqs; // every request begun and not over
    bool resumed;          // something was resumed: run at once
    bool draining;
};

void drv_httpd_wake(drv_httpd_req_t *req)
{
    if (req->suspended) {
        req->suspended = false;
        MHD_resume_connection(req->connection);
        req->httpd->resumed = true;
    }
}

void drv_httpd_park(drv_httpd_req_t *req)
{
    if (!req->suspended) {
        req->suspended = true;
        MHD_suspend_connection(req->connection);
    }
}

//  Queues resp now; MHD_NO tells MHD to close the connection.
static enum MHD_Result s_queue(drv_httpd_req_t *req, unsigned int status, struct MHD_Response *resp)
{
    if (!resp) {
        return MHD_NO;
    }
    if (req->httpd->draining) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    enum MHD_Result rc = MHD_queue_response(req->connection, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

void drv_httpd_answer(drv_httpd_req_t *req, unsigned int status, struct MHD_Response *resp)
{
    if (req->answered) {
        if (resp) {
            MHD_destroy_response(resp);
        }
        return;
    }
    req->answered = true;
    drv_httpd_t *self = req->httpd;
    if (!req->streaming && req->conn) {
        drv_conn_policy_request(self->policy, req->conn->policy, drv_time_mono_ms()); // reading it
    }
    req->later = resp;
    req->later_status = status;
    if (!req->in_callback) {
        drv_httpd_wake(req); // the next run queues it; in a callback, its caller does
    }
}

void drv_httpd_streaming(drv_httpd_req_t *req)
{
    req->streaming = true;
    if (req->conn) {
        drv_conn_policy_stream(req->httpd->policy, req->conn->policy);
    }
}

//  Queues an answer the owner gave, if any.
static enum MHD_Result s_answer_given(drv_httpd_req_t *req)
{
    struct MHD_Response *resp = req->later;
    req->later = NULL;
    return s_queue(req, req->later_status, resp);
}

static void s_call(drv_httpd_req_t *req, drv_httpd_fn *fn)
{
    req->in_callback = true;
    fn(req->httpd->config.arg, req);
    req->in_callback = false;
}

static enum MHD_Result s_handler(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    (void)version;
    drv_httpd_t *self = cls;
    drv_httpd_req_t *req = *con_cls;
    if (!req) {
        req = calloc(1, sizeof *req);
        if (!req || !(req->url = strdup(url))) {
            free(req);
            return MHD_NO;
        }
        req->url[strcspn(req->url, "?")] = 0;
        *con_cls = req;
        req->httpd = self;
        req->connection = connection;
        snprintf(req->method, sizeof req->method, "%s", method);
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        req->conn = info ? info->socket_context : NULL;
        if (req->conn) {
            req->conn->busy = true;
        }
        req->next = self->reqs;
        if (self->reqs) {
            self->reqs->prev = req;
        }
        self->reqs = req;
        int64_t length = drv_httpd_content_length(req);
        req->body.declared = length > 0 ? (size_t)length : 0;
        s_call(req, self->config.on_head);
        return req->answered ? s_answer_given(req) : MHD_YES;
    }
    if (req->later) {
        return s_answer_given(req);
    }
    if (req->answered) {
        *upload_data_size = 0; // refused by its head: the body is discarded unread
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        drv_http_upload_add(&req->body, self->policy, self->config.max_body_bytes, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->body_done) {
        return MHD_YES; // resumed with nothing to say yet
    }
    req->body_done = true;
    if (req->body.data) {
        req->body.data[req->body.len] = 0;
    }
    if (req->conn) {
        drv_conn_policy_engine(self->policy, req->conn->policy); // ours now, until answered
    }
    s_call(req, self->config.on_body);
    drv_http_upload_release(&req->body, self->policy);
    if (req->answered) {
        return s_answer_given(req);
    }
    drv_httpd_park(req); // answered later, from the loop
    return MHD_YES;
}

static void s_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                        enum MHD_RequestTerminationCode code)
{
    (void)connection;
    (void)code;
    drv_httpd_t *self = cls;
    drv_httpd_req_t *req = *con_cls;
    if (!req) {
        return;
    }
    *con_cls = NULL;
    if (self->config.on_done) {
        self->config.on_done(self->config.arg, req);
    }
    if (req->prev) {
        req->prev->next = req->next;
    } else {
        self->reqs = req->next;
    }
    if (req->next) {
        req->next->prev = req->prev;
    }
    if (req->later) {
        MHD_destroy_response(req->later);
    }
    if (req->conn) {
        req->conn->busy = false;
        drv_conn_policy_idle(self->policy, req->conn->policy, drv_time_mono_ms());
        if (self->draining) {
            MHD_set_connection_option(req->conn->connection, MHD_CONNECTION_OPTION_TIMEOUT, DRAIN_IDLE_SECS);
        }
    }
    drv_http_upload_release(&req->body, self->policy);
    free(req->url);
    free(req);
}

static void s_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                         enum MHD_ConnectionNotificationCode code)
{
    drv_httpd_t *self = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_t *conn = calloc(1, sizeof *conn);
        if (!conn) {
            return;
        }
        conn->connection = connection;
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *addr = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        conn->policy = drv_conn_policy_open(self->policy, fd ? fd->connect_fd : -1, addr ? addr->client_addr : NULL,
                                            drv_time_mono_ms());
        conn->next = self->conns;
        if (self->conns) {
            self->conns->prev = conn;
        }
        self->conns = conn;
        self->conn_count++;
        *socket_context = conn;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        conn_t *conn = *socket_context;
        if (conn->prev) {
            conn->prev->next = conn->next;
        } else {
            self->conns = conn->next;
        }
        if (conn->next) {
            conn->next->prev = conn->prev;
        }
        self->conn_count--;
        drv_conn_policy_close(self->policy, conn->policy);
        free(conn);
        *socket_context = NULL;
    }
}

static size_t s_unescape(void *cls, struct MHD_Connection *connection, char *text)
{
    (void)connection;
    drv_httpd_t *self = cls;
    return self->config.unescape(text);
}

static void s_log(void *cls, const char *fmt, va_list args)
{
    drv_httpd_t *self = cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, args);
    line[strcspn(line, "\n")] = 0;
    if (strstr(line, "closed by remote peer") || strstr(line, "Connection reset") ||
        strstr(line, "no longer available for sending")) {
        drv_debug("%s: %s", self->config.name, line); // a client left (an event stream, a tab closed)
        return;
    }
    drv_warn("%s: %s", self->config.name, line);
}

drv_httpd_t *drv_httpd_new(const drv_httpd_config_t *config, char *err, size_t errlen)
{
    drv_httpd_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    self->config = *config;
    self->listen_fd = config->listen_fd;
    self->policy = drv_conn_policy_new(&config->limits, config->name);
    unsigned int flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    if (config->listen_fd < 0 && config->addr && config->addr->sa_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
    }
    bool tls = config->tls_cert_pem && config->tls_key_pem;
    if (tls) {
        flags |= MHD_USE_TLS;
    }
    struct MHD_OptionItem where[] = {
        config->listen_fd >= 0 ? (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, config->listen_fd, NULL}
                               : (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)config->addr},
        config->unescape ? (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)s_unescape, self}
                         : (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL},
        {MHD_OPTION_END, 0, NULL},
        {MHD_OPTION_END, 0, NULL},
        {MHD_OPTION_END, 0, NULL}};
    if (tls) {
        size_t at = where[1].option == MHD_OPTION_END ? 1 : 2;
        where[at] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)config->tls_cert_pem};
        where[at + 1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)config->tls_key_pem};
    }
    errno = 0;
    self->daemon = MHD_start_daemon(flags, 0, NULL, NULL, s_handler, self, MHD_OPTION_EXTERNAL_LOGGER, s_log, self,
                                    MHD_OPTION_ARRAY, where, MHD_OPTION_NOTIFY_COMPLETED, s_completed, self,
                                    MHD_OPTION_NOTIFY_CONNECTION, s_connection, self, MHD_OPTION_CONNECTION_TIMEOUT,
                                    (unsigned int)config->idle_secs, MHD_OPTION_CONNECTION_LIMIT,
                                    (unsigned int)(config->limits.total + config->limits.per_address), // room to evict
                                    MHD_OPTION_END);
    const union MHD_DaemonInfo *info =
        self->daemon ? MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
    if (!info) {
        snprintf(err, errlen, "%s", errno ? strerror(errno) : "libmicrohttpd cannot start");
        drv_httpd_destroy(&self, 0);
        return NULL;
    }
    self->epoll_fd = info->epoll_fd;
    return self;
}

//  Runs the server until no answer is left to send, or until flush_ms.
static void s_flush(drv_httpd_t *self, int64_t flush_ms)
{
    int64_t deadline = drv_time_mono_ms() + flush_ms;
    for (;;) {
        bool sending = false;
        for (drv_httpd_req_t *req = self->reqs; req; req = req->next) {
            sending = sending || req->answered;
        }
        int64_t left = deadline - drv_time_mono_ms();
        if (!sending || left <= 0) {
            return;
        }
        int64_t wait = drv_httpd_timeout_ms(self);
        wait = wait < 0 || wait > left ? left : wait;
        struct epoll_event event;
        epoll_wait(self->epoll_fd, &event, 1, (int)wait);
        drv_httpd_run(self);
    }
}

void drv_httpd_destroy(drv_httpd_t **self_p, int64_t flush_ms)
{
    drv_httpd_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    if (self->daemon) {
        drv_httpd_drain(self);
        for (drv_httpd_req_t *req = self->reqs; req; req = req->next) {
            if (!req->answered && req->body_done) {
                static const char gone[] = "{\"error\":{\"kind\":\"unavailable\",\"message\":\"shutting down\"}}";
                struct MHD_Response *resp =
                    MHD_create_response_from_buffer(sizeof gone - 1, (void *)gone, MHD_RESPMEM_PERSISTENT);
                if (resp) {
                    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
                }
                drv_httpd_answer(req, 503, resp);
            }
        }
        s_flush(self, flush_ms);
        //  MHD refuses to stop with a connection suspended.
        for (drv_httpd_req_t *req = self->reqs; req; req = req->next) {
            drv_httpd_wake(req);
        }
        MHD_stop_daemon(self->daemon);
    } else if (self->listen_fd >= 0) {
        close(self->listen_fd);
    }
    drv_conn_policy_destroy(&self->policy);
    free(self);
}

int drv_httpd_fd(drv_httpd_t *self)
{
    return self->draining && self->conn_count == 0 ? -1 : self->epoll_fd;
}

int drv_httpd_listen_fd(drv_httpd_t *self)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    return info ? info->listen_fd : -1;
}

int64_t drv_httpd_timeout_ms(drv_httpd_t *self)
{
    if (self->resumed) {
        return 0;
    }
    MHD_UNSIGNED_LONG_LONG ms = 0;
    int64_t mhd = MHD_get_timeout(self->daemon, &ms) == MHD_YES ? (int64_t)ms : -1;
    int64_t policy = drv_conn_policy_expire(self->policy, drv_time_mono_ms());
    return mhd < 0 ? policy : policy < 0 || mhd < policy ? mhd : policy;
}

void drv_httpd_run(drv_httpd_t *self)
{
    drv_conn_policy_expire(self->policy, drv_time_mono_ms()); // cuts the stalled: MHD then reads their end
    self->resumed = false;
    MHD_run(self->daemon);
}

void drv_httpd_drain(drv_httpd_t *self)
{
    if (self->draining) {
        return;
    }
    self->draining = true;
    MHD_socket fd = MHD_quiesce_daemon(self->daemon);
    if (fd != MHD_INVALID_SOCKET) {
        close(fd); // an inherited socket: droverd keeps it and the other instances accept
    }
    self->listen_fd = -1;
    for (conn_t *conn = self->conns; conn; conn = conn->next) {
        if (!conn->busy) {
            MHD_set_connection_option(conn->connection, MHD_CONNECTION_OPTION_TIMEOUT, DRAIN_IDLE_SECS);
        }
    }
}

drv_conn_policy_t *drv_httpd_policy(drv_httpd_t *self)
{
    return self->policy;
}

const char *drv_httpd_method(const drv_httpd_req_t *req)
{
    return req->method;
}

const char *drv_httpd_url(const drv_httpd_req_t *req)
{
    return req->url;
}

const char *drv_httpd_header(const drv_httpd_req_t *req, const char *name)
{
    return MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, name);
}

void drv_httpd_peer(const drv_httpd_req_t *req, char *out, size_t size)
{
    drv_conn_peer(req->conn ? req->conn->policy : NULL, out, size);
}

int64_t drv_httpd_content_length(const drv_httpd_req_t *req)
{
    const char *value = drv_httpd_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!value) {
        return -1;
    }
    char *end = NULL;
    errno = 0;
    long long n = strtoll(value, &end, 10);
    return errno || end == value || *end || n < 0 ? -1 : n;
}

struct MHD_Connection *drv_httpd_connection(drv_httpd_req_t *req)
{
    return req->connection;
}

drv_http_upload_t *drv_httpd_body(drv_httpd_req_t *req)
{
    return &req->body;
}

void drv_httpd_set_user(drv_httpd_req_t *req, void *user)
{
    req->user = user;
}

void *drv_httpd_user(const drv_httpd_req_t *req)
{
    return req->user;
}
