/*  drv_wal_mark — the settled mark (drv_wal.h): the number up to which every
    input in the log is settled, so that the segment appended to can be kept
    (and written on) when everything in it was exported, instead of being
    deleted and a new one made for the next input (docs/operations.md, disk
    buffers; docs/benchmarks.md, B17).

    The file `settled` in the log's directory, 4096 bytes, holds two slots,
    at 0 and at 512 (each in a sector of its own):
        "DRVMARK1"  u64 settled  u64 seq  u32 CRC32C of the 24 bytes before
    A write goes to the slot the one before did not use, so a torn write
    leaves the other whole; opening takes the whole slot with the higher
    seq. The mark is synced lazily (at most every second, and at close): a
    mark that lost the race with a power cut is older than the truth, which
    costs inputs delivered twice after that crash, never one lost. It never
    says more than the truth: it is written after the settling. */
#include "drv_wal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MARK_FILE_BYTES 4096
#define SLOT_BYTES 28
#define SLOT_AT(seq) (((seq)&1) ? 512 : 0)

static uint64_t s_get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

//  The slot at offset: 1 with settled and seq when it is whole.
static int s_slot(int fd, int64_t offset, int64_t *settled, int64_t *seq)
{
    unsigned char slot[SLOT_BYTES];
    if (drv_wal_pread(fd, slot, sizeof slot, offset) != 1 || memcmp(slot, "DRVMARK1", 8) != 0) {
        return 0;
    }
    uint32_t crc = (uint32_t)slot[24] | (uint32_t)slot[25] << 8 | (uint32_t)slot[26] << 16 | (uint32_t)slot[27] << 24;
    if (drv_crc32c(0, slot, 24) != crc) {
        return 0;
    }
    *settled = (int64_t)s_get64(slot + 8);
    *seq = (int64_t)s_get64(slot + 16);
    return *settled >= 0 && *settled <= DRV_WAL_MAX_NUMBER && *seq >= 0;
}

int drv_wal_mark_open(drv_wal_t *self, char *err, size_t errlen)
{
    struct stat st;
    if (fstatat(self->dir_fd, MARK_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
        drv_wal_set_aside(self, MARK_NAME, "not a regular file");
    }
    int fd = openat(self->dir_fd, MARK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "cannot open %s/%s: %s", self->dir, MARK_NAME,
                 fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    if (st.st_size < MARK_FILE_BYTES) {
        if (ftruncate(fd, MARK_FILE_BYTES) != 0) {
            snprintf(err, errlen, "cannot make %s/%s: %s", self->dir, MARK_NAME, strerror(errno));
            close(fd);
            return -1;
        }
        self->dir_dirty = true;
    }
    self->mark_fd = fd;
    int64_t settled[2] = {0, 0}, seq[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        if (!s_slot(fd, i ? 512 : 0, &settled[i], &seq[i])) {
            seq[i] = -1;
        }
    }
    int newer = seq[1] > seq[0];
    if (seq[newer] >= 0) {
        self->mark = settled[newer];
        self->mark_seq = seq[newer];
    }
    return 0;
}

void drv_wal_mark_write(drv_wal_t *self, int64_t settled)
{
    if (self->mark_fd < 0 || settled <= self->mark) {
        return;
    }
    int64_t seq = self->mark_seq + 1;
    unsigned char slot[SLOT_BYTES];
    memcpy(slot, "DRVMARK1", 8);
    drv_wal_put64(slot + 8, (uint64_t)settled);
    drv_wal_put64(slot + 16, (uint64_t)seq);
    drv_wal_put32(slot + 24, drv_crc32c(0, slot, 24));
    if (pwrite(self->mark_fd, slot, sizeof slot, SLOT_AT(seq)) != (ssize_t)sizeof slot) {
        return; // the mark stays older than the truth: duplicates after a crash, never a loss
    }
    self->mark = settled;
    self->mark_seq = seq;
    self->mark_dirty = true;
    DRV_WAL_STEP("mark written");
}
