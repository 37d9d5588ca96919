/*  drv_kafka_group — see drv_kafka_group.h. */
#include "drv_kafka_group.h"
#include "drv_ring.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REVOKE_WAIT_MS 5000
#define COMMIT_EVERY_MS 100 // what settled is committed at most this often (and librdkafka's own every second)
#define COMMIT_RETRY_MS 100 // a commit the group refused (a rebalance under way) is tried again after this

typedef struct {
    char *topic;
    int32_t partition;
    uint32_t epoch;     // bumped at each assignment: inputs of an earlier one store nothing
    bool assigned;      // ours now
    bool revoking;      // the group took it: read no more, let go once settled
    int64_t unsettled;  // inputs holding its messages, not settled (this epoch)
    int64_t next;       // the offset after its last message taken (-1: none yet)
    int64_t stored;     // the offset stored for commit, settled (-1: none)
    int64_t committing; // what the commit under way holds of it
    int64_t committed;  // what a commit of ours said is committed (-1: none yet)
} part_t;

typedef struct {
    uint32_t part, epoch;
    int64_t next, input;
} pending_t;

struct drv_kafka_group_t {
    char node[64]; // its node, for the log
    rd_kafka_t *rk;
    part_t *parts;
    size_t part_count;
    drv_ring_t pending;                        // pending_t, oldest input first
    rd_kafka_topic_partition_list_t *revoking; // an unassign deferred until settled
    int64_t revoke_deadline_ms;
    bool paused;       // every partition, for backpressure or the drain
    bool closing;      // leaving the group
    bool assigned;     // the group gave it an assignment at least once
    bool manual;       // no group: drover's instances divide the partitions (drv_kafka_claims.h)
    int64_t warned_ms; // a commit refused in manual mode, said at most every 5 s
    //  Offsets stored since the start (stored) and up to which a commit
    //  succeeded (committed); one commit at a time.
    uint64_t stored, committing_upto, committed;
    bool committing;
    //  The group refused a commit: a rebalance is under way. Nothing more
    //  is read until a commit lands or the group says who reads what: read
    //  meanwhile, it would be read again if the rebalance takes the
    //  partition from under us uncommitted.
    bool refused;
    int64_t commit_due_ms; // mono: the next commit may start then
};

static void s_revoke_if_done(drv_kafka_group_t *self);

//  ---------------------------------------------------------------- committing

//  What is stored is committed now, unless a commit is under way or one
//  ended less than COMMIT_EVERY_MS ago: with librdkafka's own every
//  second, a crash reads again at most what settled in the last 200 ms,
//  and a draining instance leaves nothing uncommitted.
static void s_commit(drv_kafka_group_t *self, int64_t now)
{
    if (self->committing || self->committed == self->stored || now < self->commit_due_ms || self->closing) {
        return;
    }
    self->committing = true;
    self->committing_upto = self->stored;
    for (size_t i = 0; i < self->part_count; i++) {
        self->parts[i].committing = self->parts[i].stored;
    }
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
    drv_kafka_group_t *self = opaque;
    if (!self->committing) {
        return; // librdkafka's own
    }
    self->committing = false;
    int64_t now = drv_time_mono_ms();
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__NO_OFFSET) {
        self->committed = self->committing_upto;
        for (size_t i = 0; i < self->part_count; i++) {
            self->parts[i].committed = self->parts[i].committing;
        }
        self->commit_due_ms = now + COMMIT_EVERY_MS;
        s_revoke_if_done(self);
    } else {
        //  REBALANCE_IN_PROGRESS while the group takes a new member in (the
        //  next generation, a core added), ILLEGAL_GENERATION or
        //  UNKNOWN_MEMBER_ID once it moved on without us (it is taking the
        //  assignment away): tried again once it settled, nothing read
        //  meanwhile (what is read and not committed is read again by
        //  whoever the group gives the partition to).
        drv_debug("kafka commit failed node=%s reason=\"%s\"", self->node, rd_kafka_err2str(err));
        if (self->manual && now - self->warned_ms >= 5000) {
            //  No rebalance to wait for: the group has members of its own.
            self->warned_ms = now;
            drv_warn("kafka commit refused node=%s reason=\"%s\" hint=\"assignment: node needs a group_id no "
                     "consumer group uses\"",
                     self->node, rd_kafka_err2str(err));
        }
        self->refused |= !self->manual &&
                         (err == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS ||
                          err == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION || err == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID);
        self->commit_due_ms = now + COMMIT_RETRY_MS;
    }
}

//  ---------------------------------------------------------------- partitions

static part_t *s_part(drv_kafka_group_t *self, const char *topic, int32_t partition)
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
    self->parts[self->part_count] =
        (part_t){.topic = name, .partition = partition, .next = -1, .stored = -1, .committed = -1};
    return &self->parts[self->part_count++];
}

static void s_log_list(const char *what, const drv_kafka_group_t *self, const rd_kafka_topic_partition_list_t *list)
{
    char text[600] = "";
    size_t used = 0;
    for (int i = 0; i < list->cnt && used < sizeof text - 1; i++) {
        int n = snprintf(text + used, sizeof text - used, "%s%s/%d", i ? "," : "", list->elems[i].topic,
                         list->elems[i].partition);
        used += n > 0 ? (size_t)n : 0;
    }
    drv_info("kafka partitions %s node=%s partitions=%s", what, self->node, text);
}

//  Pauses or resumes every partition assigned.
void drv_kafka_group_pause(drv_kafka_group_t *self, bool pause)
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

//  Assignments change a partition at a time: cooperative rebalancing, or
//  partitions drover's instances divide among themselves.
static bool s_incremental(drv_kafka_group_t *self)
{
    return self->manual || !strcmp(rd_kafka_rebalance_protocol(self->rk), "COOPERATIVE");
}

//  The deferred unassign, now: what was settled of the revoked partitions
//  is stored, and librdkafka commits it as it lets them go.
void drv_kafka_group_let_go(drv_kafka_group_t *self)
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
    bool incremental = s_incremental(self);
    rd_kafka_error_t *error = incremental ? rd_kafka_incremental_unassign(self->rk, self->revoking) : NULL;
    if (!incremental) {
        rd_kafka_assign(self->rk, NULL);
    }
    if (error) {
        drv_warn("kafka unassign failed node=%s reason=\"%s\"", self->node, rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
    }
    s_log_list("let go", self, self->revoking);
    rd_kafka_topic_partition_list_destroy(self->revoking);
    self->revoking = NULL;
}

static bool s_revoked_settled(drv_kafka_group_t *self)
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
static void s_revoke_if_done(drv_kafka_group_t *self)
{
    if (!self->revoking || !s_revoked_settled(self)) {
        return;
    }
    if (self->committing || self->committed != self->stored) {
        s_commit(self, drv_time_mono_ms());
        return;
    }
    drv_kafka_group_let_go(self);
}

void drv_kafka_group_assign(drv_kafka_group_t *self, rd_kafka_topic_partition_list_t *list)
{
    self->assigned = true;
    if (!self->manual) {
        drv_kafka_group_let_go(self); // one still waiting goes first: the group has moved on
    }
    for (int i = 0; i < list->cnt; i++) {
        part_t *part = s_part(self, list->elems[i].topic, list->elems[i].partition);
        if (part) {
            part->assigned = true;
            part->revoking = false;
            part->epoch++;
            part->unsettled = 0;
            part->next = part->stored = part->committing = part->committed = -1;
        }
    }
    bool incremental = s_incremental(self);
    rd_kafka_error_t *error = incremental ? rd_kafka_incremental_assign(self->rk, list) : NULL;
    if (!incremental) {
        rd_kafka_assign(self->rk, list);
    }
    if (error) {
        drv_warn("kafka assign failed node=%s reason=\"%s\"", self->node, rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
    }
    if (self->paused || self->closing) {
        rd_kafka_pause_partitions(self->rk, list);
    } else {
        rd_kafka_resume_partitions(self->rk, list); // a pause from an earlier assignment does not stay
    }
    s_log_list("assigned", self, list);
}

void drv_kafka_group_revoke(drv_kafka_group_t *self, const rd_kafka_topic_partition_list_t *list, bool lost)
{
    drv_kafka_group_let_go(self);
    self->revoking = rd_kafka_topic_partition_list_copy(list);
    self->revoke_deadline_ms = drv_time_mono_ms() + REVOKE_WAIT_MS;
    for (int i = 0; i < list->cnt; i++) {
        part_t *part = s_part(self, list->elems[i].topic, list->elems[i].partition);
        if (part) {
            part->revoking = true;
        }
    }
    rd_kafka_pause_partitions(self->rk, self->revoking); // nothing more is read of them
    if (lost && !self->closing && self->committed != self->stored) {
        //  The group took them before what was read of them was
        //  committed (a member's session expired, a SyncGroup failed).
        s_log_list("lost uncommitted (their next owner reads again what was not committed)", self, list);
    }
    if (!s_incremental(self) || self->closing || lost) {
        drv_kafka_group_let_go(self);
    } else {
        self->commit_due_ms = drv_time_mono_ms(); // what settled is committed now, the group waiting
        s_revoke_if_done(self);
    }
}

static void s_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *list, void *opaque)
{
    drv_kafka_group_t *self = opaque;
    self->refused = false; // the group said who reads what: a commit may land again
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        drv_kafka_group_assign(self, list);
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        drv_kafka_group_revoke(self, list, rd_kafka_assignment_lost(rk));
    } else {
        drv_warn("kafka rebalance failed node=%s reason=\"%s\"", self->node, rd_kafka_err2str(err));
        drv_kafka_group_let_go(self);
        rd_kafka_assign(rk, NULL);
    }
}

bool drv_kafka_group_giving_back(const drv_kafka_group_t *self)
{
    return self->revoking != NULL;
}

bool drv_kafka_group_owns(drv_kafka_group_t *self, const char *topic, int32_t partition, bool *reading)
{
    part_t *part = s_part(self, topic, partition);
    *reading = part && part->assigned && !part->revoking;
    return part && part->assigned;
}

//  ---------------------------------------------------------------- settling

void drv_kafka_group_settled(drv_kafka_group_t *self, int64_t upto)
{
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
            part->stored = p->next;
        }
        drv_ring_pop(&self->pending);
    }
    if (store) {
        rd_kafka_resp_err_t err = rd_kafka_offsets_store(self->rk, store);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            drv_debug("kafka offsets not stored node=%s reason=\"%s\"", self->node, rd_kafka_err2str(err));
        }
        rd_kafka_topic_partition_list_destroy(store);
        self->stored++;
        s_commit(self, drv_time_mono_ms());
    }
    s_revoke_if_done(self);
}

//  ---------------------------------------------------------------- the rest

drv_kafka_group_t *drv_kafka_group_new(const char *node, rd_kafka_conf_t *conf, bool manual)
{
    drv_kafka_group_t *self = calloc(1, sizeof *self);
    if (self) {
        self->manual = manual;
        snprintf(self->node, sizeof self->node, "%s", node);
        drv_ring_init(&self->pending, sizeof(pending_t));
        rd_kafka_conf_set_rebalance_cb(conf, s_rebalance);
        rd_kafka_conf_set_offset_commit_cb(conf, s_committed);
        rd_kafka_conf_set_opaque(conf, self);
    }
    return self;
}

void drv_kafka_group_attach(drv_kafka_group_t *self, rd_kafka_t *rk)
{
    self->rk = rk;
}

void drv_kafka_group_destroy(drv_kafka_group_t **self_p)
{
    drv_kafka_group_t *self = *self_p;
    if (!self) {
        return;
    }
    if (self->revoking) {
        rd_kafka_topic_partition_list_destroy(self->revoking);
    }
    for (size_t i = 0; i < self->part_count; i++) {
        free(self->parts[i].topic);
    }
    free(self->parts);
    drv_ring_fini(&self->pending);
    free(self);
    *self_p = NULL;
}

bool drv_kafka_group_reads(drv_kafka_group_t *self, const rd_kafka_message_t *message)
{
    part_t *part = s_part(self, rd_kafka_topic_name(message->rkt), message->partition);
    return part && part->assigned && !part->revoking;
}

void drv_kafka_group_taken(drv_kafka_group_t *self, const rd_kafka_message_t *last, int64_t input)
{
    part_t *part = s_part(self, rd_kafka_topic_name(last->rkt), last->partition);
    if (!part) {
        return;
    }
    part->next = last->offset + 1;
    pending_t p = {(uint32_t)(part - self->parts), part->epoch, part->next, input};
    if (!drv_ring_push(&self->pending, &p)) {
        abort(); // one per partition of an input not settled: bounded by what the pipeline takes
    }
    part->unsettled++;
}

size_t drv_kafka_group_unsettled(const drv_kafka_group_t *self)
{
    return self->pending.count;
}

bool drv_kafka_group_rebalancing(const drv_kafka_group_t *self)
{
    return self->refused;
}

bool drv_kafka_group_ever_assigned(const drv_kafka_group_t *self)
{
    return self->assigned;
}

bool drv_kafka_group_paused(const drv_kafka_group_t *self)
{
    return self->paused;
}

void drv_kafka_group_tick(drv_kafka_group_t *self, int64_t now)
{
    if (self->revoking && now >= self->revoke_deadline_ms) {
        drv_kafka_group_let_go(self); // what is not settled by now is read again by the next owner
    }
    s_commit(self, now);
}

void drv_kafka_group_commit_now(drv_kafka_group_t *self)
{
    self->commit_due_ms = drv_time_mono_ms();
    s_commit(self, self->commit_due_ms);
}

bool drv_kafka_group_committed(const drv_kafka_group_t *self)
{
    return !self->committing && self->committed == self->stored;
}

int64_t drv_kafka_group_due_ms(const drv_kafka_group_t *self)
{
    int64_t due = -1;
    if (!self->committing && self->committed != self->stored) {
        due = self->commit_due_ms;
    }
    if (self->revoking && (due < 0 || self->revoke_deadline_ms < due)) {
        due = self->revoke_deadline_ms;
    }
    return due;
}

void drv_kafka_group_closing(drv_kafka_group_t *self)
{
    self->closing = true;
    drv_kafka_group_let_go(self);
}

json_t *drv_kafka_group_details(drv_kafka_group_t *self)
{
    json_t *partitions = json_object();
    for (size_t i = 0; self->rk && i < self->part_count; i++) {
        part_t *part = &self->parts[i];
        if (!part->assigned) {
            continue;
        }
        int64_t low = -1, high = -1;
        rd_kafka_get_watermark_offsets(self->rk, part->topic, part->partition, &low, &high); // cached: no request
        int64_t at = part->committed >= 0 ? part->committed : low; // none committed: the whole log is behind
        json_t *one = json_pack("{s:I, s:I, s:b}", "read_offset", (json_int_t)part->next, "committed_offset",
                                (json_int_t)part->committed, "paused", self->paused || part->revoking);
        //  Lag as kafka-consumer-groups shows it: the log's end less what is committed.
        json_object_set_new(one, "lag", high >= 0 && at >= 0 ? json_integer(high - at) : json_null());
        char name[300];
        snprintf(name, sizeof name, "%s/%d", part->topic, part->partition);
        json_object_set_new(partitions, name, one);
    }
    return json_pack("{s:o}", "partitions", partitions);
}
