/*  A disk buffer's log as a crash, a bad disk or a hand could leave it:
    the input is split into an older segment and the newest one (its first
    byte says where; the next two choose the older format's names, a spare,
    a settled mark), the log is opened and read back to the end, a segment
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
    if (size < 3) {
        return 0;
    }
    //  data[0]: where the rest splits into the older segment and the newest;
    //  data[1]: 1 the older format's names (.wal), 2 a spare holding the
    //  older segment's bytes too, 4 a settled mark at data[2], 8 a mark file
    //  made of the input's first bytes.
    uint8_t flags = data[1];
    int64_t mark = data[2];
    const uint8_t *rest = data + 3;
    size_t rest_size = size - 3, split = (size_t)data[0] * rest_size / 255;
    const char *suffix = flags & 1 ? "wal" : "log";
    char name[64];
    snprintf(name, sizeof name, "00000000000000000001.%s", suffix);
    s_write(name, rest, split);
    snprintf(name, sizeof name, "00000000000000000009.%s", suffix);
    s_write(name, rest + split, rest_size - split);
    if (flags & 2) {
        s_write("spare-000003.log", rest, split);
    }
    if (flags & 4) {
        uint8_t slot[28] = "DRVMARK1";
        for (int i = 0; i < 8; i++) {
            slot[8 + i] = (uint8_t)((uint64_t)mark >> (8 * i));
            slot[16 + i] = i == 0;
        }
        uint32_t crc = drv_crc32c(0, slot, 24);
        for (int i = 0; i < 4; i++) {
            slot[24 + i] = (uint8_t)(crc >> (8 * i));
        }
        s_write("settled", slot, sizeof slot);
    } else if (flags & 8) {
        s_write("settled", rest, rest_size < 600 ? rest_size : 600);
    }
    char err[300];
    drv_wal_t *wal = drv_wal_open(s_dir, s_quarantine, 4096, err, sizeof err);
    FUZZ_ASSERT(wal);
    drv_wal_entry_t entry;
    size_t read = 0;
    int rc;
    int64_t before = 0;
    while ((rc = drv_wal_next(wal, &entry, err, sizeof err)) == 1) {
        read += entry.len + 28;
        FUZZ_ASSERT(entry.len <= size && read <= size);
        FUZZ_ASSERT(!(flags & 4) || entry.number > mark); // settled inputs are not read again
        FUZZ_ASSERT(entry.number > before);               // in order
        before = entry.number;
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
    //  One more is appended and read, unless a damaged log's entry took the
    //  last number an entry may have (whole and in order, it is kept): then
    //  the append is refused with an error saying so, never a wrapped number.
    int64_t number = drv_wal_append(wal, 1, 1, more, sizeof more, false, err, sizeof err);
    if (number < 0) {
        FUZZ_ASSERT(last >= INT64_C(1) << 62 && strstr(err, "input numbers used up"));
    } else {
        FUZZ_ASSERT(number == last + 1);
        FUZZ_ASSERT(drv_wal_next(wal, &entry, err, sizeof err) == 1 && entry.number == last + 1);
    }
    drv_wal_drop_oldest_unread(wal);
    drv_wal_settled(wal, last + 1);
    drv_wal_close(&wal);
    return 0;
}
