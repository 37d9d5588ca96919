/*  receiver:kafka — a member of a Kafka consumer group (docs/operations.md,
    "Kafka"): librdkafka's consumer on the instance's loop, with
    cooperative rebalancing. Messages polled in a turn become one input
    (drv_kafka_messages.c makes their records by format); the input is
    remembered by the group (drv_kafka_group.h), whose offsets are
    committed only once the pipeline settled it (exported, or durable in a
    disk buffer). So a crash, or a partition moving to another member,
    reads again exactly what was not settled.

    Under backpressure every partition is paused (librdkafka fetches
    nothing more, and its queue is bounded), and polling goes on so that
    the group is served. A draining instance reads nothing more, waits (at
    most close_timeout_ms) for what it read to settle and be committed, then
    leaves the group (at most close_timeout_ms again). */
#include "drv_kafka.h"
#include "drv_kafka_divide.h"
#include "drv_kafka_group.h"
#include "drv_kafka_messages.h"
#include "drv_node.h"
#include "drv_schemas.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdlib.h>
#include <string.h>

#define INPUTS_PER_TURN 8
#define CLOSED_CHECK_MS 100 // a closing consumer asked this often whether it is closed
#define PAUSED_CHECK_MS 20  // backpressure is looked at again this often
#define DIVIDE_EVERY_MS 100 // assignment: node: the share looked at again this often

typedef struct {
    drv_node_t *node;
    rd_kafka_t *rk;
    drv_kafka_wake_t wake;
    drv_kafka_messages_t *messages; // the input being made
    drv_kafka_group_t *group;
    drv_kafka_divide_t *divide; // assignment: node (else NULL: the group assigns)
    int64_t next_divide_ms;
    bool draining, closing, closed;
    int64_t close_deadline_ms; // mono: a close not done by then is left to the consumer's destroy
    int64_t next_closed_check_ms;
    int64_t ready_deadline_ms; // mono: READY without an assignment after the session timeout
    bool more;                 // a turn ended with messages left: the queue wakes the pipe only when it was empty
    int64_t drain_deadline_ms;
    int64_t close_wait_ms; // close_timeout_ms: for what was read to settle, then again for the group to let go
} kafka_rx_t;

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
        bool last = true;
        for (size_t k = i + 1; k < count && last; k++) {
            const rd_kafka_message_t *later = drv_kafka_messages_at(self->messages, k);
            last = later->partition != message->partition || later->rkt != message->rkt;
        }
        if (last) {
            drv_kafka_group_taken(self->group, message, input);
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
    if (!drv_kafka_group_reads(self->group, message)) {
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
    self->close_deadline_ms = drv_time_mono_ms() + self->close_wait_ms;
    self->next_closed_check_ms = drv_time_mono_ms() + CLOSED_CHECK_MS;
    drv_kafka_group_closing(self->group);
    if (self->divide) {
        drv_kafka_divide_close(self->divide); // every lock goes: the next readers start where this one committed
    }
    drv_info("kafka %s node=%s unsettled=%zu", self->divide ? "letting go of its partitions" : "leaving the group",
             self->node->id, drv_kafka_group_unsettled(self->group));
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
        self->next_closed_check_ms = now + CLOSED_CHECK_MS;
        if (!self->closed && now >= self->close_deadline_ms) {
            drv_warn("kafka close not done node=%s reason=\"the group did not let it leave within close_timeout_ms "
                     "%lld\"",
                     node->id, (long long)self->close_wait_ms);
            self->closed = true; // what settled was committed before: the destroy lets the rest go
        }
        return 0;
    }
    bool hold_back = self->draining || drv_node_backlogged(node) || drv_kafka_group_rebalancing(self->group);
    if (hold_back != drv_kafka_group_paused(self->group)) {
        drv_kafka_group_pause(self->group, hold_back);
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
        hold_back = drv_node_backlogged(node) || drv_kafka_group_rebalancing(self->group);
    }
    self->more = inputs == INPUTS_PER_TURN && !hold_back;
    if (hold_back) {
        if (!drv_kafka_group_paused(self->group)) {
            drv_kafka_group_pause(self->group, true);
        }
        rd_kafka_message_t *message;
        //  Served all the same: rebalances and errors come through here.
        while (!drv_kafka_messages_full(self->messages) && (message = rd_kafka_consumer_poll(self->rk, 0))) {
            s_take(self, message);
        }
    }
    drv_kafka_group_tick(self->group, now);
    if (self->divide && !self->closing && now >= self->next_divide_ms) {
        self->next_divide_ms = now + DIVIDE_EVERY_MS;
        drv_kafka_divide_step(self->divide);
    }
    //  Draining: once what was read is settled and committed (or the wait
    //  is over), the group is left.
    bool settled = drv_kafka_messages_count(self->messages) == 0 && drv_kafka_group_unsettled(self->group) == 0;
    if (self->draining && ((settled && drv_kafka_group_committed(self->group)) || now >= self->drain_deadline_ms)) {
        s_close(self);
    }
    return inputs;
}

static void s_settled(drv_node_t *node, int64_t upto)
{
    kafka_rx_t *self = node->state;
    if (self->rk && !self->closed) {
        drv_kafka_group_settled(self->group, upto);
    }
}

//  Ready once the group gave it an assignment (an empty one too): a
//  replace drains the generation before only once this one is in the
//  group, so that the partitions are never without a reader for more than
//  the rebalance the old one's leaving starts. A group that does not
//  answer within the session timeout does not hold the instance back.
static bool s_ready(drv_node_t *node)
{
    kafka_rx_t *self = node->state;
    if (!self->rk || drv_kafka_group_ever_assigned(self->group) ||
        (self->divide && drv_kafka_divide_known(self->divide))) {
        return true;
    }
    if (drv_time_mono_ms() < self->ready_deadline_ms) {
        return false;
    }
    drv_warn("kafka ready without an assignment node=%s reason=\"the group gave none within session_timeout_ms\"",
             node->id);
    self->ready_deadline_ms = INT64_MAX;
    return true;
}

static json_t *s_details(drv_node_t *node)
{
    kafka_rx_t *self = node->state;
    return self->group ? drv_kafka_group_details(self->group) : NULL;
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
    if (self->closing) {
        //  The end of a close need not come as an event on the queue
        //  (librdkafka's own rd_kafka_consumer_close polls it every 100 ms).
        return self->next_closed_check_ms <= now ? 0 : self->next_closed_check_ms - now;
    }
    if (self->more) {
        return 0;
    }
    if (drv_kafka_group_paused(self->group) || drv_kafka_messages_count(self->messages) > 0) {
        due = now + PAUSED_CHECK_MS; // backpressure looked at again
    }
    int64_t group = drv_kafka_group_due_ms(self->group); // a commit, a revoked partition let go
    if (group >= 0 && (due < 0 || group < due)) {
        due = group;
    }
    if (self->draining && !self->closing && (due < 0 || self->drain_deadline_ms < due)) {
        due = self->drain_deadline_ms;
    }
    if (self->divide && !self->closing && (due < 0 || self->next_divide_ms < due)) {
        due = self->next_divide_ms;
    }
    bool waiting = !drv_kafka_group_ever_assigned(self->group) && self->ready_deadline_ms < INT64_MAX;
    if (waiting && (due < 0 || self->ready_deadline_ms < due)) {
        due = self->ready_deadline_ms; // READY without an assignment, then
    }
    return due < 0 ? -1 : due <= now ? 0 : due - now;
}

static void s_drain(drv_node_t *node)
{
    kafka_rx_t *self = node->state;
    if (self->rk && !self->draining) {
        self->draining = true;
        self->drain_deadline_ms = drv_time_mono_ms() + self->close_wait_ms;
        drv_kafka_group_pause(self->group, true);
        drv_kafka_group_commit_now(self->group);
        if (self->divide) {
            drv_kafka_divide_leave(self->divide); // the others' shares grow: they take what this one lets go
        }
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
    //  What librdkafka fetches ahead is bounded by its bytes (64 MiB, its
    //  default), not its count: librdkafka 2.0 looks at a partition that hit
    //  either bound again only a second later, and a count of small
    //  messages is reached long before the bytes. Behind a pipeline that
    //  pushes back the partitions are paused, which lets that go.
    rc = rc ? rc : drv_kafka_set(conf, "queued.max.messages.kbytes", "65536", why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "queued.min.messages", "1000000", why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "fetch.wait.max.ms", "100", why, sizeof why);
    //  A member that died (SIGKILL, a lost node) holds its partitions until
    //  the coordinator stops hearing from it: session_timeout_ms, 6 s by
    //  default, the least a broker takes by default
    //  (group.min.session.timeout.ms); heartbeats go a sixth of it apart.
    json_int_t session = json_integer_value(json_object_get(config, "session_timeout_ms"));
    self->ready_deadline_ms = drv_time_mono_ms() + session;
    char session_ms[32], heartbeat_ms[32];
    snprintf(session_ms, sizeof session_ms, "%lld", (long long)session);
    snprintf(heartbeat_ms, sizeof heartbeat_ms, "%lld", (long long)(session / 6 > 100 ? session / 6 : 100));
    rc = rc ? rc : drv_kafka_set(conf, "session.timeout.ms", session_ms, why, sizeof why);
    rc = rc ? rc : drv_kafka_set(conf, "heartbeat.interval.ms", heartbeat_ms, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        if (conf) {
            rd_kafka_conf_destroy(conf);
        }
        return -1;
    }
    const char *assignment = json_string_value(json_object_get(config, "assignment"));
    bool by_node = assignment && !strcmp(assignment, "node");
    const char *run_dir = drv_node_identity(node)->run_dir;
    if (by_node && !run_dir) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen,
                 "node %s: assignment: node keeps its partition locks under engine.run_dir, which "
                 "this droverd did not say",
                 node->id);
        return -1;
    }
    if (!(self->group = drv_kafka_group_new(node->id, conf, by_node))) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    self->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why);
    if (!self->rk) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    drv_kafka_group_attach(self->group, self->rk);
    rd_kafka_poll_set_consumer(self->rk); // one queue: messages, rebalances, errors and log lines
    rd_kafka_set_log_queue(self->rk, NULL);
    if (drv_kafka_wake_init(&self->wake, rd_kafka_queue_get_consumer(self->rk), why, sizeof why) != 0) {
        snprintf(err, errlen, "node %s: %s", node->id, why);
        return -1;
    }
    json_t *topics = json_object_get(config, "topics");
    if (by_node) {
        //  No subscription: the engine's instances divide the partitions.
        const char *group_id = json_string_value(json_object_get(config, "group_id"));
        self->divide =
            drv_kafka_divide_new(self->rk, self->group, run_dir, group_id, topics, self->wake.fds[1], why, sizeof why);
        if (!self->divide) {
            snprintf(err, errlen, "node %s: %s", node->id, why);
            return -1;
        }
        return 0;
    }
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
    self->close_wait_ms = json_integer_value(json_object_get(config, "close_timeout_ms"));
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
    drv_kafka_divide_destroy(&self->divide); // before the consumer: its thread asks through it
    drv_kafka_messages_destroy(&self->messages);
    drv_kafka_wake_fini(&self->wake);
    //  librdkafka before 2.3 asserts when a cooperative-sticky consumer
    //  that joined its group but was never given an assignment is
    //  destroyed (its assignor has no state yet: librdkafka issue 4312),
    //  and aborts the instance as it drains. Such a consumer has left the
    //  group and holds nothing: it is left to the process's exit, which
    //  follows.
    if (self->rk && !drv_kafka_group_ever_assigned(self->group) && rd_kafka_version() < 0x020300ff) {
        drv_info("kafka consumer left to the exit node=%s reason=\"never assigned (librdkafka issue 4312)\"",
                 self->node->id);
    } else if (self->rk) {
        rd_kafka_destroy_flags(self->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    }
    drv_kafka_group_destroy(&self->group);
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
    .details = s_details,
    .ready = s_ready,
    .drain = s_drain,
};
