/*  drv_buffer — see drv_buffer.h. */
#include "drv_buffer_internal.h"

#include "drover/drv_file.h"
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEGMENT_BYTES_MAX (8 << 20)
#define SEGMENT_BYTES_MIN (64 << 10)

bool drv_buffer_policy(const json_t *spec, int shares, drv_buffer_policy_t *policy)
{
    json_t *buffer = json_object_get(json_object_get(spec, "policies"), "buffer");
    const char *type = json_string_value(json_object_get(buffer, "type"));
    if (!type || strcmp(type, "disk") != 0) {
        return false;
    }
    const char *sync = json_string_value(json_object_get(buffer, "sync"));
    const char *when_full = json_string_value(json_object_get(buffer, "when_full"));
    *policy = (drv_buffer_policy_t){
        .max_bytes = json_integer_value(json_object_get(buffer, "max_bytes")) / (shares > 0 ? shares : 1),
        .drop_oldest = when_full && !strcmp(when_full, "drop_oldest"),
        .sync = !sync || !strcmp(sync, "batch") ? DRV_BUFFER_SYNC_BATCH
                : !strcmp(sync, "always")       ? DRV_BUFFER_SYNC_ALWAYS
                                                : DRV_BUFFER_SYNC_NONE,
        .sync_interval_ms = json_integer_value(json_object_get(buffer, "sync_interval_ms")),
    };
    if (policy->sync_interval_ms <= 0) {
        policy->sync_interval_ms = 50;
    }
    return true;
}

//  The first slot of the core that nobody holds: its directory in
//  self->dir, its lock held in self->lock_fd. A slot that is not what a
//  slot should be is passed over (said once in the log), never followed.
static int s_take_slot(drv_buffer_t *self, char *err, size_t errlen)
{
    char refused[600] = "";
    for (int k = 0; k < MAX_SLOTS; k++) {
        snprintf(self->dir, sizeof self->dir, "%s/%d.%d", self->pipeline_dir, self->core, k);
        if (drv_file_mkdirs(self->dir, err, errlen) != 0) {
            return -1;
        }
        self->lock_fd = drv_buffer_lock(self->dir, err, errlen);
        if (self->lock_fd >= 0) {
            self->slot = k;
            return 0;
        }
        if (self->lock_fd == DRV_BUFFER_LOCK_REFUSED) {
            drv_warn("disk buffer: %s; trying the next slot", err);
            snprintf(refused, sizeof refused, " (%s)", err);
        }
    }
    snprintf(err, errlen, "every one of %d buffer slots of core %d under %s is held or refused%s", MAX_SLOTS,
             self->core, self->pipeline_dir, refused);
    return -1;
}

//  Damaged bytes cut off without a copy in quarantine (no room for one):
//  said once for each time it grows, never a reason not to go on.
static void s_tell_unkept(drv_buffer_t *self, drv_wal_damage_t damage)
{
    if (damage.unkept_bytes > self->unkept_told) {
        self->unkept_told = damage.unkept_bytes;
        drv_warn("disk buffer damaged dir=%s unkept_bytes=%lld: no room in quarantine for a copy of the damaged "
                 "part; it was cut off and counted, the rest is replayed",
                 self->dir, (long long)damage.unkept_bytes);
    }
}

drv_buffer_t *drv_buffer_open(const char *root, const char *group, const char *pipeline, int core,
                              const drv_buffer_policy_t *policy, char *err, size_t errlen)
{
    drv_buffer_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    self->policy = *policy;
    self->lock_fd = self->adopted_lock = -1;
    self->dirty_since_ms = -1;
    self->core = core;
    snprintf(self->root, sizeof self->root, "%s", root);
    snprintf(self->group, sizeof self->group, "%s", group && *group ? group : "_");
    snprintf(self->pipeline, sizeof self->pipeline, "%s", pipeline);
    snprintf(self->pipeline_dir, sizeof self->pipeline_dir, "%s/%s/%s", root, self->group, pipeline);
    if (s_take_slot(self, err, errlen) != 0) {
        drv_buffer_close(&self);
        return NULL;
    }
    char quarantine[4200];
    drv_buffer_quarantine_of(self, self->dir, quarantine, sizeof quarantine);
    int64_t segment = policy->max_bytes / 16;
    segment = segment > SEGMENT_BYTES_MAX   ? SEGMENT_BYTES_MAX
              : segment < SEGMENT_BYTES_MIN ? SEGMENT_BYTES_MIN
                                            : segment;
    if (drv_file_mkdirs(quarantine, err, errlen) != 0) { // damage is then cut and counted, not kept
        drv_warn("disk buffer: quarantine unavailable dir=%s reason=\"%s\"", quarantine, err);
    }
    if (!(self->wal = drv_wal_open(self->dir, quarantine, (size_t)segment, err, errlen))) {
        drv_buffer_close(&self);
        return NULL;
    }
    if (*drv_wal_notes(self->wal)) {
        drv_warn("disk buffer: set aside what is no segment dir=%s: %s", self->dir, drv_wal_notes(self->wal));
    }
    if (drv_buffer_syncer_start(self, err, errlen) != 0) {
        drv_buffer_close(&self);
        return NULL;
    }
    if (policy->sync == DRV_BUFFER_SYNC_NONE) {
        drv_wal_never_synced(self->wal);
    }
    self->found_last = self->durable = drv_wal_last(self->wal);
    self->records = drv_wal_found_records(self->wal);
    drv_wal_damage_t damage = drv_wal_damage(self->wal);
    if (drv_wal_unread(self->wal) || damage.torn_bytes) {
        drv_info("disk buffer found dir=%s bytes=%lld last_input=%lld torn_bytes=%lld", self->dir,
                 (long long)drv_wal_bytes(self->wal), (long long)self->found_last, (long long)damage.torn_bytes);
    }
    s_tell_unkept(self, damage);
    return self;
}

void drv_buffer_close(drv_buffer_t **self_p)
{
    drv_buffer_t *self = *self_p;
    if (!self) {
        return;
    }
    *self_p = NULL;
    drv_buffer_adopt_abandon(self);
    drv_buffer_syncer_stop(self);
    if (self->wal) {
        char err[300];
        if (drv_wal_sync(self->wal, err, sizeof err) != 0) {
            drv_warn("disk buffer not synced at close reason=\"%s\"", err);
        }
        if (drv_wal_bytes(self->wal) > 0) {
            drv_info("disk buffer kept dir=%s bytes=%lld", self->dir, (long long)drv_wal_bytes(self->wal));
        }
        drv_wal_close(&self->wal);
    }
    if (self->lock_fd >= 0) {
        close(self->lock_fd);
    }
    free(self->fed);
    free(self);
}

const char *drv_buffer_dir(const drv_buffer_t *self)
{
    return self->dir;
}

int64_t drv_buffer_last(const drv_buffer_t *self)
{
    return drv_wal_last(self->wal);
}

//  ---------------------------------------------------------------- taking input

static void s_fed(drv_buffer_t *self, int64_t number, int64_t time_ms, uint32_t records)
{
    if (self->fed_count == self->fed_cap) {
        size_t cap = self->fed_cap ? self->fed_cap * 2 : 64;
        fed_t *grown = malloc(cap * sizeof *grown);
        if (!grown) {
            abort(); // a few bytes per input in flight, bounded by the exporters' backlog
        }
        for (size_t i = 0; i < self->fed_count; i++) {
            grown[i] = self->fed[(self->fed_head + i) % self->fed_cap];
        }
        free(self->fed);
        self->fed = grown;
        self->fed_cap = cap;
        self->fed_head = 0;
    }
    self->fed[(self->fed_head + self->fed_count++) % self->fed_cap] = (fed_t){number, time_ms, records};
}

//  when_full: drop_oldest: the oldest segment nothing was read from goes,
//  its records counted as dropped. False when there is none such.
static bool s_drop_oldest(drv_buffer_t *self)
{
    int64_t records = drv_wal_drop_oldest_unread(self->wal);
    if (records < 0) {
        return false;
    }
    self->dropped += records;
    self->records -= records;
    int64_t now = drv_time_mono_ms();
    if (now - self->dropped_warned_ms >= 5000) {
        self->dropped_warned_ms = now;
        drv_warn("disk buffer full: oldest records dropped dir=%s dropped_total=%lld", self->dir,
                 (long long)self->dropped);
    }
    return true;
}

int64_t drv_buffer_append(drv_buffer_t *self, const drv_buffer_input_t *input, bool feed_now, char *err, size_t errlen)
{
    unsigned char head[258]; // the id and the form: no list
    size_t len = drv_buffer_head(head, input, NULL, 0);
    struct iovec pieces[1 + 4] = {{head, len}};
    for (int i = 0; i < input->count && i < 4; i++) {
        pieces[1 + i] = input->parts[i];
        len += input->parts[i].iov_len;
    }
    int count = 1 + (input->count < 4 ? input->count : 4);
    while (self->policy.drop_oldest && drv_wal_bytes(self->wal) + (int64_t)len > self->policy.max_bytes &&
           s_drop_oldest(self)) {
    }
    if (drv_wal_bytes(self->wal) + (int64_t)len > self->policy.max_bytes) {
        snprintf(err, errlen, "the disk buffer is full (%lld of max_bytes %lld)", (long long)drv_wal_bytes(self->wal),
                 (long long)self->policy.max_bytes);
        return DRV_BUFFER_FULL;
    }
    int64_t now = input->time_ms > 0 ? input->time_ms : drv_time_wall_ms();
    int64_t number = drv_wal_appendv(self->wal, now, input->records, pieces, count, feed_now, err, errlen);
    if (number < 0 && self->policy.drop_oldest && s_drop_oldest(self)) { // the disk is full: make room
        number = drv_wal_appendv(self->wal, now, input->records, pieces, count, feed_now, err, errlen);
    }
    if (number < 0) {
        self->refused = true;
        self->refused_at_bytes = drv_wal_bytes(self->wal);
        self->refused_ms = drv_time_mono_ms();
        return -1;
    }
    self->records += input->records;
    if (feed_now) {
        s_fed(self, number, now, input->records);
    }
    if (self->policy.sync == DRV_BUFFER_SYNC_NONE) {
        self->durable = number; // the page cache has it: a killed process loses nothing, a power cut may
    } else if (self->dirty_since_ms < 0) {
        self->dirty_since_ms = drv_time_mono_ms();
    }
    return number;
}

int drv_buffer_next(drv_buffer_t *self, drv_buffer_input_t *input, char *err, size_t errlen)
{
    drv_wal_entry_t entry;
    for (;;) {
        int rc = drv_wal_next(self->wal, &entry, err, errlen);
        drv_wal_damage_t damage = drv_wal_damage(self->wal);
        s_tell_unkept(self, damage);
        if (damage.corrupt_segments > self->corrupt_told) {
            self->corrupt_told = damage.corrupt_segments;
            self->records -= damage.corrupt_records - self->corrupt_records_told; // never to be read
            self->corrupt_records_told = damage.corrupt_records;
            drv_warn("disk buffer damaged dir=%s corrupt_segments=%lld corrupt_bytes=%lld: the damaged part is kept "
                     "in quarantine, the rest is replayed",
                     self->dir, (long long)damage.corrupt_segments, (long long)damage.corrupt_bytes);
        }
        if (rc <= 0) {
            return rc;
        }
        if (!drv_buffer_input_of(&entry, self->node, input)) {
            continue; // checked but not ours: cannot happen short of a bug; skipped
        }
        if (entry.number <= self->found_last) {
            self->replayed += entry.records; // counted in records at open
        }
        s_fed(self, entry.number, entry.time_ms, entry.records);
        input->replayed = entry.number <= self->found_last;
        return 1;
    }
}

bool drv_buffer_unread(const drv_buffer_t *self)
{
    return drv_wal_unread(self->wal);
}

bool drv_buffer_full(const drv_buffer_t *self)
{
    if (self->policy.drop_oldest) {
        return self->refused; // it makes room as input comes
    }
    //  An input smaller than 1/64 of the share is still taken when space is that tight.
    return self->refused || drv_wal_bytes(self->wal) >= self->policy.max_bytes - self->policy.max_bytes / 64;
}

//  ---------------------------------------------------------------- settling

void drv_buffer_settled(drv_buffer_t *self, int64_t upto)
{
    while (self->fed_count > 0 && self->fed[self->fed_head].number <= upto) {
        self->records -= self->fed[self->fed_head].records;
        self->fed_head = (self->fed_head + 1) % self->fed_cap;
        self->fed_count--;
    }
    if (upto > self->settled) {
        self->settled = upto;
    }
    drv_wal_settled(self->wal, self->settled);
    if (self->refused &&
        (drv_wal_bytes(self->wal) < self->refused_at_bytes || drv_time_mono_ms() - self->refused_ms >= 1000)) {
        self->refused = false; // segments went (or space may have freed elsewhere): try the disk again
    }
}

bool drv_buffer_empty(const drv_buffer_t *self)
{
    return self->fed_count == 0 && !drv_wal_unread(self->wal);
}

void drv_buffer_stats(drv_buffer_t *self, drv_buffer_stats_t *stats)
{
    drv_wal_damage_t damage = drv_wal_damage(self->wal);
    int64_t oldest = self->fed_count > 0 ? self->fed[self->fed_head].time_ms : drv_wal_unread_since(self->wal);
    *stats = (drv_buffer_stats_t){.bytes = drv_wal_bytes(self->wal),
                                  .records = self->records,
                                  .oldest_ms = oldest,
                                  .replayed = self->replayed,
                                  .dropped = self->dropped,
                                  .corrupt_segments = damage.corrupt_segments,
                                  .torn_bytes = damage.torn_bytes,
                                  .unkept_bytes = damage.unkept_bytes,
                                  .odd_files = damage.odd_files};
}
