/*  drv_schemas — what each node kind's config takes, as data, one file per
    kind (drv_schema_KIND.c; its code is worker/nodes/drv_KIND.c), with the
    checks several kinds share. The lowest floor of the worker: it needs
    nothing but common/, so droverd and droverctl link it (drover_schemas)
    and not the data plane. */
#ifndef DRV_SCHEMAS_H
#define DRV_SCHEMAS_H

#include "drover/drv_node_schema.h"

#include "drover/drv_ottl.h"

#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>

extern const drv_node_schema_t drv_schema_receiver_hostmetrics, drv_schema_exporter_prometheus_remote_write,
    drv_schema_exporter_s3, drv_schema_receiver_prometheus_remote_write, drv_schema_receiver_prometheus;
extern const drv_node_schema_t drv_schema_receiver_zmq, drv_schema_receiver_generator, drv_schema_receiver_syslog,
    drv_schema_receiver_http, drv_schema_receiver_otlp, drv_schema_processor_filter, drv_schema_processor_transform,
    drv_schema_processor_route, drv_schema_processor_lua, drv_schema_exporter_file, drv_schema_exporter_zmq,
    drv_schema_exporter_null, drv_schema_exporter_http, drv_schema_exporter_otlp, drv_schema_processor_parse,
    drv_schema_receiver_file, drv_schema_receiver_journald, drv_schema_receiver_kafka, drv_schema_exporter_kafka,
    drv_schema_processor_kubernetes;

//  processor:kubernetes's metadata attributes, NULL-terminated (drv_schema_processor_kubernetes.c).
extern const char *const drv_kubernetes_metadata[];

//  Registers every kind's schema with the spec validator (drv_spec_set_kinds).
//  Every program that validates specs calls it once at start.
void drv_schemas_register(void);

//  ---- the HTTP receivers' keys (drv_schema_http.c)
//  Rules of the config keys both take: endpoint (host:port; example shows
//  one), max_body_bytes (at least 1) and connections.
void drv_http_node_check(drv_spec_check_t *check, const char *node_path, const json_t *config, const char *example);
//  config.path: one path a receiver serves (it starts with /, holds no ?, # or space).
void drv_http_node_check_path(drv_spec_check_t *check, const char *node_path, const json_t *config);

//  ---- conditions, of processor:filter and processor:route (drv_schema_condition.c)
#define DRV_CONDITION_OPS "eq ne lt le gt ge exists"
//  The ops, in drv_op_t's order (dag/drv_condition.h).
extern const char *const drv_condition_ops[7];
//  The rules of a condition given as a JSON map at path (under node_path),
//  for spec checks: field a non-empty string, op one of the ops, value
//  required unless op is exists. With keys_checked, only the last (the
//  node's schema checked field and op).
void drv_condition_check(drv_spec_check_t *check, const char *node_path, const char *path, const json_t *when,
                         bool keys_checked);

//  ---- processor:parse's pattern (drv_schema_processor_parse.c)
//  pattern compiled with PCRE2 (UTF; bytes that are not UTF-8 never match
//  a character): a pcre2_code * the caller frees with pcre2_code_free, or
//  NULL with why in err (it does not compile, or names no group).
void *drv_parse_compile(const char *pattern, char *err, size_t errlen);

//  ---- every exporter's queue (drv_schema_queue.c)
#define DRV_QUEUE_MIN_BYTES 1024LL
#define DRV_QUEUE_MAX_BYTES (16LL * 1024 * 1024 * 1024)
#define DRV_QUEUE_KEY                                                                                                  \
    {                                                                                                                  \
        .key = "queue", .kind = DRV_KEY_OBJECT,                                                                        \
        .doc = "{max_bytes, when_full: block or drop_oldest}: what it may hold of what it has not delivered while "    \
               "the other exporters go on (max_bytes: 64 MiB of records; with a disk buffer, how far behind the "      \
               "others it may fall in the log, the buffer's max_bytes by default); full, it blocks (the pipeline "     \
               "pushes back) or drops its oldest records, counted"                                                     \
    }
//  The rules of config.queue (absent: the kind's defaults, not in the normalized spec).
void drv_queue_check(drv_spec_check_t *check, const char *node_path, const json_t *config);

//  ---- the batching exporters' keys (drv_schema_export.c)
#define DRV_EXPORT_URL_MAX 2048 // an endpoint with the longest signal path
//  The config keys both exporters take, for their schemas: compression,
//  headers, batch, retry, tls, timeout_ms (endpoint and the format's own
//  keys are the kind's).
#define DRV_EXPORT_KEYS                                                                                                \
    {.key = "compression",                                                                                             \
     .kind = DRV_KEY_CHOICE,                                                                                           \
     .fallback = "\"gzip\"",                                                                                           \
     .choices = "gzip none",                                                                                           \
     .doc = "gzip or none: how bodies are sent"},                                                                      \
        DRV_EXPORT_HEADERS_KEY, DRV_EXPORT_BATCH_KEY, DRV_EXPORT_TAIL_KEYS
//  Its parts, for a protocol that says how its bodies are compressed and
//  what batches count (exporter:prometheus_remote_write).
#define DRV_EXPORT_HEADERS_KEY                                                                                         \
    {                                                                                                                  \
        .key = "headers", .kind = DRV_KEY_STRING_MAP, .fallback = "{}", .secret = true,                                \
        .doc = "headers sent with every post (Authorization...); values may be ${file:PATH} or ${env:NAME}, "          \
               "shown only to token holders"                                                                           \
    }
#define DRV_EXPORT_BATCH_KEY                                                                                           \
    {                                                                                                                  \
        .key = "batch", .kind = DRV_KEY_OBJECT, .fallback = "{}",                                                      \
        .doc = "{max_records: 512, max_bytes: 1048576, max_delay_ms: 200}: a batch closes at the first reached"        \
    }
#define DRV_EXPORT_TAIL_KEYS                                                                                           \
    {.key = "retry",                                                                                                   \
     .kind = DRV_KEY_OBJECT,                                                                                           \
     .fallback = "{}",                                                                                                 \
     .doc = "{initial_ms: 100, max_ms: 5000, max_elapsed_secs: 300}: backoff (doubling, +-20%), and when a "           \
            "failing batch is given up (0: never)"},                                                                   \
        {.key = "tls",                                                                                                 \
         .kind = DRV_KEY_OBJECT,                                                                                       \
         .fallback = "{}",                                                                                             \
         .doc = "{ca_file: PATH, insecure_skip_verify: false}: the CA that signs the backend's certificate, or no "    \
                "check"},                                                                                              \
        {.key = "timeout_ms",                                                                                          \
         .kind = DRV_KEY_NONNEG_INT,                                                                                   \
         .fallback = "30000",                                                                                          \
         .maximum = 3600000,                                                                                           \
         .doc = "how long one post may take before it is retried"},                                                    \
        DRV_QUEUE_KEY

//  batch's and retry's keys: their bounds, and the defaults the normalized
//  config shows (an instance reads them through the same tables).
typedef struct {
    const char *key;
    int64_t minimum;
    int64_t maximum;
    int64_t fallback;
} drv_export_bound_t;
extern const drv_export_bound_t drv_export_batch_keys[];
extern const drv_export_bound_t drv_export_retry_keys[];
//  The rules of those keys and of endpoint (an http:// or https:// URL).
void drv_export_check(drv_spec_check_t *check, const char *node_path, const json_t *config);
//  The rules of a client's tls: {ca_file, insecure_skip_verify}.
void drv_tls_check(drv_spec_check_t *check, const char *node_path, const json_t *tls);
//  Fills the normalized config's batch, retry and tls with their defaults,
//  so that what GET shows is what an instance uses (a kind's `complete`).
void drv_export_complete(drv_spec_check_t *check, const char *node_path, json_t *normalized);

//  ---- OTTL conditions (drv_schema_ottl.c; worker/kit/drv_ottl_eval.c evaluates them, docs/ottl.md)
//  text (a condition, or a statement) parsed and its patterns compiled
//  (each call's compiled, a pcre2_code): 0, or -1 with what is wrong and
//  where in err.
int drv_ottl_compile(const char *text, bool statement, drv_ottl_node_t **out, char *err, size_t errlen);
//  The language's reference (Markdown): docs/nodes.md carries it under
//  processor:transform, droverctl explain prints it for statements, conditions, routes.
extern const char drv_ottl_reference[];
//  A compiled tree freed, its patterns with it.
void drv_ottl_release(drv_ottl_node_t *tree);
//  A condition or statement (a string) or a non-empty list of them at
//  node_path.path, each compiled: a problem named for every one that is
//  not. 0 or -1.
int drv_ottl_check(drv_spec_check_t *check, const char *node_path, const char *path, const json_t *conditions,
                   bool statements);

//  ---- exporter:s3's key template (drv_schema_exporter_s3.c; worker/s3/drv_s3_key.c fills it in)
//  The field at text: {signal} 0, {instance} 1, {seq} 2, {ext} 3 (its
//  length in *len), or -1.
int drv_s3_key_field(const char *text, size_t *len);

//  ---- the Kafka kinds' keys (drv_schema_kafka.c)
#define DRV_KAFKA_FORMATS "otlp_proto otlp_json ndjson msgpack"
#define DRV_KAFKA_KEYS                                                                                                 \
    {.key = "brokers",                                                                                                 \
     .kind = DRV_KEY_STRING_LIST,                                                                                      \
     .required = true,                                                                                                 \
     .doc = "[\"host:port\", ...]: where the cluster is first reached"},                                               \
        {.key = "format",                                                                                              \
         .kind = DRV_KEY_CHOICE,                                                                                       \
         .fallback = "\"otlp_proto\"",                                                                                 \
         .choices = DRV_KAFKA_FORMATS,                                                                                 \
         .doc = "a message is an OTLP Export...Request (otlp_proto: protobuf, as the OpenTelemetry Collector "         \
                "writes it; otlp_json), or one record (ndjson: a JSON object; msgpack: a map)"},                       \
        {.key = "tls",                                                                                                 \
         .kind = DRV_KEY_OBJECT,                                                                                       \
         .doc = "{ca_file: PATH, insecure_skip_verify: false}: TLS to the brokers (not given: plaintext)"},            \
    {                                                                                                                  \
        .key = "sasl", .kind = DRV_KEY_OBJECT, .secret = true, .secret_fields = "password",                            \
        .doc = "{mechanism: PLAIN|SCRAM-SHA-256|SCRAM-SHA-512, username, password}: password may be "                  \
               "${file:PATH} or ${env:NAME}, shown only to token holders"                                              \
    }
//  The rules of brokers, tls and sasl.
void drv_kafka_check(drv_spec_check_t *check, const char *node_path, const json_t *config);

#endif
