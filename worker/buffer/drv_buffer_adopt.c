/*  drv_buffer_adopt — logs left behind are taken over (docs/operations.md, disk buffers): an
    instance that drained too slowly on a core a resize removed, a
    generation killed in the middle of a replace, an instance crash-looping
    on a core. Every SCAN_MS an instance looks at its pipeline's slots:
    - another slot of its own core that nobody holds and that holds entries
      (the core is its own: nobody else will come for it) is taken at once;
    - a slot of another core is taken when no slot of that core has been
      held at two scans in a row (no instance has run there for SCAN_MS).
    Taking over copies the log's entries into this instance's own log, a
    slice per loop turn, behind what waits there; the old log is deleted
    once the copies are synced (a crash in between reads some twice: at
    least once). Each copy lists the exporters that had settled it there
    (the slot's positions file), so that they are not given it again. */
#include "drv_buffer_internal.h"

#include "drover/drv_file.h"
#include "drover/drv_log.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCAN_MS 5000
#define COPY_PER_TURN 64

void drv_buffer_quarantine_of(const drv_buffer_t *self, const char *dir, char *out, size_t size)
{
    const char *slot = strrchr(dir, '/');
    snprintf(out, size, "%s/quarantine/%s/%s/%s", self->root, self->group, self->pipeline, slot ? slot + 1 : dir);
}

static bool s_has_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    bool found = false;
    while (d && !found && (e = readdir(d))) {
        size_t len = strlen(e->d_name); // a segment, of either format (docs/operations.md); spares hold nothing
        found = len > 4 && (!strcmp(e->d_name + len - 4, ".wal") || !strcmp(e->d_name + len - 4, ".log")) &&
                strncmp(e->d_name, "spare-", 6) != 0;
    }
    if (d) {
        closedir(d);
    }
    return found;
}

static void s_adopt(drv_buffer_t *self, const char *dir, int lock_fd)
{
    char quarantine[4200], err[400];
    drv_buffer_quarantine_of(self, dir, quarantine, sizeof quarantine);
    drv_wal_t *wal = drv_file_mkdirs(quarantine, err, sizeof err) == 0
                         ? drv_wal_open(dir, quarantine, 1 << 20, err, sizeof err)
                         : NULL;
    if (!wal) {
        drv_warn("disk buffer left behind cannot be taken over dir=%s reason=\"%s\"", dir, err);
        close(lock_fd);
        return;
    }
    if (*drv_wal_notes(wal)) {
        drv_warn("disk buffer: set aside what is no segment dir=%s: %s", dir, drv_wal_notes(wal));
    }
    drv_info("disk buffer left behind taken over dir=%s bytes=%lld into=%s", dir, (long long)drv_wal_bytes(wal),
             self->dir);
    self->adopted = wal;
    self->adopted_lock = lock_fd;
    self->adopted_records = 0;
    self->adopted_positions = drv_buffer_positions_at(drv_wal_dir_fd(wal), dir);
    snprintf(self->adopted_dir, sizeof self->adopted_dir, "%s", dir);
}

static bool s_seen_unheld(const drv_buffer_t *self, const char *name)
{
    for (size_t i = 0; i < self->unheld_count; i++) {
        if (!strcmp(self->unheld[i], name)) {
            return true;
        }
    }
    return false;
}

static void s_scan(drv_buffer_t *self)
{
    DIR *d = opendir(self->pipeline_dir);
    if (!d) {
        return;
    }
    //  First pass: which cores have a slot held (an instance runs there).
    int held_cores[MAX_SLOTS * 4];
    size_t held = 0;
    char unheld[16][64];
    size_t unheld_count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int core, slot;
        char tail;
        if (sscanf(e->d_name, "%d.%d%c", &core, &slot, &tail) != 2 || (core == self->core && slot == self->slot)) {
            continue;
        }
        char dir[4500];
        snprintf(dir, sizeof dir, "%s/%s", self->pipeline_dir, e->d_name);
        int fd = drv_buffer_lock(dir, NULL, 0);
        if (fd == DRV_BUFFER_LOCK_REFUSED) {
            continue; // not a slot (a link, a lock that is no file): never taken over
        }
        if (fd < 0) {
            if (held < sizeof held_cores / sizeof *held_cores) {
                held_cores[held++] = core;
            }
            continue;
        }
        bool entries = s_has_entries(dir);
        if (entries && core == self->core && !self->adopted) {
            s_adopt(self, dir, fd);
            continue;
        }
        close(fd);
        if (entries && core != self->core && unheld_count < 16) {
            snprintf(unheld[unheld_count++], sizeof unheld[0], "%s", e->d_name);
        }
    }
    closedir(d);
    //  Second: a slot of a core where nothing ran at this scan nor the last.
    for (size_t i = 0; i < unheld_count && !self->adopted; i++) {
        int core = atoi(unheld[i]);
        bool live = false;
        for (size_t k = 0; k < held; k++) {
            live |= held_cores[k] == core;
        }
        if (live || !s_seen_unheld(self, unheld[i])) {
            continue;
        }
        char dir[4500];
        snprintf(dir, sizeof dir, "%s/%s", self->pipeline_dir, unheld[i]);
        int fd = drv_buffer_lock(dir, NULL, 0);
        if (fd >= 0) {
            s_adopt(self, dir, fd);
        }
    }
    memcpy(self->unheld, unheld, sizeof unheld);
    self->unheld_count = unheld_count;
}

//  Copies a slice of the log taken over; once it is all copied and synced, deletes it.
static void s_copy(drv_buffer_t *self)
{
    char err[400];
    drv_wal_entry_t entry;
    for (int i = 0; i < COPY_PER_TURN; i++) {
        if (drv_wal_bytes(self->wal) + (int64_t)(64 << 10) > self->policy.max_bytes) {
            return; // full: copy on once space frees
        }
        int rc = drv_wal_next(self->adopted, &entry, err, sizeof err);
        if (rc < 0) {
            drv_warn("disk buffer left behind unreadable dir=%s reason=\"%s\"", self->adopted_dir, err);
            drv_buffer_adopt_abandon(self);
            return;
        }
        if (rc == 0) {
            break;
        }
        if (drv_buffer_append_had(self->wal, &entry, self->adopted_positions, err, sizeof err) < 0) {
            drv_warn("disk buffer cannot take over more dir=%s reason=\"%s\"", self->adopted_dir, err);
            return; // the entry is read again from its log by whoever takes it next
        }
        self->records += entry.records;
        self->replayed += entry.records;
        self->adopted_records += entry.records;
    }
    if (drv_wal_unread(self->adopted)) {
        return;
    }
    if (drv_wal_sync(self->wal, err, sizeof err) != 0) {
        drv_warn("disk buffer not synced dir=%s reason=\"%s\"", self->dir, err);
        return;
    }
    self->durable = drv_wal_last(self->wal);
    self->dirty_since_ms = -1;
    drv_wal_settled(self->adopted, drv_wal_last(self->adopted)); // every segment: all of it is copied
    drv_buffer_positions_forget(drv_wal_dir_fd(self->adopted));
    drv_info("disk buffer taken over dir=%s records=%lld", self->adopted_dir, (long long)self->adopted_records);
    drv_buffer_adopt_abandon(self);
}

void drv_buffer_adopt_tick(drv_buffer_t *self, int64_t now_ms)
{
    if (self->adopted) {
        s_copy(self);
    } else if (now_ms >= self->next_scan_ms) {
        self->next_scan_ms = now_ms + SCAN_MS;
        s_scan(self);
    }
}

void drv_buffer_adopt_abandon(drv_buffer_t *self)
{
    if (self->adopted) {
        drv_wal_close(&self->adopted);
        close(self->adopted_lock);
        self->adopted_lock = -1;
    }
    json_decref(self->adopted_positions);
    self->adopted_positions = NULL;
}
