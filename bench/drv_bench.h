/*  drover-bench — what its parts share (drv_bench.c has the usage). */
#ifndef DRV_BENCH_H
#define DRV_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

double drv_bench_now(void); // CLOCK_MONOTONIC seconds, the clock Python's time.monotonic() reads

int drv_bench_otlp_post(const char *url, double seconds, int connections, double rate, int records, const char *log);
int drv_bench_otlp_loop(double seconds, int records);
//  A logs request of n records of ~300 bytes, seqs from first (protobuf bytes, malloc'd).
uint8_t *drv_bench_otlp_logs_request(long first, int n, size_t *size);
int drv_bench_grpc_call(const char *host, int port, double seconds, int connections, int streams, const char *signal,
                        int records);
int drv_bench_metrics_loop(double seconds, int records);
struct ProtobufCMessageDescriptor;
//  The limit the OTLP figures are measured against: unpacks and packs wire
//  (a request of items logs or points) with protobuf-c in a loop; prints
//  UNIT_per_sec.
void drv_bench_pb_loop(const struct ProtobufCMessageDescriptor *descriptor, const uint8_t *wire, size_t size,
                       double seconds, int items, const char *unit);
int drv_bench_udp_send(const char *host, int port, double seconds);
int drv_bench_udp_recv(int port, double seconds);
int drv_bench_node_loop(const char *kind, double seconds);
int drv_bench_lua_split(double seconds);
//  Prometheus remote write (drv_bench_prom.c): the protobuf-c + snappy loop, and posting.
int drv_bench_rw_loop(double seconds, int series, int samples);
int drv_bench_rw_post(const char *url, double seconds, int connections, int series, int samples);

#endif
