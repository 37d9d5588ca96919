/*  A disk buffer's log as a crash, a bad disk or a hand could leave it:
    the input is split into an older segment and the newest one (its first
    byte says where), the log is opened and read back to the end, a segment
    dropped, everything settled. Whatever the bytes, it opens (damage is cut
    into quarantine, never a crash), every entry read back is whole, and
    what it reads never exceeds what is on disk. */
#include "fuzz.h"

#include "drv_wal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_dir[64], s_quarantine[96];

//  Empties dir (files only).
static void s_empty(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && strcmp(path, s_quarantine) != 0) {
            unlink(path);
        }
    }
    if (d) {
        closedir(d);
    }
}

static void s_clean(void)
{
    s_empty(s_dir);
    s_empty(s_quarantine);
}

static void s_write(const char *name, const uint8_t *data, size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", s_dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    FUZZ_ASSERT(fd >= 0 && (size == 0 || write(fd, data, size) == (ssize_t)size));
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!s_dir[0]) {
        snprintf(s_dir, sizeof s_dir, "/tmp/drv-fuzz-wal-XXXXXX");
        FUZZ_ASSERT(mkdtemp(s_dir));
        snprintf(s_quarantine, sizeof s_quarantine, "%s/quarantine", s_dir);
    }
    s_clean();
    if (size == 0) {
        return 0;
    }
    size_t split = size > 1 ? (size_t)data[0] * (size - 1) / 255 : 0;
    s_write("00000000000000000001.wal", data + 1, split);
    s_write("00000000000000000009.wal", data + 1 + split, size - 1 - split);
    char err[300];
    drv_wal_t *wal = drv_wal_open(s_dir, s_quarantine, 4096, err, sizeof err);
    FUZZ_ASSERT(wal);
    drv_wal_entry_t entry;
    size_t read = 0;
    int rc;
    while ((rc = drv_wal_next(wal, &entry, err, sizeof err)) == 1) {
        read += entry.len + 28;
        FUZZ_ASSERT(entry.len <= size && read <= size);
        if (entry.len) {
            volatile uint8_t touch = ((const uint8_t *)entry.data)[entry.len - 1]; // whole: ASan checks the end
            (void)touch;
        }
    }
    FUZZ_ASSERT(rc == 0);
    //  Read again from the start by a second reader (an exporter behind): in order, never past what is there.
    drv_wal_reader_t *reader = drv_wal_reader_open(wal, 1);
    int64_t previous = 0;
    while ((rc = drv_wal_reader_next(reader, &entry, err, sizeof err)) == 1) {
        FUZZ_ASSERT(entry.number > previous && entry.len <= size);
        previous = entry.number;
    }
    FUZZ_ASSERT(rc == 0);
    drv_wal_reader_close(&reader);
    int64_t skipped;
    FUZZ_ASSERT(drv_wal_fit_from(wal, 1, 64, &skipped) >= 1 && skipped >= 0);
    FUZZ_ASSERT(drv_wal_bytes_from(wal, 1) >= 0);
    FUZZ_ASSERT(drv_wal_bytes(wal) >= 0);
    int64_t last = drv_wal_last(wal);
    uint8_t more[40] = {0};
    FUZZ_ASSERT(drv_wal_append(wal, 1, 1, more, sizeof more, false, err, sizeof err) == last + 1);
    FUZZ_ASSERT(drv_wal_next(wal, &entry, err, sizeof err) == 1 && entry.number == last + 1);
    drv_wal_drop_oldest_unread(wal);
    drv_wal_settled(wal, last + 1);
    drv_wal_close(&wal);
    return 0;
}
