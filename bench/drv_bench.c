/*  drover-bench — load and baseline processes for the benchmarks.

      drover-bench produce ENDPOINT SECONDS [BATCH]
          PUSHes one pre-encoded batch of BATCH (64) records of ~80 bytes as
          fast as the socket accepts, for SECONDS; prints messages sent.
      drover-bench proxy FRONT BACK SECONDS
          the baseline's middle: PULL on FRONT, PUSH on BACK, bytes forwarded
          untouched (zmq_proxy's job without decoding), for SECONDS.
      drover-bench consume ENDPOINT SECONDS
          the baseline's end: PULL, count messages; prints messages/s over the
          last SECONDS-1 seconds (the first second is warm-up).

    The baseline runs producer -> tcp -> proxy -> ipc -> consumer: the same
    transports as producer -> broker -> worker in drover.

    OTLP over HTTP (otlp-post, otlp-loop): drv_bench_otlp.c; over gRPC
    (grpc-call, metrics-loop): drv_bench_grpc.c; syslog over UDP
    (udp-send, udp-recv): drv_bench_udp.c. */
#include "drv_bench.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

double drv_bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

//  64 records like {"seq": n, "level": 4, "msg": "...", "host": "..."} ~80 bytes each.
static void s_batch(msgpack_sbuffer *sbuf, int records)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sbuf, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, records);
    for (int i = 0; i < records; i++) {
        msgpack_pack_map(&pk, 4);
        msgpack_pack_str_with_body(&pk, "seq", 3);
        msgpack_pack_uint32(&pk, (uint32_t)i);
        msgpack_pack_str_with_body(&pk, "level", 5);
        msgpack_pack_int(&pk, 3 + i % 2);
        msgpack_pack_str_with_body(&pk, "msg", 3);
        msgpack_pack_str_with_body(&pk, "request served in 12 ms path=/api/v1/items", 42);
        msgpack_pack_str_with_body(&pk, "host", 4);
        msgpack_pack_str_with_body(&pk, "web-17.example", 14);
    }
}

static int s_produce(const char *endpoint, double seconds, int records)
{
    void *ctx = zmq_ctx_new();
    void *push = zmq_socket(ctx, ZMQ_PUSH);
    int linger = 0, hwm = 1000, timeout = 100; // a send that blocks is retried until the time is up
    zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(push, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(push, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
    zmq_connect(push, endpoint);
    msgpack_sbuffer sbuf;
    msgpack_sbuffer_init(&sbuf);
    s_batch(&sbuf, records);
    long sent = 0;
    double end = drv_bench_now() + seconds;
    while (drv_bench_now() < end) {
        for (int i = 0; i < 256; i++) {
            if (zmq_send(push, sbuf.data, sbuf.size, 0) >= 0) {
                sent++;
            } else {
                break; // back-pressure: look at the clock
            }
        }
    }
    printf("sent_messages=%ld bytes_per_message=%zu records_per_message=%d\n", sent, sbuf.size, records);
    msgpack_sbuffer_destroy(&sbuf);
    zmq_close(push);
    zmq_ctx_term(ctx);
    return 0;
}

static int s_proxy(const char *front, const char *back, double seconds)
{
    void *ctx = zmq_ctx_new();
    void *pull = zmq_socket(ctx, ZMQ_PULL);
    void *push = zmq_socket(ctx, ZMQ_PUSH);
    int linger = 0, timeout = 100;
    zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(push, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(pull, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_bind(pull, front);
    zmq_bind(push, back);
    double end = drv_bench_now() + seconds;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    while (drv_bench_now() < end) {
        if (zmq_msg_recv(&msg, pull, 0) >= 0) {
            zmq_msg_send(&msg, push, 0); // forwarded as is: no decode, no copy
        }
    }
    zmq_msg_close(&msg);
    zmq_close(pull);
    zmq_close(push);
    zmq_ctx_term(ctx);
    return 0;
}

static int s_consume(const char *endpoint, double seconds)
{
    void *ctx = zmq_ctx_new();
    void *pull = zmq_socket(ctx, ZMQ_PULL);
    int timeout = 100;
    zmq_setsockopt(pull, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_connect(pull, endpoint);
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    double start = drv_bench_now(), warm = start + 1.0, end = start + seconds;
    long counted = 0;
    double t0 = 0;
    while (drv_bench_now() < end) {
        if (zmq_msg_recv(&msg, pull, 0) >= 0) {
            if (drv_bench_now() >= warm) {
                if (t0 == 0) {
                    t0 = drv_bench_now();
                }
                counted++;
            }
        }
    }
    double elapsed = drv_bench_now() - (t0 ? t0 : warm);
    printf("messages_per_sec=%.0f\n", counted / (elapsed > 0 ? elapsed : 1));
    zmq_msg_close(&msg);
    zmq_close(pull);
    zmq_ctx_term(ctx);
    return 0;
}

int main(int argc, char *argv[])
{
    if (argc >= 4 && !strcmp(argv[1], "produce")) {
        return s_produce(argv[2], atof(argv[3]), argc >= 5 ? atoi(argv[4]) : 64);
    }
    if (argc >= 5 && !strcmp(argv[1], "proxy")) {
        return s_proxy(argv[2], argv[3], atof(argv[4]));
    }
    if (argc >= 4 && !strcmp(argv[1], "consume")) {
        return s_consume(argv[2], atof(argv[3]));
    }
    if (argc >= 6 && !strcmp(argv[1], "otlp-post")) {
        return drv_bench_otlp_post(argv[2], atof(argv[3]), atoi(argv[4]), atof(argv[5]),
                                   argc >= 7 ? atoi(argv[6]) : 100, argc >= 8 ? argv[7] : NULL);
    }
    if (argc >= 3 && !strcmp(argv[1], "otlp-loop")) {
        return drv_bench_otlp_loop(atof(argv[2]), argc >= 4 ? atoi(argv[3]) : 100);
    }
    if (argc >= 8 && !strcmp(argv[1], "grpc-call")) {
        return drv_bench_grpc_call(argv[2], atoi(argv[3]), atof(argv[4]), atoi(argv[5]), atoi(argv[6]), argv[7],
                                   argc >= 9 ? atoi(argv[8]) : 100);
    }
    if (argc >= 3 && !strcmp(argv[1], "metrics-loop")) {
        return drv_bench_metrics_loop(atof(argv[2]), argc >= 4 ? atoi(argv[3]) : 100);
    }
    if (argc >= 5 && !strcmp(argv[1], "udp-send")) {
        return drv_bench_udp_send(argv[2], atoi(argv[3]), atof(argv[4]));
    }
    if (argc >= 4 && !strcmp(argv[1], "udp-recv")) {
        return drv_bench_udp_recv(atoi(argv[2]), atof(argv[3]));
    }
    if (argc >= 4 && !strcmp(argv[1], "node-loop")) {
        return drv_bench_node_loop(argv[2], atof(argv[3]));
    }
    if (argc >= 5 && !strcmp(argv[1], "rw-loop")) {
        return drv_bench_rw_loop(atof(argv[2]), atoi(argv[3]), atoi(argv[4]));
    }
    if (argc >= 7 && !strcmp(argv[1], "rw-post")) {
        return drv_bench_rw_post(argv[2], atof(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    }
    if (argc >= 3 && !strcmp(argv[1], "lua-split")) {
        return drv_bench_lua_split(atof(argv[2]));
    }
    fprintf(stderr,
            "usage: drover-bench produce ENDPOINT SECONDS [BATCH] | proxy FRONT BACK SECONDS | "
            "consume ENDPOINT SECONDS | otlp-post URL SECONDS CONNECTIONS RATE [RECORDS [LOG]] | "
            "otlp-loop SECONDS [RECORDS] | grpc-call HOST PORT SECONDS CONNECTIONS STREAMS logs|metrics [RECORDS] | "
            "metrics-loop SECONDS [RECORDS] | udp-send HOST PORT SECONDS | udp-recv PORT SECONDS | "
            "node-loop transform|lua|none|ottl|ottl-lua|ottl-old|ottl-none SECONDS | lua-split SECONDS | rw-loop "
            "SECONDS SERIES SAMPLES | "
            "rw-post URL SECONDS CONNECTIONS SERIES SAMPLES\n");
    return 2;
}
