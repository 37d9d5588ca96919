/*  drv_queue — see drv_queue.h. */
#include "drv_queue.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <string.h>

void drv_queue_init(drv_queue_t *self, drv_node_t *node, const json_t *config, int64_t fallback_bytes)
{
    json_t *queue = json_object_get(config, "queue");
    json_t *max = json_object_get(queue, "max_bytes");
    const char *when_full = json_string_value(json_object_get(queue, "when_full"));
    bool drop_oldest = when_full && !strcmp(when_full, "drop_oldest");
    int64_t max_bytes = json_is_integer(max) ? json_integer_value(max) : fallback_bytes;
    if (drv_node_logged(node)) {
        //  The log holds the backlog: the queue holds a few batches (half
        //  its bytes at most, so that the newest have room in the log) and,
        //  once they are held, the exporter falls behind
        //  (drv_dag_positions.c); max_bytes and when_full apply to what it
        //  holds and what waits for it in the log together. A disk
        //  buffer's log is bounded by the buffer when max_bytes is not
        //  given; the memory log always by max_bytes.
        node->log_max_bytes = json_is_integer(max) || !drv_node_buffered(node) ? max_bytes : 0;
        node->log_drop_oldest = drop_oldest;
        int64_t in_memory = json_is_integer(max) ? max_bytes / 2 : fallback_bytes;
        *self = (drv_queue_t){.max_bytes = in_memory < fallback_bytes ? in_memory : fallback_bytes,
                              .max_batches = DRV_QUEUE_BUFFERED_BATCHES};
        return;
    }
    *self = (drv_queue_t){.max_bytes = max_bytes, .drop_oldest = drop_oldest};
}

bool drv_queue_full(const drv_queue_t *self, int64_t bytes, int64_t batches)
{
    return !self->drop_oldest && (bytes >= self->max_bytes || (self->max_batches && batches >= self->max_batches));
}

bool drv_queue_over(const drv_queue_t *self, int64_t bytes)
{
    return self->drop_oldest && bytes > self->max_bytes;
}

void drv_queue_dropped(drv_queue_t *self, drv_node_t *node, size_t records)
{
    node->queue_dropped += (int64_t)records;
    int64_t now = drv_time_mono_ms();
    if (now >= self->next_log_ms) {
        drv_warn("exporter queue full: oldest records dropped node=%s records=%zu dropped_total=%lld max_bytes=%lld",
                 node->id, records, (long long)node->queue_dropped, (long long)self->max_bytes);
        self->next_log_ms = now + 1000;
    }
}
