/*  drover-bench's OTLP/gRPC side (B19, B20).

      grpc-call HOST PORT SECONDS CONNECTIONS STREAMS logs|metrics [RECORDS]
          unary Export calls over h2c (libnghttp2 as the client), flat out:
          CONNECTIONS connections, each keeping STREAMS calls in flight; a
          logs call carries the otlp-post request (RECORDS LogRecords of
          ~300 bytes), a metrics call RECORDS gauge data points with two
          attributes each. Prints calls, ok, failed, items (records or
          points) and items/s.
      metrics-loop SECONDS [RECORDS]
          B20's limit: unpacks and packs the metrics request with protobuf-c
          in a loop on one core; prints points/s. */
#include "drv_bench.h"
#include "drv_otlp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

//  A metrics request of n gauge points (protobuf bytes, malloc'd).
static uint8_t *s_metrics_request(int n, size_t *size)
{
    otlp_metrics_request_t request = OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_SERVICE_REQUEST__INIT;
    otlp_resource_metrics_t rm = OPENTELEMETRY__PROTO__METRICS__V1__RESOURCE_METRICS__INIT;
    otlp_scope_metrics_t sm = OPENTELEMETRY__PROTO__METRICS__V1__SCOPE_METRICS__INIT;
    otlp_metric_t metric = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__INIT;
    Opentelemetry__Proto__Metrics__V1__Gauge gauge = OPENTELEMETRY__PROTO__METRICS__V1__GAUGE__INIT;
    otlp_number_point_t *points = calloc((size_t)n, sizeof *points);
    otlp_number_point_t **point_ptrs = calloc((size_t)n, sizeof *point_ptrs);
    otlp_kv_t *kvs = calloc((size_t)n * 2, sizeof *kvs);
    otlp_any_t *values = calloc((size_t)n * 2, sizeof *values);
    otlp_kv_t **attrs = calloc((size_t)n * 2, sizeof *attrs);
    char(*hosts)[32] = calloc((size_t)n, sizeof *hosts);
    for (int i = 0; i < n; i++) {
        otlp_number_point_t init = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__INIT;
        points[i] = init;
        for (int k = 0; k < 2; k++) {
            otlp_kv_t kv = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
            otlp_any_t any = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
            kvs[2 * i + k] = kv;
            values[2 * i + k] = any;
            kvs[2 * i + k].value = &values[2 * i + k];
            attrs[2 * i + k] = &kvs[2 * i + k];
        }
        snprintf(hosts[i], sizeof hosts[i], "web-%d.example.internal", i);
        kvs[2 * i].key = "host";
        values[2 * i].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        values[2 * i].string_value = hosts[i];
        kvs[2 * i + 1].key = "cpu";
        values[2 * i + 1].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
        values[2 * i + 1].int_value = i % 64;
        points[i].attributes = &attrs[2 * i];
        points[i].n_attributes = 2;
        points[i].time_unix_nano = 1700000000000000000ULL + (uint64_t)i;
        points[i].start_time_unix_nano = 1700000000000000000ULL;
        points[i].value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
        points[i].as_double = 0.25 * i;
        point_ptrs[i] = &points[i];
    }
    gauge.data_points = point_ptrs;
    gauge.n_data_points = (size_t)n;
    metric.name = "system.cpu.utilization";
    metric.unit = "1";
    metric.data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE;
    metric.gauge = &gauge;
    otlp_metric_t *metrics[] = {&metric};
    sm.metrics = metrics;
    sm.n_metrics = 1;
    otlp_scope_metrics_t *sms[] = {&sm};
    rm.scope_metrics = sms;
    rm.n_scope_metrics = 1;
    otlp_resource_metrics_t *rms[] = {&rm};
    request.resource_metrics = rms;
    request.n_resource_metrics = 1;
    *size = protobuf_c_message_get_packed_size(&request.base);
    uint8_t *out = malloc(*size);
    protobuf_c_message_pack(&request.base, out);
    free(points);
    free(point_ptrs);
    free(kvs);
    free(values);
    free(attrs);
    free(hosts);
    return out;
}

int drv_bench_metrics_loop(double seconds, int records)
{
    size_t size;
    uint8_t *wire = s_metrics_request(records, &size);
    drv_bench_pb_loop(&opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__descriptor, wire,
                      size, seconds, records, "points");
    free(wire);
    return 0;
}

//  ---- the gRPC client

typedef struct {
    const uint8_t *body; // the framed message, shared by every call
    size_t size;
    const char *path;
    double deadline; // no new call after it
    long calls, ok, failed;
} load_t;

typedef struct {
    load_t *load;
    int fd;
    nghttp2_session *session;
    int in_flight;
    bool dead;
} conn_t;

typedef struct {
    size_t sent;
    int status; // grpc-status (-1: none yet)
} call_t;

static ssize_t s_send(nghttp2_session *session, const uint8_t *data, size_t length, int flags, void *arg)
{
    (void)session;
    (void)flags;
    conn_t *c = arg;
    ssize_t n = send(c->fd, data, length, MSG_NOSIGNAL);
    if (n < 0) {
        return errno == EAGAIN || errno == EWOULDBLOCK ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return n;
}

static ssize_t s_recv(nghttp2_session *session, uint8_t *buf, size_t length, int flags, void *arg)
{
    (void)session;
    (void)flags;
    conn_t *c = arg;
    ssize_t n = recv(c->fd, buf, length, 0);
    if (n < 0) {
        return errno == EAGAIN || errno == EWOULDBLOCK ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return n == 0 ? NGHTTP2_ERR_EOF : n;
}

static ssize_t s_body(nghttp2_session *session, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                      nghttp2_data_source *source, void *arg)
{
    (void)session;
    (void)id;
    conn_t *c = arg;
    call_t *call = source->ptr;
    size_t left = c->load->size - call->sent;
    size_t n = left < length ? left : length;
    memcpy(buf, c->load->body + call->sent, n);
    call->sent += n;
    if (call->sent == c->load->size) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return (ssize_t)n;
}

static void s_call(conn_t *c)
{
    call_t *call = calloc(1, sizeof *call);
    call->status = -1;
    const char *path = c->load->path;
    nghttp2_nv head[] = {
        {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":authority", (uint8_t *)"bench", 10, 5, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"te", (uint8_t *)"trailers", 2, 8, NGHTTP2_NV_FLAG_NONE},
    };
    nghttp2_data_provider body = {.source.ptr = call, .read_callback = s_body};
    if (nghttp2_submit_request(c->session, NULL, head, 6, &body, call) < 0) {
        free(call);
        c->dead = true;
        return;
    }
    c->in_flight++;
    c->load->calls++;
}

static int s_on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                       const uint8_t *value, size_t valuelen, uint8_t flags, void *arg)
{
    (void)flags;
    (void)arg;
    call_t *call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (call && namelen == 11 && !memcmp(name, "grpc-status", 11)) {
        call->status = valuelen == 1 && value[0] == '0' ? 0 : 1;
    }
    return 0;
}

static int s_on_close(nghttp2_session *session, int32_t id, uint32_t error_code, void *arg)
{
    conn_t *c = arg;
    call_t *call = nghttp2_session_get_stream_user_data(session, id);
    if (!call) {
        return 0;
    }
    if (call->status == 0 && error_code == NGHTTP2_NO_ERROR) {
        c->load->ok++;
    } else {
        c->load->failed++;
    }
    free(call);
    c->in_flight--;
    if (drv_bench_now() < c->load->deadline && !c->dead) {
        s_call(c);
    }
    return 0;
}

static int s_connect(const char *host, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &addr.sin_addr);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int drv_bench_grpc_call(const char *host, int port, double seconds, int connections, int streams, const char *signal,
                        int records)
{
    bool metrics = !strcmp(signal, "metrics");
    size_t size;
    uint8_t *message = metrics ? s_metrics_request(records, &size) : drv_bench_otlp_logs_request(0, records, &size);
    uint8_t *framed = malloc(size + 5);
    framed[0] = 0;
    framed[1] = (uint8_t)(size >> 24);
    framed[2] = (uint8_t)(size >> 16);
    framed[3] = (uint8_t)(size >> 8);
    framed[4] = (uint8_t)size;
    memcpy(framed + 5, message, size);
    free(message);
    load_t load = {.body = framed,
                   .size = size + 5,
                   .path = metrics ? "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
                                   : "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                   .deadline = drv_bench_now() + seconds};
    nghttp2_session_callbacks *callbacks;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_send_callback(callbacks, s_send);
    nghttp2_session_callbacks_set_recv_callback(callbacks, s_recv);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, s_on_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, s_on_close);
    conn_t *conns = calloc((size_t)connections, sizeof *conns);
    struct pollfd *fds = calloc((size_t)connections, sizeof *fds);
    for (int i = 0; i < connections; i++) {
        conns[i].load = &load;
        conns[i].fd = s_connect(host, port);
        if (conns[i].fd < 0) {
            fprintf(stderr, "grpc-call: cannot connect to %s:%d\n", host, port);
            return 1;
        }
        nghttp2_session_client_new(&conns[i].session, callbacks, &conns[i]);
        nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
        nghttp2_submit_settings(conns[i].session, NGHTTP2_FLAG_NONE, settings, 1);
        for (int k = 0; k < streams; k++) {
            s_call(&conns[i]);
        }
    }
    double start = drv_bench_now();
    for (;;) {
        int live = 0;
        for (int i = 0; i < connections; i++) {
            conn_t *c = &conns[i];
            if (!c->dead && (c->in_flight > 0 || drv_bench_now() < load.deadline)) {
                live++;
            }
            fds[i].fd = c->dead ? -1 : c->fd;
            fds[i].events = POLLIN | (nghttp2_session_want_write(c->session) ? POLLOUT : 0);
        }
        if (live == 0 || drv_bench_now() > load.deadline + 5) {
            break;
        }
        poll(fds, (nfds_t)connections, 100);
        for (int i = 0; i < connections; i++) {
            conn_t *c = &conns[i];
            if (c->dead) {
                continue;
            }
            if (nghttp2_session_recv(c->session) != 0 || nghttp2_session_send(c->session) != 0) {
                c->dead = true;
                load.failed += c->in_flight;
            }
        }
    }
    double elapsed = drv_bench_now() - start;
    printf("calls=%ld ok=%ld failed=%ld items=%ld items_per_sec=%.0f\n", load.calls, load.ok, load.failed,
           load.ok * records, load.ok * records / elapsed);
    for (int i = 0; i < connections; i++) {
        nghttp2_session_del(conns[i].session);
        close(conns[i].fd);
    }
    nghttp2_session_callbacks_del(callbacks);
    free(conns);
    free(fds);
    free(framed);
    return 0;
}
