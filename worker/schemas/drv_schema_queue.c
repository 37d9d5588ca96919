/*  Every exporter's `queue` (drv_schemas.h; what it does:
    worker/export/drv_queue.h). */
#include "drv_schemas.h"

#include <string.h>

void drv_queue_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    json_t *queue = json_object_get(config, "queue");
    if (!queue) {
        return;
    }
    if (!json_is_object(queue)) {
        drv_spec_check_problem(check, node_path, "config.queue: must be a map with max_bytes, when_full");
        return;
    }
    const char *key;
    json_t *value;
    json_object_foreach(queue, key, value)
    {
        if (!strcmp(key, "max_bytes")) {
            if (!json_is_integer(value) || json_integer_value(value) < DRV_QUEUE_MIN_BYTES ||
                json_integer_value(value) > DRV_QUEUE_MAX_BYTES) {
                drv_spec_check_problem(check, node_path, "config.queue.max_bytes: must be an integer from %lld to %lld",
                                       (long long)DRV_QUEUE_MIN_BYTES, (long long)DRV_QUEUE_MAX_BYTES);
            }
        } else if (!strcmp(key, "when_full")) {
            const char *v = json_string_value(value);
            if (!v || (strcmp(v, "block") && strcmp(v, "drop_oldest"))) {
                drv_spec_check_problem(check, node_path, "config.queue.when_full: must be block or drop_oldest");
            }
        } else {
            drv_spec_check_problem(check, node_path, "config.queue.%s: unknown key (max_bytes, when_full)", key);
        }
    }
}
