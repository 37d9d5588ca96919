/*  receiver:kafka — a member of a Kafka consumer group (docs/operations.md,
    "Kafka"): librdkafka's consumer on the instance's loop, with
    cooperative rebalancing. Messages polled in a turn become one input
    (drv_kafka_messages.c makes their records by format); the input is
    remembered with, for each partition it read, the offset after its last
    message, and only when the pipeline settles the input (exported, or
    durable in a disk buffer) is that offset stored for librdkafka's commit
    (enable.auto.offset.store is off). So a crash, or a partition moving to
    another member, reads again exactly what was not settled.

    Under backpressure every partition is paused (librdkafka fetches
    nothing more, and its queue is bounded), and polling goes on so that
    the group is served. A partition the group takes away is let go once
    what was read of it is settled (its unassign is deferred, at most
    REVOKE_WAIT_MS), so the next owner starts where this one stopped. A
    draining instance reads nothing more, waits (at most CLOSE_WAIT_MS)
    for what it read to settle, then leaves the group with a last commit. */
#include "drv_kafka.h"
#include "drv_kafka_messages.h"
#include "drv_node.h"
#include "drv_ring.h"
#include "drv_schemas.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdlib.h>
#include <string.h>

#define INPUTS_PER_TURN 8
#define REVOKE_WAIT_MS 5000
#define CLOSE_WAIT_MS 15000
#define PAUSED_CHECK_MS 20  // backpressure is looked at again this often
#define COMMIT_EVERY_MS 100 // what settled is committed at most this often (and librdkafka's own every second)
#define COMMIT_RETRY_MS 100 // a commit the group refused (a rebalance under way) is tried again after this

typedef struct {
    char *topic;
    int32_t partition;
    uint32_t epoch;    // bumped at each assignment: inputs of an earlier one store nothing
    bool assigned;     // ours now
    bool revoking;     // the group took it: read no more, let go once settled
    int64_t unsettled; // inputs holding its messages, not settled (this epoch)
    int64_t next;      // the offset after its last message taken (-1: none yet)
    int64_t high;      // the broker's high watermark, last seen (-1: not known)
} part_t;

typedef struct {
    uint32_t part, epoch;
    int64_t next, input;
} pending_t;

typedef struct {
    drv_node_t *node;
    rd_kafka_t *rk;
    drv_kafka_wake_t wake;
    drv_kafka_messages_t *messages;
    part_t *parts;
    size_t part_count;
    drv_ring_t pending;                        // pending_t, oldest input first
    rd_kafka_topic_partition_list_t *revoking; // an unassign deferred until settled
    int64_t revoke_deadline_ms;
    bool paused; // every partition, for backpressure or the drain
    bool draining, closing, closed;
    int64_t drain_deadline_ms;
    //  Offsets stored since the start (stored) and up to which a commit
    //  succeeded (committed); one commit at a time.
    uint64_t stored, committing_upto, committed;
    bool committing;
    int64_t commit_due_ms; // mono: the next commit may start then
} kafka_rx_t;

static void s_revoke_if_done(kafka_rx_t *self);

//  ---------------------------------------------------------------- committing

//  What is stored is committed now, unless a commit is under way or one
//  ended less than COMMIT_EVERY_MS ago: with librdkafka's own every
//  second, a crash reads again at most what settled in the last 200 ms,
//  and a draining instance leaves nothing uncommitted.
static void s_commit(kafka_rx_t *self, int64_t now)
{
    if (self->committing || self->committed == self->stored || now < self->commit_due_ms || self->closing) {
        return;
    }
    self->committing = true;
    self->committing_upto = self->stored;
    rd_kafka_resp_err_t err = rd_kafka_commit(self->rk, NULL, 1);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        self->committing = false;
        self->commit_due_ms = now + COMMIT_RETRY_MS;
    }
}

static void s_committed(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    (void)rk;
    (void)offsets;
    kafka_rx_t *self = opaque;
    if (!self->committing) {
        return; // librdkafka's own
    }
    self->committing = false;
    int64_t now = drv_time_mono_ms();
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__NO_OFFSET) {
        self->committed = self->committing_upto;
        self->commit_due_ms = now + COMMIT_EVERY_MS;
        s_revoke_if_done(self);
    } else {
        //  REBALANCE_IN_PROGRESS while the group takes a new member in (the
        //  next generation, a core added): tried again once it settled.
        drv_debug("kafka commit failed node=%s reason=\"%s\"", self->node->id, rd_kafka_err2str(err));
        self->commit_due_ms = now + COMMIT_RETRY_MS;
    }
}

//  ---------------------------------------------------------------- partitions

static part_t *s_part(kafka_rx_t *self, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < self->part_count; i++) {
        if (self->parts[i].partition == partition && !strcmp(self->parts[i].topic, topic)) {
            return &self->parts[i];
        }
    }
    part_t *grown = realloc(self->parts, (self->part_count + 1) * sizeof *grown);
    char *name = strdup(topic);
    if (!grown || !name) {
        free(name);
        if (grown) {
            self->parts = grown;
        }
        return NULL;
    }
    self->parts = grown;
    self->parts[self->part_count] = (part_t){.topic = name, .partition = partition, .next = -1, .high = -1};
    return &self->parts[self->part_count++];
}

static void s_log_list(const char *what, const kafka_rx_t *self, const rd_kafka_topic_partition_list_t *list)
{
    char text[600] = "";
    size_t used = 0;
    for (int i = 0; i < list->cnt && used < sizeof text - 1; i++) {
        int n = snprintf(text + used, sizeof text - used, "%s%s/%d", i ? "," : "", list->elems[i].topic,
                         list->elems[i].partition);
        used += n > 0 ? (size_t)n : 0;
    }
    drv_info("kafka partitions %s node=%s partitions=%s", what, self->node->id, text);
}

//  Pauses or resumes every partition assigned.
static void s_pause_all(kafka_rx_t *self, bool pause)
{
    rd_kafka_topic_partition_list_t *assigned = NULL;
    if (rd_kafka_assignment(self->rk, &assigned) == RD_KAFKA_RESP_ERR_NO_ERROR && assigned) {
        if (pause) {
            rd_kafka_pause_partitions(self->rk, assigned);
        } else {
            //  Only those still ours to read: a revoked one stays paused.
            rd_kafka_topic_partition_list_t *readable = rd_kafka_topic_partition_list_new(assigned->cnt);
            for (int i = 0; i < assigned->cnt; i++) {
                part_t *part = s_part(self, assigned->elems[i].topic, assigned->elems[i].partition);
                if (part && !part->revoking) {
                    rd_kafka_topic_partition_list_add(readable, part->topic, part->partition);
                }
            }
            rd_kafka_resume_partitions(self->rk, readable);
            rd_kafka_topic_partition_list_destroy(readable);
        }
        rd_kafka_topic_partition_list_destroy(assigned);
    }
    self->paused = pause;
}

static bool s_cooperative(kafka_rx_t *self)
{
    return !strcmp(rd_kafka_rebalance_protocol(self->rk), "COOPERATIVE");
}

//  The deferred unassign, now: what was settled of the revoked partitions
//  is stored, and librdkafka commits it as it lets them go.
static void s_finish_revoke(kafka_rx_t *self)
{
    if (!self->revoking) {
        return;
    }
    for (int i = 0; i < self->revoking->cnt; i++) {
        part_t *part = s_part(self, self->revoking->elems[i].topic, self->revoking->elems[i].partition);
        if (part) {
            part->assigned = part->revoking = false;
            part->epoch++; // its inputs still unsettled store nothing: the next owner reads them again
            part->unsettled = 0;
        }
    }
    rd_kafka_error_t *error = s_cooperative(self) ? rd_kafka_incremental_unassign(self->rk, self->revoking) : NULL;
    if (!s_cooperative(self)) {
        rd_kafka_assign(self->rk, NULL);
    }
    if (error) {
        drv_warn("kafka unassign failed node=%s reason=\"%s\"", self->node->id, rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
    }
    s_log_list("let go", self, self->revoking);
    rd_kafka_topic_partition_list_destroy(self->revoking);
    self->revoking = NULL;
}

static bool s_revoked_settled(kafka_rx_t *self)
{
    for (int i = 0; self->revoking && i < self->revoking->cnt; i++) {
        part_t *part = s_part(self, self->revoking->elems[i].topic, self->revoking->elems[i].partition);
        if (part && part->unsettled > 0) {
            return false;
        }
    }
    return true;
}

//  A deferred unassign goes once what was read of the revoked partitions
//  is settled and committed: the group's next owner starts right after it.
static void s_revoke_if_done(kafka_rx_t *self)
{
    if (!self->revoking || !s_revoked_settled(self)) {
        return;
    }
    if (self->committing || self->committed != self->stored) {
        s_commit(self, drv_time_mono_ms());
        return;
    }
    s_finish_revoke(self);
}

static void s_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *list, void *opaque)
{
    kafka_rx_t *self = opaque;
    bool cooperative = s_cooperative(self);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        s_finish_revoke(self); // one still waiting goes first: the group has moved on
        for (int i = 0; i < list->cnt; i++) {
            part_t *part = s_part(self, list->elems[i].topic, list->elems[i].partition);
            if (part) {
                part->assigned = true;
                part->revoking = false;
                part->epoch++;
                part->unsettled = 0;
                part->next = -1;
            }
        }
        rd_kafka_error_t *error = cooperative ? rd_kafka_incremental_assign(rk, list) : NULL;
        if (!cooperative) {
            rd_kafka_assign(rk, list);
        }
        if (error) {
            drv_warn("kafka assign failed node=%s reason=\"%s\"", self->node->id, rd_kafka_error_string(error));
            rd_kafka_error_destroy(error);
        }
        if (self->paused || self->closing) {
            rd_kafka_pause_partitions(rk, list);
        } else {
            rd_kafka_resume_partitions(rk, list); // a pause from an earlier assignment does not stay
        }
        s_log_list("assigned", self, list);
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        s_finish_revoke(self);
        self->revoking = rd_kafka_topic_partition_list_copy(list);
        self->revoke_deadline_ms = drv_time_mono_ms() + REVOKE_WAIT_MS;
        for (int i = 0; i < list->cnt; i++) {
            part_t *part = s_part(self, list->elems[i].topic, list->elems[i].partition);
            if (part) {
                part->revoking = true;
            }
        }
        rd_kafka_pause_partitions(rk, list); // nothing more is read of them
        if (!cooperative || self->closing || rd_kafka_assignment_lost(rk)) {
            s_finish_revoke(self);
        } else {
            self->commit_due_ms = drv_time_mono_ms(); // what settled is committed now, the group waiting
            s_revoke_if_done(self);
        }
    } else {
        drv_warn("kafka rebalance failed node=%s reason=\"%s\"", self->node->id, rd_kafka_err2str(err));
        s_finish_revoke(self);
        rd_kafka_assign(rk, NULL);
    }
}

//  ---------------------------------------------------------------- settling

static void s_settled(drv_node_t *node, int64_t upto)
{
    kafka_rx_t *self = node->state;
    if (!self->rk || self->closed) {
        return;
    }
    rd_kafka_topic_partition_list_t *store = NULL;
    pending_t *p;
    while ((p = drv_ring_front(&self->pending)) && p->input <= upto) {
        part_t *part = &self->parts[p->part];
        if (p->epoch == part->epoch && part->assigned) {
            part->unsettled--;
            store = store ? store : rd_kafka_topic_partition_list_new(4);
            rd_kafka_topic_partition_t *at = rd_kafka_topic_partition_list_find(store, part->topic, part->partition);
            at = at ? at : rd_kafka_topic_partition_list_add(store, part->topic, part->partition);
            at->offset = p->next; // inputs settle in order: the last is the furthest
        }
        drv_ring_pop(&self->pending);
    }
    if (store) {
        rd_kafka_resp_err_t err = rd_kafka_offsets_store(self->rk, store);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            drv_debug("kafka offsets not stored node=%s reason=\"%s\"", node->id, rd_kafka_err2str(err));
        }
        rd_kafka_topic_partition_list_destroy(store);
        self->stored++;
        s_commit(self, drv_time_mono_ms());
    }
    s_revoke_if_done(self);
}

//  ---------------------------------------------------------------- reading

//  The input held (drv_kafka_messages.h) into the pipeline: true when it
//  was taken (each partition it read then waits for it to settle), false
//  when the pipeline pushed back (held, to be emitted again).
static bool s_emit(kafka_rx_t *self)
{
    drv_node_t *node = self->node;
    size_t count = drv_kafka_messages_count(self->messages);
    if (count == 0) {
        return true;
    }
    msgpack_object *records;
    size_t refused;
    char why[500];
    int n = drv_kafka_messages_records(self->messages, drv_node_batch_zone(node), &records, &refused, why, sizeof why);
    bool taken = n == 0 || (n > 0 && drv_node_emit_objects(node, records, (size_t)n));
    drv_kafka_messages_undecode(self->messages);
    if (!taken) {
        return false;
    }
    for (size_t i = 1; i < refused; i++) {
        drv_node_count_refused(node);
    }
    if (refused > 0) {
        drv_node_record_error(node, why); // one error more, and the first reason said (at most every 5 s)
    }
    //  Each partition read: the offset after its last message of the input.
    int64_t input = drv_node_taken(node);
    for (size_t i = 0; i < count; i++) {
        const rd_kafka_message_t *message = drv_kafka_messages_at(self->messages, i);
        part_t *part = s_part(self, rd_kafka_topic_name(message->rkt), message->partition);
        if (!part) {
            continue;
        }
        part->next = message->offset + 1;
        bool last = true;
        for (size_t k = i + 1; k < count && last; k++) {
            const rd_kafka_message_t *later = drv_kafka_messages_at(self->messages, k);
            last = later->partition != message->partition || later->rkt != message->rkt;
        }
        if (last) {
            pending_t p = {(uint32_t)(part - self->parts), part->epoch, part->next, input};
            if (!drv_ring_push(&self->pending, &p)) {
                abort(); // one per partition of an input not settled: bounded by what the pipeline takes
            }
            part->unsettled++;
        }
    }
    drv_kafka_messages_clear(self->messages);
    return true;
}

//  A message polled: held for the input, or let go when it is not ours to
//  read any more (a partition revoked: its next owner reads it).
static void s_take(kafka_rx_t *self, rd_kafka_message_t *message)
{
    drv_node_t *node = self->node;
    if (message->err) {
        int64_t now = drv_time_mono_ms();
        if (message->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && now - node->last_warn_ms >= 5000) {
            node->last_warn_ms = now;
            drv_warn("kafka consumer error node=%s reason=\"%s\"", node->id, rd_kafka_message_errstr(message));
        }
        rd_kafka_message_destroy(message);
        return;
    }
    part_t *part = s_part(self, rd_kafka_topic_name(message->rkt), message->partition);
    if (!part || !part->assigned || part->revoking) {
        rd_kafka_message_destroy(message);
        return;
    }
    drv_kafka_messages_hold(self->messages, message); // room checked by the caller
}

static void s_close(kafka_rx_t *self)
{
    if (self->closing) {
        return;
    }
    self->closing = true;
    s_finish_revoke(self);
    drv_info("kafka leaving the group node=%s unsettled_inputs=%zu", self->node->id, self->pending.count);
    rd_kafka_error_t *error = rd_kafka_consumer_close_queue(self->rk, self->wake.queue);
    if (error) {
        drv_warn("kafka close failed node=%s reason=\"%s\"", self->node->id, rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
        self->closed = true;
    }
}

static int s_readable(drv_node_t *node)
{
    kafka_rx_t *self = node->state;
    drv_kafka_wake_clear(&self->wake);
    int64_t now = drv_time_mono_ms();
    if (self->closing) {
        rd_kafka_message_t *message;
        while (!self->closed && (message = rd_kafka_consumer_poll(self->rk, 0))) {
            rd_kafka_message_destroy(message);
        }
        self->closed = rd_kafka_consumer_closed(self->rk);
        return 0;
    }
    bool hold_back = self->draining || drv_node_backlogged(node);
    if (hold_back != self->paused) {
        s_pause_all(self, hold_back);
    }
    int inputs = 0;
    //  An input the pipeline pushed back goes first.
    while (!hold_back && inputs < INPUTS_PER_TURN && s_emit(self)) {
        while (!drv_kafka_messages_full(self->messages)) {
            rd_kafka_message_t *message = rd_kafka_consumer_poll(self->rk, 0);
            if (!message) {
                break;
            }
            s_take(self, message);
        }
        if (drv_kafka_messages_count(self->messages) == 0) {
            break;
        }
        if (!s_emit(self)) {
            break;
        }
        inputs++;
        hold_back = drv_node_backlogged(node);
    }
    if (hold_back) {
        if (!self->paused) {
            s_pause_all(self, true);
        }
        rd_kafka_message_t *message;
        //  Served all the same: rebalances and errors come through here.
        while (!drv_kafka_messages_full(self->messages) && (message = rd_kafka_consumer_poll(self->rk, 0))) {
            s_take(self, message);
        }
    }
    if (self->revoking && now >= self->revoke_deadline_ms) {
        s_finish_revoke(self); // what is not settled by now is read again by the next owner
    }
    s_commit(self, now);
    //  Draining: once what was read is settled and committed (or the wait
    //  is over), the group is left.
    bool settled = drv_kafka_messages_count(self->messages) == 0 && self->pending.count == 0;
    bool committed = !self->committing && self->committed == self->stored;
    if (self->draining && ((settled && committed) || now >= self->drain_deadline_ms)) {
        s_close(self);
    }
    return inputs;
}

static int s_fd(drv_node_t *node)
{
    kafka_rx_t *self = node->state;
    return !self->rk || self->closed ? -1 : self->wake.fds[0];
}

static int64_t s_timeout_ms(drv_node_t *node)
{
    kafka_rx_t *self = node->state;
    if (!self->rk || self->closed) {
        return -1;
    }
    int64_t now = drv_time_mono_ms(), due = -1;
    if (self->paused || drv_kafka_messages_count(self->messages) > 0) {
        due = now + PAUSED_CHECK_MS; // backpressure looked at again
    }
    if (!self->committing && self->committed != self->stored && (due < 0 || self->commit_due_ms < due)) {
        due = self->commit_due_ms; // what settled, committed
    }
    if (self->revoking && (due < 0 || self->revoke_deadline_ms < due)) {
        due = self->revoke_deadline_ms;
    }
    if (self->draining && !self->closing && (due < 0 || self->drain_deadline_ms < due)) {
        due = self->drain_deadline_ms;
    }
    return due < 0 ? -1 : due <= now ? 0 : due - now;
}

static void s_drain(drv_node_t *node)
{
    kafka_rx_t *self = node->state;
    if (self->rk && !self->draining) {
        self->draining = true;
        self->commit_due_ms = drv_time_mono_ms();
        self->drain_deadline_ms = drv_time_mono_ms() + CLOSE_WAIT_MS;
        s_pause_all(self, true);
    }
}

//  ---------------------------------------------------------------- the node

static int s_consumer(kafka_rx_t *self, drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    char why[600];
    rd_kafka_conf_t *conf = drv_kafka_conf(config, why, sizeof why);
    int rc = conf ? 0 : -1;
    rc = rc ? rc
            : drv_kafka_set(conf, "group.id", json_string_value(json_object_get(config, "group_id")), why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "partition.assignment.strategy", "cooperative-sticky", why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "enable.auto.offset.store", "false", why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "enable.auto.commit", "true", why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "auto.commit.interval.ms", "1000", why, sizeof why);
    rc = rc ? rc
            : drv_kafka_set(conf, "auto.offset.reset", json_string_value(json_object_get(config, "start_at")), why,
                            sizeof why);
    //  What librdkafka fetches ahead is bounded: memory stays flat behind a
    //  pipeline that pushes back.
    rc = rc ? rc : drv_kafka_set(conf, "queued.max.messages.kbytes", "16384", why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "queued.min.messages", "10000", why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "fetch.wait.max.ms", "100", why, sizeof why);
    //  A member that died (SIGKILL, a lost node) holds its partitions until
    //  the coordinator stops hearing from it: 6 s, the least a broker takes
    //  by default (group.min.session.timeout.ms).
    rc = rc ? rc : drv_kafka_set(conf, "session.timeout.ms", "6000", why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "heartbeat.interval.ms", "1000", why, sizeof why);
    if (rc != 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        if (conf) {
            rd_kafka_conf_destroy(conf);
        }
        return -1;
    }
    rd_kafka_conf_set_rebalance_cb(conf, s_rebalance);
    rd_kafka_conf_set_offset_commit_cb(conf, s_committed);
    rd_kafka_conf_set_opaque(conf, self);
    self->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why);
    if (!self->rk) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    rd_kafka_poll_set_consumer(self->rk); // one queue: messages, rebalances, errors and log lines
    rd_kafka_set_log_queue(self->rk, NULL);
    if (drv_kafka_wake_init(&self->wake, rd_kafka_queue_get_consumer(self->rk), why, sizeof why) != 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    json_t *topics = json_object_get(config, "topics");
    rd_kafka_topic_partition_list_t *subscription = rd_kafka_topic_partition_list_new((int)json_array_size(topics));
    size_t i;
    json_t *topic;
    json_array_foreach(topics, i, topic)
    {
        rd_kafka_topic_partition_list_add(subscription, json_string_value(topic), RD_KAFKA_PARTITION_UA);
    }
    rd_kafka_resp_err_t subscribed = rd_kafka_subscribe(self->rk, subscription);
    rd_kafka_topic_partition_list_destroy(subscription);
    if (subscribed != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(err, errlen, "node %s: subscribe: %s", node->id, rd_kafka_err2str(subscribed));
        return -1;
    }
    return 0;
}

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    kafka_rx_t *self = calloc(1, sizeof *self);
    node->state = self;
    if (!self) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    self->node = node;
    self->wake.fds[0] = self->wake.fds[1] = -1;
    drv_ring_init(&self->pending, sizeof(pending_t));
    self->messages = drv_kafka_messages_new(json_string_value(json_object_get(config, "format")),
                                            json_string_value(json_object_get(config, "signal")));
    if (!self->messages) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    if (drv_node_probe) {
        return 0; // a probe connects to nothing
    }
    return s_consumer(self, node, config, err, errlen);
}

static void s_destroy(drv_node_t *node)
{
    kafka_rx_t *self = node->state;
    if (!self) {
        return;
    }
    if (self->rk && !self->closing) {
        s_close(self); // not drained (the instance ends at once): leave the group, committing what settled
    }
    int64_t deadline = drv_time_mono_ms() + 2000;
    while (self->rk && !self->closed && drv_time_mono_ms() < deadline) {
        rd_kafka_message_t *message = rd_kafka_consumer_poll(self->rk, 50);
        if (message) {
            rd_kafka_message_destroy(message);
        }
        self->closed = rd_kafka_consumer_closed(self->rk);
    }
    drv_kafka_messages_destroy(&self->messages);
    if (self->revoking) {
        rd_kafka_topic_partition_list_destroy(self->revoking);
    }
    drv_kafka_wake_fini(&self->wake);
    if (self->rk) {
        rd_kafka_destroy_flags(self->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    }
    for (size_t i = 0; i < self->part_count; i++) {
        free(self->parts[i].topic);
    }
    free(self->parts);
    drv_ring_fini(&self->pending);
    free(self);
}

const drv_node_kind_t drv_receiver_kafka = {
    .schema = &drv_schema_receiver_kafka,
    .init = s_init,
    .destroy = s_destroy,
    .fd = s_fd,
    .readable = s_readable,
    .timeout_ms = s_timeout_ms,
    .settled = s_settled,
    .drain = s_drain,
};
