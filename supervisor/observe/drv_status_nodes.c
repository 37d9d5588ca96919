/*  drv_status_nodes — a node's status from its heartbeat counters
    (drover/drv_node_counters.h): what it took, handed on, dropped and
    failed on, and an exporter's delivery (docs/operations.md, "Counters"). */
#include "drv_status.h"

#include "drover/drv_node_counters.h"
#include "drover/drv_time.h"

static json_t *s_time(int64_t wall_ms)
{
    char buf[40];
    drv_time_rfc3339(wall_ms, buf, sizeof buf);
    return json_string(buf);
}

//  A wall time age_ms ago, or null when age_ms < 0 (never).
static json_t *s_ago(int64_t now_wall_ms, json_int_t age_ms)
{
    return age_ms < 0 ? json_null() : s_time(now_wall_ms - age_ms);
}

json_t *drv_status_nodes(const json_t *heartbeat_nodes, int64_t lag_ms)
{
    json_t *nodes = json_object();
    const char *node;
    json_t *c;
    int64_t now = drv_time_wall_ms();
    json_object_foreach((json_t *)heartbeat_nodes, node, c)
    {
        bool exporter = drv_node_counters_exporter(c);
        //  An exporter's dropped records are those it gave up and those its
        //  full queue let go (docs/operations.md, "Counters").
        json_int_t dropped =
            drv_node_counter(c, DRV_NC_DROPPED) + (exporter ? drv_node_counter(c, DRV_NC_QUEUE_DROPPED) : 0);
        json_t *counts = json_pack("{s:I, s:I, s:I, s:I}", "records_in", drv_node_counter(c, DRV_NC_IN), "records_out",
                                   drv_node_counter(c, DRV_NC_OUT), "records_dropped", dropped, "errors",
                                   drv_node_counter(c, DRV_NC_ERRORS));
        if (exporter) {
            const char *error = json_string_value(json_array_get(c, DRV_NC_LAST_ERROR));
            json_int_t queue_age = drv_node_counter(c, DRV_NC_QUEUE_AGE_MS);
            json_object_update_new(counts, json_pack("{s:I, s:I, s:f, s:s?, s:o, s:o, s:b}", "retries",
                                                     drv_node_counter(c, DRV_NC_RETRIES), "backlog_records",
                                                     drv_node_counter(c, DRV_NC_BACKLOG), "failing_secs",
                                                     (double)drv_node_counter(c, DRV_NC_FAILING_MS) / 1000.0,
                                                     "last_error", error && error[0] ? error : NULL, "last_error_at",
                                                     s_ago(now, drv_node_counter_or(c, DRV_NC_FAILURE_AGE_MS, -1)),
                                                     "recovered_at",
                                                     s_ago(now, drv_node_counter_or(c, DRV_NC_RECOVERED_AGE_MS, -1)),
                                                     "lagging", lag_ms > 0 && queue_age >= lag_ms));
            json_object_set_new(counts, "queue",
                                json_pack("{s:I, s:I, s:f, s:I}", "bytes", drv_node_counter(c, DRV_NC_QUEUE_BYTES),
                                          "records", drv_node_counter(c, DRV_NC_BACKLOG), "oldest_age_secs",
                                          (double)drv_node_counter(c, DRV_NC_QUEUE_AGE_MS) / 1000.0, "dropped_records",
                                          drv_node_counter(c, DRV_NC_QUEUE_DROPPED)));
        }
        json_t *details = drv_node_counters_details(c);
        if (details) {
            json_object_update_missing(counts, details);
        }
        json_object_set_new(nodes, node, counts);
    }
    return nodes;
}
