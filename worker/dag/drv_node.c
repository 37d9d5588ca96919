/*  drv_node — what the DAG offers node kinds (drv_node.h), all of it: batch
    memory, taking records in (through the disk buffer when there is one),
    handing them on, counting them, warning about failures, config values
    as msgpack objects. */
#include "drv_dag_internal.h"
#include "drv_tap.h"
#include "drv_node.h"
#include "drv_record_path.h"

#include "drover/drv_log.h"
#include "drover/drv_utf8.h"
#include "drover/drv_mpjson.h"
#include "drover/drv_time.h"

#include <stdio.h>
#include <string.h>

void *drv_node_alloc(drv_node_t *node, size_t size)
{
    return msgpack_zone_malloc(&node->dag->batch_zone, size ? size : 1);
}

msgpack_zone *drv_node_zone(drv_node_t *node)
{
    return &node->dag->batch_zone;
}

int drv_node_path(drv_node_t *node, const char *text, drv_record_path_t *out)
{
    drv_path_t path;
    char err[200];
    *out = (drv_record_path_t){0};
    if (!text || drv_path_parse(text, &path, err, sizeof err) != 0) {
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < path.depth && rc == 0; i++) {
        rc = drv_node_string_object(node, path.keys[i], &out->keys[out->depth++]);
    }
    drv_path_free(&path);
    return rc;
}

static bool s_exporter(const drv_node_t *node)
{
    return node->kind->schema->role == DRV_ROLE_EXPORTER;
}

//  Left out of the input being run (drv_dag_positions.c): an exporter that
//  had it before a restart or in a log taken over, one that fell behind (it
//  reads on its own), or, while one catches up, every other.
static bool s_skips(const drv_node_t *node)
{
    const drv_dag_t *dag = node->dag;
    if (!s_exporter(node)) {
        return false;
    }
    bool logged = !dag->generating; // a generated batch is not in the log: nobody had it
    if ((logged && dag->running <= node->delivered_upto) || (dag->feeding && drv_buffer_had(dag->feeding, node->id))) {
        return true;
    }
    return dag->rerun_for >= 0 ? node != &dag->nodes[dag->rerun_for] : node->lag_next > 0;
}

//  While an exporter catches up, the nodes before it run again for it:
//  only the exporter counts what it takes (docs/operations.md, "Exporter
//  queues"). An input another process took, run here, was counted there
//  (drv_dag_counts.c).
static bool s_counts(const drv_node_t *node)
{
    const drv_dag_t *dag = node->dag;
    if (dag->elsewhere || (dag->feeding && (dag->feeding->had || dag->running <= node->counted_upto))) {
        return false;
    }
    return dag->rerun_for < 0 || s_exporter(node);
}

static void s_run(drv_node_t *node, const msgpack_object *records, size_t n)
{
    if (s_skips(node)) {
        return;
    }
    node->in += s_counts(node) ? (int64_t)n : 0;
    if (node->tap == DRV_TAP_INPUT) {
        drv_tap_sample(node, records, n);
    }
    if (node->kind->run) {
        node->kind->run(node, records, n);
    } else {
        drv_node_forward(node, records, n);
    }
}

bool drv_node_probe = false;

void drv_node_ask_peer(drv_node_t *node)
{
    drv_dag_t *dag = node->dag;
    if (dag->client_address.depth == 0 && drv_node_path(node, "resource[\"client.address\"]", &dag->client_address)) {
        dag->client_address.depth = 0; // out of memory: no sender is said
    }
}

void drv_node_put_peer(drv_node_t *node, msgpack_object *records, size_t n, const char *peer, size_t len)
{
    if (!drv_node_wants_peer(node) || !peer || len == 0) {
        return;
    }
    char *text = drv_node_alloc(node, len);
    memcpy(text, peer, len);
    msgpack_object value = {.type = MSGPACK_OBJECT_STR, .via.str = {.ptr = text, .size = (uint32_t)len}};
    for (size_t i = 0; i < n; i++) {
        drv_record_path_set(drv_node_zone(node), &records[i], &node->dag->client_address, &value);
    }
}

bool drv_node_wants_peer(const drv_node_t *node)
{
    return node->dag->client_address.depth > 0; // asked for: the path is made
}

int drv_node_find(const drv_node_t *node, const char *id)
{
    for (size_t i = 0; i < node->dag->count; i++) {
        if (!strcmp(node->dag->nodes[i].id, id)) {
            return (int)i;
        }
    }
    return -1;
}

void drv_node_send(drv_node_t *node, int target, const msgpack_object *records, size_t n)
{
    if (node->tap == DRV_TAP_OUTPUT) {
        drv_tap_sample(node, records, n);
    }
    s_run(&node->dag->nodes[target], records, n);
}

void drv_node_deliver(drv_node_t *node, const msgpack_object *records, size_t n)
{
    s_run(node, records, n);
}

void drv_node_forward(drv_node_t *node, const msgpack_object *records, size_t n)
{
    node->out += s_counts(node) ? (int64_t)n : 0;
    if (node->tap == DRV_TAP_OUTPUT) {
        drv_tap_sample(node, records, n);
    }
    for (size_t i = 0; i < node->to_count; i++) {
        s_run(&node->dag->nodes[node->to[i]], records, n);
    }
}

void drv_node_count_in(drv_node_t *node, size_t n)
{
    node->in += s_counts(node) ? (int64_t)n : 0;
}

void drv_node_count_out(drv_node_t *node, size_t n)
{
    node->out += s_exporter(node) || s_counts(node) ? (int64_t)n : 0; // what exporters deliver always counts
    if (node->failing_since_ms) {
        node->recovered_ms = drv_time_mono_ms();
        node->failing_since_ms = 0;
    }
}

void drv_node_observe(drv_node_t *node, double secs)
{
    drv_histo_observe(&node->duration, secs);
}

void drv_node_count_retry(drv_node_t *node)
{
    node->retries++;
}

void drv_node_count_gave_up(drv_node_t *node, size_t n)
{
    node->dropped += (int64_t)n;
}

void drv_node_count_dropped(drv_node_t *node, size_t n)
{
    node->dropped += s_counts(node) ? (int64_t)n : 0;
}

void drv_node_record_error(drv_node_t *node, const char *what)
{
    node->errors += s_counts(node);
    int64_t now = drv_time_mono_ms();
    if (now - node->last_warn_ms >= 5000) {
        node->last_warn_ms = now;
        drv_warn("record failed node=%s reason=\"%s\"", node->id, what);
    }
}

void drv_node_export_warn(drv_node_t *node, size_t n, const char *what)
{
    int64_t now = drv_time_mono_ms();
    if (node->failing_since_ms == 0) {
        node->failing_since_ms = now;
    }
    node->last_failure_ms = now;
    //  Kept whatever the backend answered: bytes that are not UTF-8 escaped,
    //  cut between characters (the heartbeat carries it as JSON text).
    char *escaped = drv_utf8_escape(what, strlen(what));
    drv_utf8_snprintf(node->last_error, sizeof node->last_error, "%s", escaped ? escaped : "(out of memory)");
    free(escaped);
    if (now - node->last_warn_ms >= 5000) {
        node->last_warn_ms = now;
        drv_warn("export failed node=%s records=%zu reason=\"%s\"", node->id, n, node->last_error);
    }
}

void drv_node_export_error(drv_node_t *node, size_t n, const char *what)
{
    node->errors += (int64_t)n;
    drv_node_export_warn(node, n, what);
}

int drv_node_object(drv_node_t *node, const json_t *value, msgpack_object *obj)
{
    drv_dag_t *self = node->dag;
    char *data;
    size_t size;
    if (drv_mpjson_encode(value, &data, &size) != 0) {
        return -1;
    }
    zlist_append(self->spec_buffers, data);
    size_t offset = 0;
    return msgpack_unpack(data, size, &offset, &self->spec_zone, obj) == MSGPACK_UNPACK_SUCCESS ? 0 : -1;
}

int drv_node_string_object(drv_node_t *node, const char *text, msgpack_object *obj)
{
    json_t *str = json_string(text ? text : "");
    int rc = drv_node_object(node, str, obj);
    json_decref(str);
    return rc;
}

drv_buf_t *drv_node_buffer(drv_node_t *node)
{
    drv_buf_reset(&node->dag->out);
    return &node->dag->out;
}

const drv_dag_identity_t *drv_node_identity(drv_node_t *node)
{
    return &node->dag->who;
}

bool drv_dag_exporters_backlogged(drv_dag_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        drv_node_t *node = &self->nodes[i];
        if (!node->lag_next && node->kind->backlogged && node->kind->backlogged(node)) {
            return true;
        }
    }
    return false;
}

int64_t drv_node_input(const drv_node_t *node)
{
    return node->dag->running;
}

void drv_node_inputs_gave_up(drv_node_t *node, const int64_t *inputs, size_t n)
{
    drv_dag_t *dag = node->dag;
    for (size_t i = 0; i < n; i++) {
        if (inputs[i] <= dag->settled || drv_node_input_gave_up(node, inputs[i])) {
            continue;
        }
        if (dag->gave_up_count == dag->gave_up_cap) {
            size_t cap = dag->gave_up_cap ? dag->gave_up_cap * 2 : 64;
            int64_t *grown = cap <= DRV_NODE_GAVE_UP_MAX ? realloc(dag->gave_up, cap * sizeof *grown) : NULL;
            if (!grown) { // the oldest forgotten: bounded whatever the exporters do
                memmove(dag->gave_up, dag->gave_up + 1, (dag->gave_up_count - 1) * sizeof *dag->gave_up);
                dag->gave_up_count--;
            } else {
                dag->gave_up = grown;
                dag->gave_up_cap = cap;
            }
        }
        dag->gave_up[dag->gave_up_count++] = inputs[i];
    }
}

bool drv_node_input_gave_up(const drv_node_t *node, int64_t input)
{
    const drv_dag_t *dag = node->dag;
    for (size_t i = dag->gave_up_count; i > 0; i--) { // the newest first: a request answered is a recent input
        if (dag->gave_up[i - 1] == input) {
            return true;
        }
    }
    return false;
}

int64_t drv_node_taken(const drv_node_t *node)
{
    return node->dag->input;
}

bool drv_node_buffered(const drv_node_t *node)
{
    return node->dag->buffer != NULL;
}

bool drv_node_logged(const drv_node_t *node)
{
    return node->dag->buffer || node->dag->memory;
}

void drv_node_count_refused(drv_node_t *node)
{
    node->errors++;
}

void drv_dag_pack_records(msgpack_sbuffer *out, const msgpack_object *records, size_t n)
{
    msgpack_sbuffer_clear(out);
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, n);
    for (size_t i = 0; i < n; i++) {
        msgpack_pack_object(&pk, records[i]);
    }
}

void drv_dag_log_input(drv_dag_t *self, drv_node_t *node, drv_buffer_input_t *input, const msgpack_object *records,
                       size_t n, const void *packed, size_t size, const struct iovec *raw, int raw_count)
{
    *input = (drv_buffer_input_t){.node = node->id, .records = (uint32_t)n, .time_ms = self->taken_ms};
    if (raw) {
        input->form = DRV_BUFFER_RAW;
        for (int i = 0; i < raw_count && i < 4; i++) {
            input->parts[input->count++] = raw[i];
        }
        return;
    }
    if (!packed) {
        drv_dag_pack_records(&self->packing, records, n);
        packed = self->packing.data;
        size = self->packing.size;
    }
    input->form = DRV_BUFFER_RECORDS;
    input->parts[input->count++] = (struct iovec){(void *)packed, size};
}
