/*  receiver:kafka's schema (worker/nodes/drv_receiver_kafka.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include <string.h>

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    drv_kafka_check(check, node_path, config);
    json_t *topics = json_object_get(config, "topics");
    if (topics && json_array_size(topics) == 0) {
        drv_spec_check_problem(check, node_path, "config.topics: at least one topic");
    }
    size_t i;
    json_t *topic;
    json_array_foreach(topics, i, topic)
    {
        const char *name = json_string_value(topic);
        bool ok = name && name[0] && strlen(name) <= 249;
        for (const char *c = name; ok && *c; c++) {
            ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("._-", *c);
        }
        if (!ok) {
            drv_spec_check_problem(check, node_path,
                                   "config.topics[%zu]: letters, digits, '.', '_' and '-', at most 249", i);
        }
    }
    json_t *session = json_object_get(config, "session_timeout_ms");
    if (session && json_integer_value(session) < 1000) {
        drv_spec_check_problem(check, node_path, "config.session_timeout_ms: at least 1000");
    }
    json_t *close = json_object_get(config, "close_timeout_ms");
    if (close && json_integer_value(close) < 1000) {
        drv_spec_check_problem(check, node_path, "config.close_timeout_ms: at least 1000");
    }
    const char *group = json_string_value(json_object_get(config, "group_id"));
    if (group && strlen(group) > 255) {
        drv_spec_check_problem(check, node_path, "config.group_id: at most 255 bytes");
    }
}

const drv_node_schema_t drv_schema_receiver_kafka = {
    .name = "receiver:kafka",
    .role = DRV_ROLE_RECEIVER,
    .doc = "Consumes topics as a member of a Kafka consumer group (librdkafka, cooperative rebalancing), or with "
           "assignment: node, its partitions divided among this engine's instances: a partition's offset is "
           "committed only once what was read before it is settled (exported, or durable in a disk buffer), so a "
           "crash reads again what was not, and nothing is lost. Under backpressure fetching pauses; on several "
           "cores the partitions spread over the instances.",
    .example = "{type: receiver:kafka, config: {brokers: [\"127.0.0.1:9092\"], topics: [otlp_logs], "
               "group_id: drover}, to: [out]}",
    .keys = {DRV_KAFKA_KEYS,
             {.key = "topics", .kind = DRV_KEY_STRING_LIST, .required = true, .doc = "the topics consumed"},
             {.key = "group_id",
              .kind = DRV_KEY_STRING,
              .required = true,
              .doc = "the consumer group: its committed offsets are where reading starts again"},
             {.key = "assignment",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"group\"",
              .choices = "group node",
              .doc = "who decides which instance reads which partition: group, the consumer group's coordinator "
                     "(members on any number of hosts; a rebalance moves partitions); node, this engine's "
                     "instances among themselves, by locks under engine.run_dir, handing a partition over only "
                     "once its reader committed (one engine reads the group; nothing settled is read again through "
                     "a replace, canary, rollback or resize)"},
             {.key = "start_at",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"earliest\"",
              .choices = "earliest latest",
              .doc = "where a partition the group never committed starts"},
             {.key = "session_timeout_ms",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "6000",
              .maximum = 3600000,
              .doc = "how long the group waits for a member that stopped answering before its partitions go to "
                     "others (brokers take 6000 and up by default: group.min.session.timeout.ms)"},
             {.key = "close_timeout_ms",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "15000",
              .maximum = 600000,
              .doc = "how long a draining instance waits for what it read to be settled and committed, and then "
                     "again for the group to let it leave: a group that does not (its brokers down) is left to "
                     "expire the member, and the instance ends (kafka close not done in the log)"},
             {.key = "signal",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"logs\"",
              .choices = "logs traces metrics",
              .doc = "otlp_proto and otlp_json: the Export...Request its messages are (a topic holds one signal)"}},
    .check = s_check,
};
