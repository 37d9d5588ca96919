/*  drv_telemetry_otlp — droverd's own telemetry as OTLP requests
    (docs/operations.md, "Its own telemetry"): the series of /metrics (the
    text droverd renders, drv_metrics.c) as one ExportMetricsServiceRequest
    — counters as cumulative monotonic sums, gauges as gauges, histograms
    as explicit-bucket histograms, each series' labels its attributes —
    and log lines as one ExportLogsServiceRequest, both under droverd's
    resource. */
#ifndef DRV_TELEMETRY_OTLP_H
#define DRV_TELEMETRY_OTLP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *key, *value;
} drv_telemetry_attr_t;

typedef struct {
    int64_t wall_ms;
    int level; // DRV_LOG_*
    char *message;
} drv_telemetry_line_t;

//  The metrics of text (Prometheus text format as /metrics renders it),
//  cumulative since start_ns, taken at now_ns: a malloc'd protobuf in
//  *out. 0, or -1 when memory ran out.
int drv_telemetry_metrics(const char *text, const drv_telemetry_attr_t *resource, size_t attrs, uint64_t start_ns,
                          uint64_t now_ns, uint8_t **out, size_t *len);

//  n log lines: a malloc'd protobuf in *out. 0 or -1.
int drv_telemetry_logs(const drv_telemetry_line_t *lines, size_t n, const drv_telemetry_attr_t *resource, size_t attrs,
                       uint8_t **out, size_t *len);

#endif
