/*  Shared by drv_otlp_json*.c: the parse's context (the path of the field
    being read, for errors) and how scalar fields are read. */
#ifndef DRV_OTLP_JSON_INTERNAL_H
#define DRV_OTLP_JSON_INTERNAL_H

#include "drv_otlp.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char path[256];
    char *err;
    size_t errlen;
    bool failed;
    bool out_of_memory; // the failure is ours, not the request's: refused with "retry"
} ctx_t;

//  The first failure wins: "path.field: what".
void drv_otlp_json_fail(ctx_t *c, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
//  size bytes, zeroed; NULL (and the parse failed, out of memory) when none.
void *drv_otlp_json_alloc(ctx_t *c, size_t size);
//  Enters field (or field[index], index >= 0) for error paths; returns the
//  length drv_otlp_json_leave restores.
size_t drv_otlp_json_enter(ctx_t *c, const char *field, long index);
void drv_otlp_json_leave(ctx_t *c, size_t at);
//  obj's member by its lowerCamelCase name, or by its proto (snake_case) name.
json_t *drv_otlp_json_get(const json_t *obj, const char *camel);

//  Scalar fields of obj (absent or null: the proto default). A bad value
//  fails the parse.
char *drv_otlp_json_string(ctx_t *c, const json_t *obj, const char *field);
uint64_t drv_otlp_json_uint(ctx_t *c, const json_t *obj, const char *field, uint64_t max);
int64_t drv_otlp_json_int64(ctx_t *c, const json_t *v, const char *field);
//  An enum: its number, or one of its names (names[i] is value i).
int32_t drv_otlp_json_enum(ctx_t *c, const json_t *obj, const char *field, const char *const *names, int count);
ProtobufCBinaryData drv_otlp_json_hex_id(ctx_t *c, const json_t *obj, const char *field);
ProtobufCBinaryData drv_otlp_json_base64(ctx_t *c, const json_t *v, const char *field);

//  Members of obj every signal has (drv_otlp_json.c): a list of {key,
//  value}; a list of objects, each built by make (*n counts what was built);
//  the resource and scope of a Resource… and Scope… message.
otlp_kv_t **drv_otlp_json_attributes(ctx_t *c, const json_t *obj, const char *field, size_t *n, int depth);
typedef void *(drv_otlp_json_make_fn)(ctx_t *c, const json_t *item);
void **drv_otlp_json_list(ctx_t *c, const json_t *obj, const char *field, size_t *n, drv_otlp_json_make_fn *make);
otlp_resource_t *drv_otlp_json_resource(ctx_t *c, const json_t *obj);
otlp_scope_t *drv_otlp_json_scope(ctx_t *c, const json_t *obj);

//  Writing (drv_otlp_json_write.c): value into object at key (stolen); a
//  string, an unsigned 64-bit integer (a decimal string), an integer, an
//  id (hex), each left out when empty or zero; attributes; a resource's or
//  scope's object.
void drv_otlp_jw_set(json_t *object, const char *key, json_t *value);
void drv_otlp_jw_string(json_t *object, const char *key, const char *value);
void drv_otlp_jw_u64(json_t *object, const char *key, uint64_t value);
void drv_otlp_jw_int(json_t *object, const char *key, int64_t value);
void drv_otlp_jw_id(json_t *object, const char *key, ProtobufCBinaryData id);
void drv_otlp_jw_attributes_of(json_t *object, otlp_kv_t *const *kv, size_t n);
json_t *drv_otlp_jw_resource(const otlp_resource_t *resource, const char *schema_url);
json_t *drv_otlp_jw_scope(const otlp_scope_t *scope);
//  drv_otlp_json_write_metrics.c: each ResourceMetrics appended to resources.
void drv_otlp_jw_metrics(const otlp_metrics_request_t *request, json_t *resources);

//  drv_otlp_json_metrics.c: an ExportMetricsServiceRequest from doc into
//  out (its parse failures in c); -1 only when the request itself cannot
//  be allocated.
int drv_otlp_json_metrics(ctx_t *c, const json_t *doc, drv_otlp_request_t *out);

#endif
