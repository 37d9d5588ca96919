/*  exporter:kafka's schema (worker/nodes/drv_exporter_kafka.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"
#include "drover/drv_path.h"

#include <string.h>

//  A topic: Kafka's characters (letters, digits, . _ -), at most 249, with
//  {signal} standing for logs, traces or metrics.
static bool s_topic_ok(const char *topic)
{
    size_t len = 0;
    for (const char *c = topic; *c; c++, len++) {
        if (!strncmp(c, "{signal}", 8)) {
            c += 7;
            len += 6; // "metrics" at most
            continue;
        }
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("._-", *c))) {
            return false;
        }
    }
    return len >= 1 && len <= 249;
}

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    drv_kafka_check(check, node_path, config);
    drv_export_check(check, node_path, config);
    const char *topic = json_string_value(json_object_get(config, "topic"));
    if (topic && !s_topic_ok(topic)) {
        drv_spec_check_problem(check, node_path,
                               "config.topic: letters, digits, '.', '_' and '-', at most 249, {signal} for "
                               "logs, traces or metrics");
    }
    json_t *max = json_object_get(config, "max_message_bytes");
    if (json_is_integer(max) && json_integer_value(max) < 1000) {
        drv_spec_check_problem(check, node_path,
                               "config.max_message_bytes: must be at least 1000 (librdkafka's least)");
    }
    const char *key = json_string_value(json_object_get(config, "key"));
    char why[200];
    drv_path_t parsed;
    if (key && drv_path_parse(key, &parsed, why, sizeof why) != 0) {
        drv_spec_check_problem(check, node_path, "config.key: %s", why);
    } else if (key) {
        drv_path_free(&parsed);
    }
}

const drv_node_schema_t drv_schema_exporter_kafka = {
    .name = "exporter:kafka",
    .role = DRV_ROLE_EXPORTER,
    .doc = "Writes records to a Kafka topic with librdkafka's idempotent producer (acks=all): a batch settles "
           "when the brokers said every message of it is written; a broker down is a backlog like any backend's. "
           "otlp_proto and otlp_json write one Export...Request per batch (with key, one per key), ndjson and "
           "msgpack one message per record.",
    .example = "{type: exporter:kafka, config: {brokers: [\"127.0.0.1:9092\"], topic: \"otlp_{signal}\"}}",
    .keys = {DRV_KAFKA_KEYS,
             {.key = "topic",
              .kind = DRV_KEY_STRING,
              .required = true,
              .doc = "where messages go; {signal} is logs, traces or metrics, from each record's signal"},
             {.key = "key",
              .kind = DRV_KEY_STRING,
              .doc = "a record field (a path: attributes[\"k\"]) whose value keys each message; not given: none "
                     "(librdkafka's partitioner spreads them)"},
             {.key = "max_message_bytes",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "1000000",
              .maximum = 1000000000,
              .doc = "the largest message (librdkafka's message.max.bytes; keep it at or under the topic's "
                     "max.message.bytes): an OTLP request over it is split, and a record that alone is over it "
                     "given up at once and counted"},
             {.key = "compression",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"lz4\"",
              .choices = "none gzip snappy lz4 zstd",
              .doc = "how the producer compresses its message sets"},
             {.key = "batch",
              .kind = DRV_KEY_OBJECT,
              .fallback = "{}",
              .doc = "{max_records: 512, max_bytes: 1048576, max_delay_ms: 200}: a batch closes at the first reached"},
             {.key = "retry",
              .kind = DRV_KEY_OBJECT,
              .fallback = "{}",
              .doc = "{initial_ms: 100, max_ms: 5000, max_elapsed_secs: 300}: a batch librdkafka could not write "
                     "in timeout_ms is written again after this backoff, and given up after max_elapsed_secs (0: "
                     "never)"},
             {.key = "timeout_ms",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "30000",
              .maximum = 3600000,
              .doc = "how long librdkafka tries one message (its message.timeout.ms) before the batch is retried"},
             DRV_QUEUE_KEY},
    .check = s_check,
    .complete = drv_export_complete,
};
