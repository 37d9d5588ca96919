/*  drv_otlp_build_internal — what drv_otlp_build.c (grouping records into a
    request) and drv_otlp_build_records.c (each record and value) share. */
#ifndef DRV_OTLP_BUILD_INTERNAL_H
#define DRV_OTLP_BUILD_INTERNAL_H

#include "drv_otlp_build.h"

#include <stdbool.h>

typedef struct {
    msgpack_zone *zone; // everything built lives here
} build_t;

//  A message of descriptor's type, initialised, in the zone (NULL: no memory).
void *drv_otlp_new(build_t *b, const ProtobufCMessageDescriptor *descriptor);
//  Room for n pointers in the zone.
void *drv_otlp_array(build_t *b, size_t n);
//  The value of key (len bytes) in a msgpack map, or NULL; drv_otlp_get
//  takes a literal key, whose length is known at compile time.
const msgpack_object *drv_otlp_get_n(const msgpack_object *map, const char *key, size_t len);
#define drv_otlp_get(map, literal) drv_otlp_get_n((map), (literal), sizeof(literal) - 1)
//  A msgpack string as a protobuf string; "" for anything else.
char *drv_otlp_string_of(build_t *b, const msgpack_object *o);
//  The attributes of a record: its map (NULL: none), then every key in
//  extras[0..n) whose name the map does not have. Returns 0 or -1.
int drv_otlp_attributes(build_t *b, const msgpack_object *map, const msgpack_object_kv *const *extras, size_t n,
                        otlp_kv_t ***out, size_t *count);
//  A hex string as id bytes ({0, NULL} for anything else).
ProtobufCBinaryData drv_otlp_id(build_t *b, const msgpack_object *o);
//  The record as a LogRecord or a Span; extras is room for as many
//  pointers as the record has keys. NULL: no memory.
otlp_log_t *drv_otlp_build_log(build_t *b, const msgpack_object *record, const msgpack_object_kv **extras);
otlp_span_t *drv_otlp_build_span(build_t *b, const msgpack_object *record, const msgpack_object_kv **extras);
//  drv_otlp_syslog.c: a receiver:syslog record's time and severity, where
//  the LogRecord has none of its own.
void drv_otlp_syslog_fill(build_t *b, const msgpack_object *record, otlp_log_t *log);

//  drv_otlp_build_metrics.c: a metric record's type; the Metric of the
//  record of its first point (room for points); each record as a point of
//  that Metric (0, or -1 out of memory).
typedef enum {
    DRV_METRIC_NONE = 0,
    DRV_METRIC_GAUGE,
    DRV_METRIC_SUM,
    DRV_METRIC_HISTOGRAM,
    DRV_METRIC_EXPONENTIAL_HISTOGRAM,
    DRV_METRIC_SUMMARY
} drv_otlp_metric_kind_t;
drv_otlp_metric_kind_t drv_otlp_metric_kind(const msgpack_object *record);
otlp_metric_t *drv_otlp_build_metric(build_t *b, const msgpack_object *record, size_t points);
int drv_otlp_build_point(build_t *b, otlp_metric_t *metric, const msgpack_object *record);

#endif
