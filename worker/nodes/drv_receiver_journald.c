/*  receiver:journald — the systemd journal through libsystemd's sd-journal
    (docs/operations.md, "Reading the journal"): each entry a record, body
    from MESSAGE, severity from PRIORITY (OpenTelemetry's syslog mapping),
    time_unix_nano from its realtime, its other fields as attributes
    (drv_journal_entry.h). One
    instance reads: whichever holds the checkpoint's lock (the others try
    again every LOCK_EVERY_MS, a draining generation holds it to its end); the
    checkpoint is the cursor of the last entry whose input is settled, so
    a restart, a replace or a resize reads again only the unsettled ones.
    Entries are read as the pipeline takes them (up to ENTRIES_PER_INPUT
    or INPUT_BYTES an input); one the pipeline refused is read again from the cursor of
    the last taken. */
#include "drv_checkpoint.h"
#include "drv_journal_entry.h"
#include "drv_node.h"
#include "drv_ring.h"
#include "drv_schemas.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <systemd/sd-journal.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define ENTRIES_PER_INPUT 1000
#define SAVE_EVERY_MS 200
#define LOCK_EVERY_MS 250
#define DATA_THRESHOLD (1 << 20) // the largest field read whole
#define INPUT_BYTES (4 << 20)    // an input closes once its entries' values weigh this much (as Kafka's)

typedef struct {
    int64_t input;
    char *cursor;
} pending_t;

typedef struct {
    char dir[4096], name[300]; // the checkpoint's directory and name (journald.NODE)
    const char *directory;     // config.directory, or NULL: the system journal
    json_t *config;
    bool start_at_beginning;
    sd_journal *journal;
    int lock_fd;
    int idle_fd;   // never readable: polled (with the node's timeout) until the journal is open
    char *taken;   // cursor of the last entry taken (NULL: none yet)
    bool at_taken; // the journal stands on it (or before the first to read)
    char *settled; // cursor the checkpoint may say
    bool dirty, more, draining;
    int64_t next_lock_ms, next_save_ms;
    drv_ring_t pending;          // pending_t: inputs not settled, oldest first
    drv_journal_field_t *fields; // the entry being made into a record
    size_t fields_cap;
} journald_t;

static int s_init(drv_node_t *node, const json_t *config, char *err, size_t errlen)
{
    journald_t *self = calloc(1, sizeof *self);
    node->state = self;
    if (!self) {
        snprintf(err, errlen, "node %s: out of memory", node->id);
        return -1;
    }
    self->lock_fd = -1;
    drv_ring_init(&self->pending, sizeof(pending_t));
    self->idle_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    const drv_dag_identity_t *who = drv_node_identity(node);
    self->config = json_incref((json_t *)config);
    self->directory = json_string_value(json_object_get(config, "directory"));
    const char *start_at = json_string_value(json_object_get(config, "start_at"));
    self->start_at_beginning = start_at && !strcmp(start_at, "beginning");
    snprintf(self->name, sizeof self->name, "journald.%s", node->id);
    char why[400];
    if (!who->buffer_dir || drv_checkpoint_dir(who->buffer_dir, who->group, who->pipeline, self->dir, sizeof self->dir,
                                               why, sizeof why) != 0) {
        snprintf(err, errlen, "node %s: checkpoints: %s", node->id,
                 who->buffer_dir ? why : "receiver:journald keeps its cursor under engine.buffer_dir: set it");
        return -1;
    }
    return 0;
}

static void s_destroy(drv_node_t *node)
{
    journald_t *self = node->state;
    if (!self) {
        return;
    }
    if (self->dirty && self->settled) {
        char err[300];
        json_t *doc = json_pack("{s:s}", "cursor", self->settled);
        if (drv_checkpoint_save_name(self->dir, self->name, doc, err, sizeof err) != 0) {
            drv_warn("journal cursor not saved node=%s reason=\"%s\"", node->id, err);
        }
        json_decref(doc);
    }
    for (size_t i = 0; i < self->pending.count; i++) {
        free(((pending_t *)drv_ring_at(&self->pending, i))->cursor);
    }
    drv_ring_fini(&self->pending);
    free(self->fields);
    free(self->taken);
    free(self->settled);
    if (self->journal) {
        sd_journal_close(self->journal);
    }
    if (self->lock_fd >= 0) {
        close(self->lock_fd);
    }
    if (self->idle_fd >= 0) {
        close(self->idle_fd);
    }
    json_decref(self->config);
    free(self);
}

//  ---------------------------------------------------------------- opening

//  The journal opened with the matches, standing before the first entry
//  to read: after the checkpoint's cursor, else at start_at. 0, or -1.
static int s_open(drv_node_t *node, journald_t *self)
{
    int rc = self->directory ? sd_journal_open_directory(&self->journal, self->directory, 0)
                             : sd_journal_open(&self->journal, SD_JOURNAL_LOCAL_ONLY);
    if (rc < 0) {
        drv_warn("journal not opened node=%s directory=%s reason=\"%s\"", node->id,
                 self->directory ? self->directory : "(system)", strerror(-rc));
        self->journal = NULL;
        return -1;
    }
    sd_journal_set_data_threshold(self->journal, DATA_THRESHOLD);
    size_t i;
    json_t *value;
    json_array_foreach(json_object_get(self->config, "units"), i, value)
    {
        char match[600];
        snprintf(match, sizeof match, "_SYSTEMD_UNIT=%s", json_string_value(value));
        sd_journal_add_match(self->journal, match, 0);
    }
    json_array_foreach(json_object_get(self->config, "matches"), i, value)
    {
        sd_journal_add_match(self->journal, json_string_value(value), 0);
    }
    json_t *checkpoint = drv_checkpoint_load_name(self->dir, self->name);
    const char *cursor = json_string_value(json_object_get(checkpoint, "cursor"));
    const char *from;
    if (cursor && sd_journal_seek_cursor(self->journal, cursor) >= 0) {
        self->taken = strdup(cursor);
        self->settled = strdup(cursor);
        from = "its checkpoint";
    } else if (self->start_at_beginning) {
        sd_journal_seek_head(self->journal);
        from = "its beginning";
    } else {
        sd_journal_seek_tail(self->journal);
        char *last = NULL;
        if (sd_journal_previous(self->journal) > 0 && sd_journal_get_cursor(self->journal, &last) >= 0) {
            self->taken = last; // standing on the last, as if taken: only newer ones are read
        }
        from = "its end (start_at: end)";
    }
    json_decref(checkpoint);
    self->at_taken = cursor == NULL;
    drv_info("reading the journal node=%s directory=%s from=\"%s\"", node->id,
             self->directory ? self->directory : "(system)", from);
    uint64_t bytes = 0;
    if (sd_journal_get_usage(self->journal, &bytes) >= 0 && bytes == 0) {
        //  A node without a journal (no systemd-journald, or its files not
        //  mounted into the container) reads nothing: said, not silent.
        drv_warn("no journal files node=%s directory=%s hint=\"%s\"", node->id,
                 self->directory ? self->directory : "(system)",
                 self->directory ? "is the journal mounted there?"
                                 : "mount /var/log/journal and /run/log/journal, or set directory");
    }
    return 0;
}

//  Stands on the last entry taken again (the pipeline refused what came
//  after it): the next read is the one after.
static void s_rewind(journald_t *self)
{
    if (self->taken && sd_journal_seek_cursor(self->journal, self->taken) >= 0) {
        self->at_taken = false;
    } else if (!self->taken) {
        sd_journal_seek_head(self->journal); // nothing taken yet from the beginning
        self->at_taken = true;
    }
}

//  The next entry to read: 1, 0 when none, -1 on error. The entry a
//  cursor was sought to is passed over when it is the one taken.
static int s_next(journald_t *self)
{
    int rc = sd_journal_next(self->journal);
    if (rc > 0 && !self->at_taken) {
        self->at_taken = true;
        if (self->taken && sd_journal_test_cursor(self->journal, self->taken) > 0) {
            rc = sd_journal_next(self->journal);
        }
    }
    return rc;
}

//  ---------------------------------------------------------------- entries into records

//  The entry the journal stands on as a record (drv_journal_entry.h): 0,
//  or -1 out of memory. *bytes: what its values weigh.
static int s_record(drv_node_t *node, journald_t *self, msgpack_object *out, size_t *bytes)
{
    size_t n = 0;
    const void *data;
    size_t len;
    SD_JOURNAL_FOREACH_DATA(self->journal, data, len)
    {
        if (n == self->fields_cap) {
            size_t cap = self->fields_cap ? self->fields_cap * 2 : 64;
            drv_journal_field_t *grown = realloc(self->fields, cap * sizeof *grown);
            if (!grown) {
                return -1;
            }
            self->fields = grown;
            self->fields_cap = cap;
        }
        self->fields[n++] = (drv_journal_field_t){data, len};
    }
    uint64_t usec;
    if (sd_journal_get_realtime_usec(self->journal, &usec) < 0) {
        usec = UINT64_MAX;
    }
    drv_journal_made_t made;
    if (drv_journal_entry_record(self->fields, n, usec, (uint64_t)drv_time_wall_ns(), drv_node_zone(node), out,
                                 &made) != 0) {
        return -1;
    }
    if (made.left_out) {
        drv_node_record_error(node, "a journal entry's fields past 4 MiB were left out");
    }
    *bytes = made.bytes;
    return 0;
}

//  ---------------------------------------------------------------- reading

//  One input of entries: 1 emitted, 0 none to read, -1 refused.
static int s_read(drv_node_t *node, journald_t *self)
{
    msgpack_zone_clear(drv_node_zone(node));
    msgpack_object *records = drv_node_alloc(node, ENTRIES_PER_INPUT * sizeof *records);
    size_t n = 0, bytes = 0;
    char *cursor = NULL;
    while (n < ENTRIES_PER_INPUT && bytes < INPUT_BYTES && s_next(self) > 0) {
        size_t weighs = 0;
        if (s_record(node, self, &records[n], &weighs) != 0) {
            drv_node_record_error(node, "out of memory for a journal entry: left out");
            continue;
        }
        n++;
        bytes += weighs;
    }
    if (n == 0 || sd_journal_get_cursor(self->journal, &cursor) < 0) {
        return 0;
    }
    if (!drv_node_emit_objects(node, records, n)) {
        free(cursor);
        s_rewind(self);
        return -1;
    }
    free(self->taken);
    self->taken = strdup(cursor);
    if (!drv_ring_push(&self->pending, &(pending_t){drv_node_taken(node), cursor})) {
        abort(); // one per input not settled: bounded by what the pipeline takes
    }
    self->more = n == ENTRIES_PER_INPUT || bytes >= INPUT_BYTES;
    return 1;
}

static void s_save_if_due(drv_node_t *node, journald_t *self, int64_t now)
{
    if (!self->dirty || now < self->next_save_ms) {
        return;
    }
    self->next_save_ms = now + SAVE_EVERY_MS;
    char err[300];
    json_t *doc = json_pack("{s:s}", "cursor", self->settled);
    if (drv_checkpoint_save_name(self->dir, self->name, doc, err, sizeof err) != 0) {
        drv_warn("journal cursor not saved node=%s reason=\"%s\"", node->id, err);
    } else {
        self->dirty = false;
    }
    json_decref(doc);
}

static int s_readable(drv_node_t *node)
{
    journald_t *self = node->state;
    int64_t now = drv_time_mono_ms();
    if (self->draining) {
        return 0;
    }
    if (self->lock_fd < 0 && now >= self->next_lock_ms) {
        self->next_lock_ms = now + LOCK_EVERY_MS;
        self->lock_fd = drv_checkpoint_lock_name(self->dir, self->name); // held by a draining generation: later
        if (self->lock_fd >= 0 && s_open(node, self) != 0) {
            close(self->lock_fd);
            self->lock_fd = -1;
            self->next_lock_ms = now + 1000;
        }
    }
    if (!self->journal) {
        return 0;
    }
    sd_journal_process(self->journal);
    int inputs = 0;
    self->more = false;
    while (inputs < 16 && !drv_node_backlogged(node) && s_read(node, self) > 0) {
        inputs++;
    }
    s_save_if_due(node, self, now);
    return inputs;
}

static int s_fd(drv_node_t *node)
{
    journald_t *self = node->state;
    if (self->draining) {
        return -1;
    }
    return self->journal ? sd_journal_get_fd(self->journal) : self->idle_fd;
}

static int64_t s_timeout_ms(drv_node_t *node)
{
    journald_t *self = node->state;
    if (self->draining) {
        return -1;
    }
    if (self->more && !drv_node_backlogged(node)) {
        return 0;
    }
    int64_t now = drv_time_mono_ms();
    if (!self->journal) {
        return self->next_lock_ms > now ? self->next_lock_ms - now : 0;
    }
    //  sd-journal's own timeout (inotify may not be all), at most a poll's worth.
    uint64_t usec;
    int64_t due = 250;
    if (sd_journal_get_timeout(self->journal, &usec) >= 0 && usec != (uint64_t)-1) {
        int64_t wait = ((int64_t)usec - drv_time_mono_us()) / 1000;
        due = wait < due ? (wait < 0 ? 0 : wait) : due;
    }
    if (self->dirty) {
        int64_t save = self->next_save_ms - now;
        due = save < due ? (save < 0 ? 0 : save) : due;
    }
    return due;
}

static void s_settled(drv_node_t *node, int64_t upto)
{
    journald_t *self = node->state;
    pending_t *p;
    while ((p = drv_ring_front(&self->pending)) && p->input <= upto) {
        free(self->settled);
        self->settled = p->cursor;
        self->dirty = true;
        drv_ring_pop(&self->pending);
    }
}

static void s_drain(drv_node_t *node)
{
    journald_t *self = node->state;
    self->draining = true; // what was taken settles; the cursor is saved when the instance ends
}

const drv_node_kind_t drv_receiver_journald = {
    .schema = &drv_schema_receiver_journald,
    .init = s_init,
    .destroy = s_destroy,
    .fd = s_fd,
    .readable = s_readable,
    .timeout_ms = s_timeout_ms,
    .settled = s_settled,
    .drain = s_drain,
    .pauses_when_backlogged = true,
};
