/*  For the unit tests of drv_wal (test_wal.c, test_wal_recovery.c): a log
    in a directory of its own under /tmp, made before each test and removed
    after it, and a byte flipped on disk as a bad sector would. */
#ifndef TEST_WAL_FIXTURE_H
#define TEST_WAL_FIXTURE_H

#include "drv_wal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char s_dir[64];
static char s_quarantine[96];

static inline int wal_setup(void **state)
{
    (void)state;
    snprintf(s_dir, sizeof s_dir, "/tmp/drv-wal-XXXXXX");
    if (!mkdtemp(s_dir)) {
        return -1;
    }
    snprintf(s_quarantine, sizeof s_quarantine, "%s/quarantine", s_dir);
    return 0;
}

static inline int wal_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", s_dir);
    return system(cmd);
}

static inline drv_wal_t *wal_open(size_t segment_bytes)
{
    char err[300];
    drv_wal_t *wal = drv_wal_open(s_dir, s_quarantine, segment_bytes, err, sizeof err);
    if (!wal) {
        fail_msg("open: %s", err);
    }
    return wal;
}

static inline void wal_flip(const char *path, off_t at)
{
    int fd = open(path, O_RDWR);
    char byte;
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 0x40;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    close(fd);
}

#endif
