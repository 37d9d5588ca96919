/*  drv_otlp — OTLP inside drover. The message definitions are ours, written
    from the OpenTelemetry protocol specification (proto/, compiled by
    protoc-c at build time); this header gives their long generated names
    short ones. The protobuf-c structs are the one model every OTLP path
    goes through:

        protobuf bytes <-> structs   protobuf-c
        OTLP/JSON text <-> structs   drv_otlp_json.c
        structs        <-> records   drv_otlp_records.c  (docs/operations.md's mapping) */
#ifndef DRV_OTLP_H
#define DRV_OTLP_H

#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"
#include "google/rpc/status.pb-c.h"

typedef Opentelemetry__Proto__Common__V1__AnyValue otlp_any_t;
typedef Opentelemetry__Proto__Common__V1__ArrayValue otlp_array_t;
typedef Opentelemetry__Proto__Common__V1__KeyValueList otlp_kvlist_t;
typedef Opentelemetry__Proto__Common__V1__KeyValue otlp_kv_t;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope otlp_scope_t;
typedef Opentelemetry__Proto__Resource__V1__Resource otlp_resource_t;
typedef Opentelemetry__Proto__Logs__V1__ResourceLogs otlp_resource_logs_t;
typedef Opentelemetry__Proto__Logs__V1__ScopeLogs otlp_scope_logs_t;
typedef Opentelemetry__Proto__Logs__V1__LogRecord otlp_log_t;
typedef Opentelemetry__Proto__Trace__V1__ResourceSpans otlp_resource_spans_t;
typedef Opentelemetry__Proto__Trace__V1__ScopeSpans otlp_scope_spans_t;
typedef Opentelemetry__Proto__Trace__V1__Span otlp_span_t;
typedef Opentelemetry__Proto__Trace__V1__Span__Event otlp_event_t;
typedef Opentelemetry__Proto__Trace__V1__Span__Link otlp_link_t;
typedef Opentelemetry__Proto__Trace__V1__Status otlp_status_t;
typedef Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest otlp_logs_request_t;
typedef Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceResponse otlp_logs_response_t;
typedef Opentelemetry__Proto__Collector__Logs__V1__ExportLogsPartialSuccess otlp_logs_partial_t;
typedef Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceRequest otlp_traces_request_t;
typedef Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceResponse otlp_traces_response_t;
typedef Opentelemetry__Proto__Collector__Trace__V1__ExportTracePartialSuccess otlp_traces_partial_t;
typedef Opentelemetry__Proto__Metrics__V1__ResourceMetrics otlp_resource_metrics_t;
typedef Opentelemetry__Proto__Metrics__V1__ScopeMetrics otlp_scope_metrics_t;
typedef Opentelemetry__Proto__Metrics__V1__Metric otlp_metric_t;
typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint otlp_number_point_t;
typedef Opentelemetry__Proto__Metrics__V1__HistogramDataPoint otlp_histogram_point_t;
typedef Opentelemetry__Proto__Metrics__V1__ExponentialHistogramDataPoint otlp_exp_histogram_point_t;
typedef Opentelemetry__Proto__Metrics__V1__ExponentialHistogramDataPoint__Buckets otlp_exp_buckets_t;
typedef Opentelemetry__Proto__Metrics__V1__SummaryDataPoint otlp_summary_point_t;
typedef Opentelemetry__Proto__Metrics__V1__SummaryDataPoint__ValueAtQuantile otlp_quantile_t;
typedef Opentelemetry__Proto__Metrics__V1__Exemplar otlp_exemplar_t;
typedef Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest otlp_metrics_request_t;
typedef Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceResponse otlp_metrics_response_t;
typedef Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsPartialSuccess otlp_metrics_partial_t;
typedef Google__Rpc__Status otlp_status_body_t;

typedef enum { DRV_OTLP_LOGS = 0, DRV_OTLP_TRACES, DRV_OTLP_METRICS } drv_otlp_signal_t;

struct msgpack_zone;

//  An export request of either signal, as protobuf-c unpacked it into one
//  region (a msgpack zone: nothing freed one by one), or as drv_otlp_json
//  built it, message by message; either way drv_otlp_request_free frees it.
typedef struct {
    drv_otlp_signal_t signal;
    union {
        otlp_logs_request_t *logs;
        otlp_traces_request_t *traces;
        otlp_metrics_request_t *metrics;
        ProtobufCMessage *message;
    };
    struct msgpack_zone *zone; // NULL: malloc'd message by message
    //  What a log record that does not say when it was observed gets as its
    //  observed_time_unix_nano (drv_otlp_to_objects): when the receiver took
    //  it. 0: left as sent.
    uint64_t observed_ns;
} drv_otlp_request_t;

//  What a decode returns when memory ran out: the request is not at fault
//  and is refused with "retry" (503), never half-taken.
#define DRV_OTLP_NO_MEMORY (-2)

//  Unpacks protobuf bytes, checked first by drv_pbcheck (nesting and what
//  the decode allocates are bounded). Returns 0, -1 with the reason in err
//  when they are not a request, or DRV_OTLP_NO_MEMORY.
int drv_otlp_unpack(drv_otlp_signal_t signal, const void *data, size_t size, drv_otlp_request_t *out, char *err,
                    size_t errlen);
void drv_otlp_request_free(drv_otlp_request_t *request);

//  A syslog severity (0 emerg to 7 debug; past 7: debug) as OpenTelemetry's
//  syslog mapping gives it: its SeverityNumber, and its name in *name
//  (drv_otlp_syslog.c).
int drv_otlp_syslog_severity(unsigned severity, const char **name);

#endif
