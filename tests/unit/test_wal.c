/*  drv_wal, the write-ahead log of an instance's inputs (issue 25), on real
    files: what is appended comes back in order after a reopen; settled
    segments go; a torn tail is cut and the rest replayed; a segment with a
    flipped byte goes to quarantine and what came before the bad entry is
    still replayed; CRC32C is the Castagnoli checksum (RFC 3720's check
    value). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "drv_wal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_dir[64];

static int s_setup(void **state)
{
    (void)state;
    snprintf(s_dir, sizeof s_dir, "/tmp/drv-wal-XXXXXX");
    return mkdtemp(s_dir) ? 0 : -1;
}

static int s_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", s_dir);
    return system(cmd);
}

static drv_wal_t *s_open(size_t segment_bytes, drv_wal_found_t *found)
{
    char err[300];
    drv_wal_t *wal = drv_wal_open(s_dir, segment_bytes, found, err, sizeof err);
    if (!wal) {
        fail_msg("open: %s", err);
    }
    return wal;
}

static void s_append(drv_wal_t *wal, int64_t number)
{
    char payload[64], err[300];
    int len = snprintf(payload, sizeof payload, "input %lld", (long long)number);
    if (drv_wal_append(wal, number, payload, (size_t)len, err, sizeof err) != 0) {
        fail_msg("append: %s", err);
    }
}

//  Replays everything and checks it is inputs first..last in order.
static void s_expect_replay(drv_wal_t *wal, int64_t first, int64_t last)
{
    int64_t want = first, number;
    const void *data;
    size_t len;
    char err[300];
    int rc;
    while ((rc = drv_wal_replay_next(wal, &number, &data, &len, err, sizeof err)) == 1) {
        char expect[64];
        int n = snprintf(expect, sizeof expect, "input %lld", (long long)want);
        assert_int_equal(number, want);
        assert_int_equal(len, (size_t)n);
        assert_memory_equal(data, expect, len);
        want++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(want, last + 1);
}

static int s_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        n += strstr(e->d_name, ".wal") != NULL;
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static void test_crc32c_is_castagnoli(void **state)
{
    (void)state;
    assert_int_equal(drv_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(drv_crc32c(drv_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u); // continued
}

static void test_appended_inputs_replay_in_order_across_segments(void **state)
{
    (void)state;
    drv_wal_found_t found;
    drv_wal_t *wal = s_open(100, &found); // a few entries per segment
    assert_int_equal(found.entries, 0);
    for (int64_t i = 1; i <= 20; i++) {
        s_append(wal, i);
    }
    char err[300];
    assert_int_equal(drv_wal_sync(wal, err, sizeof err), 0);
    assert_false(drv_wal_dirty(wal));
    assert_true(s_files(s_dir) > 3);
    drv_wal_close(&wal);
    wal = s_open(100, &found);
    assert_int_equal(found.entries, 20);
    assert_int_equal(drv_wal_last_found(wal), 20);
    s_expect_replay(wal, 1, 20);
    drv_wal_close(&wal);
}

static void test_settled_segments_are_deleted(void **state)
{
    (void)state;
    drv_wal_found_t found;
    drv_wal_t *wal = s_open(100, &found);
    for (int64_t i = 1; i <= 20; i++) {
        s_append(wal, i);
    }
    char err[300];
    drv_wal_sync(wal, err, sizeof err);
    int64_t before = drv_wal_bytes(wal);
    drv_wal_settled(wal, 10);
    assert_true(drv_wal_bytes(wal) < before);
    drv_wal_close(&wal);
    wal = s_open(100, &found);
    assert_true(found.entries >= 10 && found.entries < 20); // the segment holding 10 and 11 is kept whole
    int64_t first = 20 - found.entries + 1;
    assert_true(first <= 11);
    s_expect_replay(wal, first, 20);
    drv_wal_settled(wal, 20);
    assert_int_equal(drv_wal_bytes(wal), 0);
    assert_int_equal(s_files(s_dir), 0);
    drv_wal_close(&wal);
}

static char *s_only_segment(char *path, size_t cap)
{
    DIR *d = opendir(s_dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strstr(e->d_name, ".wal")) {
            snprintf(path, cap, "%s/%s", s_dir, e->d_name);
        }
    }
    closedir(d);
    return path;
}

static void test_a_torn_tail_is_cut_and_the_rest_replayed(void **state)
{
    (void)state;
    drv_wal_found_t found;
    drv_wal_t *wal = s_open(1 << 20, &found);
    for (int64_t i = 1; i <= 5; i++) {
        s_append(wal, i);
    }
    drv_wal_close(&wal);
    char path[256];
    s_only_segment(path, sizeof path);
    struct stat st;
    stat(path, &st);
    assert_int_equal(truncate(path, st.st_size - 3), 0); // the crash came in the middle of entry 5
    wal = s_open(1 << 20, &found);
    assert_int_equal(found.entries, 4);
    assert_true(found.torn_bytes > 0);
    assert_int_equal(found.quarantined, 0);
    s_expect_replay(wal, 1, 4);
    s_append(wal, 6); // and the log goes on
    drv_wal_close(&wal);
    char quarantine[128];
    snprintf(quarantine, sizeof quarantine, "%s/quarantine", s_dir);
    assert_int_equal(s_files(quarantine), 1); // the cut bytes are kept, not discarded unseen
    wal = s_open(1 << 20, &found);
    assert_int_equal(found.entries, 5);
    assert_int_equal(found.torn_bytes, 0);
    drv_wal_close(&wal);
}

static void test_a_flipped_byte_quarantines_the_segment(void **state)
{
    (void)state;
    drv_wal_found_t found;
    drv_wal_t *wal = s_open(1 << 20, &found);
    for (int64_t i = 1; i <= 5; i++) {
        s_append(wal, i);
    }
    drv_wal_close(&wal);
    char path[256];
    s_only_segment(path, sizeof path);
    int fd = open(path, O_RDWR);
    struct stat st;
    fstat(fd, &st);
    char byte;
    off_t at = st.st_size * 3 / 5 + 20; // in entry 4's payload (its length is at 3/5)
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 0x40;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    close(fd);
    wal = s_open(1 << 20, &found);
    assert_int_equal(found.quarantined, 1);
    assert_int_equal(found.entries, 3);
    s_expect_replay(wal, 1, 3); // what came before the bad entry
    char quarantine[128];
    snprintf(quarantine, sizeof quarantine, "%s/quarantine", s_dir);
    assert_int_equal(s_files(quarantine), 1);
    assert_int_equal(s_files(s_dir), 0);
    drv_wal_close(&wal);
    wal = s_open(1 << 20, &found); // the quarantine is not read again
    assert_int_equal(found.entries, 0);
    drv_wal_close(&wal);
}

static void test_an_older_segment_cut_short_is_quarantined_not_cut(void **state)
{
    (void)state;
    drv_wal_found_t found;
    drv_wal_t *wal = s_open(40, &found); // two entries per segment
    for (int64_t i = 1; i <= 6; i++) {
        s_append(wal, i);
    }
    drv_wal_close(&wal);
    char oldest[256];
    snprintf(oldest, sizeof oldest, "%s/%020d.wal", s_dir, 1);
    struct stat st;
    assert_int_equal(stat(oldest, &st), 0);
    assert_int_equal(truncate(oldest, st.st_size - 5), 0); // no crash does this to a finished segment
    wal = s_open(40, &found);
    assert_int_equal(found.quarantined, 1);
    assert_int_equal(found.torn_bytes, 0);
    //  Entry 1 (before the cut, read from quarantine), then the later segments whole.
    int64_t want[] = {1, 3, 4, 5, 6}, number;
    const void *data;
    size_t len, n = 0;
    char err[300];
    while (drv_wal_replay_next(wal, &number, &data, &len, err, sizeof err) == 1) {
        assert_true(n < 5);
        assert_int_equal(number, want[n++]);
    }
    assert_int_equal(n, 5);
    drv_wal_close(&wal);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_is_castagnoli),
        cmocka_unit_test_setup_teardown(test_appended_inputs_replay_in_order_across_segments, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_settled_segments_are_deleted, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_torn_tail_is_cut_and_the_rest_replayed, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_flipped_byte_quarantines_the_segment, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_an_older_segment_cut_short_is_quarantined_not_cut, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
